"""The values added, changed and removed between two data releases: what an author who
cited the older release needs to know before citing the newer one.

Rows are matched by slug, table by table (every table of etl/schema.py that has
one, the citations included: a value whose source changed is a change); each
difference is one line, slug, field, old value → new value. A row added or
removed lists each of its values, from or to "(none)". The build writes the list
next to the database whenever the data release changes (`changes_path`), so
every release carries its changes since the one it replaced.
"""

import sqlite3
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


def release_diff(old_db, new_db) -> ReleaseDiff:
    """Every value that differs between the databases at `old_db` and `new_db` (opened read-only)."""
    def connect(path):
        return closing(sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True))

    with connect(old_db) as old, connect(new_db) as new:
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
