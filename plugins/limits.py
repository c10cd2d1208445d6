"""SQLite limits on every connection the server opens, so no single step of a query outlives the time limit.

Datasette stops a query after `sql_time_limit_ms` with SQLite's progress
handler, which runs between virtual-machine steps. One step can take far longer:
`randomblob(1000000000)` builds a gigabyte in one step (85 s measured), `zeroblob`,
`printf('%.*c', ...)`, `replace()` and `group_concat` grow a string as large as SQLite
allows (a billion bytes by default), and a LIKE or GLOB pattern is matched in one step.
The limits below bound each of those well under the time limit, and leave
what the knowledge base needs: its longest text is 20,000 characters, its
SQL a few kilobytes.
"""

import re
import sqlite3
import threading

from datasette import hookimpl

LIMITS = {
    # A string or blob (so any one value a step builds): 1 MB takes milliseconds.
    sqlite3.SQLITE_LIMIT_LENGTH: 1_000_000,
    # An SQL statement: canned queries are under 5 KB; the request URL is bounded before this.
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: 100_000,
    # LIKE and GLOB patterns: matching cost grows with pattern times text in one step.
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 200,
    # No ATTACH: a query sees only the database it was sent to.
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
    # Parsing and planning costs, bounded far above any real query.
    sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 100,
    sqlite3.SQLITE_LIMIT_COMPOUND_SELECT: 50,
    sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER: 100,
    # No helper threads for sorting: a query uses the one SQL thread it runs on.
    sqlite3.SQLITE_LIMIT_WORKER_THREADS: 0,
}


MAX_WIDTH = LIMITS[sqlite3.SQLITE_LIMIT_LENGTH]
WIDTHS = re.compile(r"%[-+ 0#,!]*([0-9]*)(?:\.([0-9]*))?")
local = threading.local()


def builtin_printf(format_text, *args):
    """SQLite's own printf, on a private in-memory connection of this thread (its SQL functions are SQLite's)."""
    if not hasattr(local, "conn"):
        local.conn = sqlite3.connect(":memory:")
        apply_limits(local.conn)
    placeholders = ", ".join("?" * (len(args) + 1))
    return local.conn.execute(f"SELECT printf({placeholders})", (format_text, *args)).fetchone()[0]


def bounded_printf(format_text, *args):
    """printf (and format) refusing a width or precision over the length limit.

    SQLite's printf pads a `%.*c` of a billion characters in one step (14 s
    measured) before it finds the result too long; the limit cannot stop it.
    """
    if not isinstance(format_text, str):
        return builtin_printf(format_text, *args)
    written = [int(n) for match in WIDTHS.finditer(format_text) for n in match.groups() if n]
    starred = [a for a in args if isinstance(a, (int, float))] if "*" in format_text else []
    if any(abs(n) > MAX_WIDTH for n in written + starred):
        raise ValueError(f"printf width or precision over {MAX_WIDTH:,}")
    return builtin_printf(format_text, *args)


def apply_limits(conn):
    for limit, value in LIMITS.items():
        conn.setlimit(limit, value)


@hookimpl
def prepare_connection(conn):
    apply_limits(conn)
    for name in ("printf", "format"):
        conn.create_function(name, -1, bounded_printf, deterministic=True)
