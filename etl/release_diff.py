"""The values added, changed and removed between two data releases: what an author who
cited the older release needs to know before citing the newer one.

Rows are matched by slug, table by table (every table of etl/schema.py that has
one, the citations included: a value whose source changed is a change); each
difference is one line, slug, field, old value → new value. A row added or
removed lists each of its values, from or to "(none)". The build writes the list
next to the database whenever the data release changes (`changes_path`), so
every release carries its changes since the one it replaced.
"""

import re
import sqlite3
import stat
from contextlib import closing
from pathlib import Path
from typing import NamedTuple

from domain.schema import GENERATED, TABLES

NONE = "(none)"


class Change(NamedTuple):
    table: str
    slug: str
    row: str       # added, changed or removed: what became of the row
    field: str
    old: object
    new: object


def changes_path(db_path) -> Path:
    """Where the build writes the changes of the release at `db_path`: `computekb.db` -> `computekb.changes.txt`."""
    db_path = Path(db_path)
    return db_path.with_name(f"{db_path.stem}.changes.txt")


def read_rows(conn, table) -> dict[str, dict]:
    """{slug: {column: value}} of `table`, or {} when the database has no such table."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone():
        return {}
    cursor = conn.execute(f'SELECT * FROM "{table}"')
    names = [d[0] for d in cursor.description]
    return {row["slug"]: row for row in (dict(zip(names, values)) for values in cursor)}


def release_of(conn) -> str | None:
    try:
        return conn.execute("SELECT data_release FROM release").fetchone()[0]
    except (sqlite3.Error, TypeError):
        return None


def table_changes(table, old: dict[str, dict], new: dict[str, dict]):
    """The Changes of one table, by slug then field (in the table's column order)."""
    for slug in sorted(old.keys() | new.keys()):
        before, after = old.get(slug, {}), new.get(slug, {})
        row = "added" if not before else "removed" if not after else "changed"
        fields = list(after) + [f for f in before if f not in after]
        for field in fields:
            if field != "slug" and before.get(field) != after.get(field):
                yield Change(table, slug, row, field, before.get(field), after.get(field))


class ReleaseDiff(NamedTuple):
    old_release: str | None
    new_release: str | None
    changes: list[Change]


class NotARelease(Exception):
    """A file given as a release that is not one a build wrote: named, with why."""

    def __init__(self, path, why):
        super().__init__(f"{path}: {why}: not a computekb release (a database `computekb build` wrote)")


RELEASE_NAME = re.compile(r"[0-9a-f]{12}")
SQLITE_HEADER = b"SQLite format 3\x00"


def file_problem(path: Path) -> str | None:
    """Why the file at `path` cannot hold a database: missing, not a regular file, empty, not SQLite."""
    if not path.exists():
        return "no such file"
    if not stat.S_ISREG(path.stat().st_mode):
        return "not a regular file"
    with path.open("rb") as file:
        header = file.read(len(SQLITE_HEADER))
    if not header:
        return "an empty file"
    return None if header == SQLITE_HEADER else "not an SQLite database"


# Tables every release has had; a table added later is read as empty in an older release.
CORE_TABLES = ("release", "accelerators", "sources", "citations")


def release_problem(conn) -> str | None:
    """Why an SQLite database is not a release: damaged, without the tables every release has, or
    without a data release named in its release table."""
    try:
        if (check := conn.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
            return f"a damaged database ({check})"
        present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if missing := [name for name in CORE_TABLES if name not in present]:
            return f"no table {', '.join(missing)}"
        release = release_of(conn)
    except sqlite3.DatabaseError as error:
        return f"a damaged database ({error})"
    return None if isinstance(release, str) and RELEASE_NAME.fullmatch(release) else "no data release named in it"


def opened_release(path):
    """A read-only connection to the release at `path`, or NotARelease."""
    path = Path(path)
    if why := file_problem(path):
        raise NotARelease(path, why)
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    if why := release_problem(conn):
        conn.close()
        raise NotARelease(path, why)
    return closing(conn)


def release_diff(old_db, new_db) -> ReleaseDiff:
    """Every value that differs between the releases at `old_db` and `new_db` (opened read-only);
    NotARelease for a file that is not one."""
    with opened_release(old_db) as old, opened_release(new_db) as new:
        changes = [change for table in TABLES + GENERATED if any(f.name == "slug" for f in table.columns)
                   for change in table_changes(table.name, read_rows(old, table.name), read_rows(new, table.name))]
        return ReleaseDiff(release_of(old), release_of(new), changes)


def shown(value) -> str:
    if value is None:
        return NONE
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def format_diff(diff: ReleaseDiff) -> str:
    """The diff as text: a heading, then per table its rows added, changed and removed and one line per value."""
    lines = [f"Changes from data release {diff.old_release} to {diff.new_release}"]
    if not diff.changes:
        lines.append("No value changed.")
    for table in dict.fromkeys(c.table for c in diff.changes):
        changes = [c for c in diff.changes if c.table == table]
        rows = {c.slug: c.row for c in changes}
        summary = ", ".join(f"{list(rows.values()).count(kind)} {kind}" for kind in ("added", "changed", "removed")
                            if kind in rows.values())
        lines += ["", f"{table} (rows {summary})"]
        lines += [f"  {c.slug}  {c.field}: {shown(c.old)} → {shown(c.new)}" for c in changes]
    return "\n".join(lines) + "\n"
