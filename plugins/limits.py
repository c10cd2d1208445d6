"""SQLite limits on every connection the server opens, so no single step of a query outlives the time
limit and no answer outgrows a bound.

Datasette stops a query after `sql_time_limit_ms` with SQLite's progress
handler, which runs between virtual-machine steps. One step can take far longer:
`randomblob(1000000000)` builds a gigabyte in one step (85 s measured), `zeroblob`,
`printf('%.*c', ...)`, `replace()` and `group_concat` grow a string as large as SQLite
allows (a billion bytes by default), and a LIKE or GLOB pattern is matched in one step.
The limits below bound each of those well under the time limit, and leave
what the knowledge base needs: its longest text is 20,000 characters, its
SQL a few kilobytes.

Some built-in functions compare two strings in one step, at a cost of the
product of their lengths (`instr`, `replace` and two-argument `trim` scan their
pattern at every position): two strings at the length limit took 7.5 s a call.
They are replaced by versions of the same meaning that take time linear in
their arguments. And every query's answer is bounded in bytes (its rows times
their size): a row factory counts what a query returns and stops it past
MAX_ANSWER_BYTES, before Datasette holds or encodes it.
"""

import re
import sqlite3
import threading
import weakref

from datasette import hookimpl

from serving.sql_functions import quiet_callbacks, reported

LIMITS = {
    # A string or blob (so any one value a step builds), and a row that is sorted or stored: five times the
    # longest text a data file may hold (20,000 characters of up to 4 bytes), far below SQLite's billion.
    sqlite3.SQLITE_LIMIT_LENGTH: 100_000,
    # Columns of a table or a result: the widest table has under 40.
    sqlite3.SQLITE_LIMIT_COLUMN: 128,
    # An SQL statement: canned queries are under 5 KB; the request URL is bounded before this.
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: 100_000,
    # LIKE and GLOB patterns: matching cost grows with pattern times text in one step.
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 200,
    # No ATTACH: a query sees only the database it was sent to.
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
    # Parsing and planning costs, bounded far above any real query.
    sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 100,
    sqlite3.SQLITE_LIMIT_COMPOUND_SELECT: 50,
    sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER: 100,  # on the server, a page's worth more: variables_limit
    # No helper threads for sorting: a query uses the one SQL thread it runs on.
    sqlite3.SQLITE_LIMIT_WORKER_THREADS: 0,
}


MAX_WIDTH = LIMITS[sqlite3.SQLITE_LIMIT_LENGTH]
WIDTHS = re.compile(r"%[-+ 0#,!]*([0-9]*)(?:\.([0-9]*))?")
local = threading.local()


def builtin(name, *args):
    """SQLite's own function `name`, on a private in-memory connection of this thread (its SQL functions are SQLite's)."""
    if not hasattr(local, "conn"):
        local.conn = sqlite3.connect(":memory:")
        apply_limits(local.conn)
    placeholders = ", ".join("?" * len(args))
    return local.conn.execute(f"SELECT {name}({placeholders})", args).fetchone()[0]


def bounded_printf(format_text, *args):
    """printf (and format) refusing a width or precision over the length limit.

    SQLite's printf pads a `%.*c` of a billion characters in one step (14 s
    measured) before it finds the result too long; the limit cannot stop it.
    """
    if not isinstance(format_text, str):
        return builtin("printf", format_text, *args)
    written = [int(n) for match in WIDTHS.finditer(format_text) for n in match.groups() if n]
    starred = [a for a in args if isinstance(a, (int, float))] if "*" in format_text else []
    if any(abs(n) > MAX_WIDTH for n in written + starred):
        raise ValueError(f"printf width or precision over {MAX_WIDTH:,}")
    return builtin("printf", format_text, *args)


def as_texts(*args):
    """The arguments as str when each is text or a blob (blobs read as UTF-8, as SQLite reads them as text);
    None when one is a number or NULL, which SQLite's own function handles in a step bounded by the number."""
    if not all(isinstance(a, (str, bytes)) for a in args):
        return None
    return [a.decode("utf-8", "replace") if isinstance(a, bytes) else a for a in args]


def linear_instr(haystack, needle):
    """instr(X, Y): Python's search is linear in X and Y, SQLite's compares Y at every position of X."""
    if isinstance(haystack, bytes) and isinstance(needle, bytes):
        return haystack.find(needle) + 1
    texts = as_texts(haystack, needle)
    return builtin("instr", haystack, needle) if texts is None else texts[0].find(texts[1]) + 1


def linear_replace(text, old, new):
    """replace(X, Y, Z) in linear time, refusing a result over the length limit before building it."""
    texts = as_texts(text, old, new)
    if texts is None:
        return builtin("replace", text, old, new)
    text, old, new = texts
    if not old:
        return text  # SQLite's rule: an empty Y leaves X as it is
    if len(text) + text.count(old) * (len(new) - len(old)) > MAX_WIDTH:
        raise ValueError(f"replace() would build a string over {MAX_WIDTH:,} characters")
    return text.replace(old, new)


def linear_trim(side):
    """trim/ltrim/rtrim(X, Y): each character of X looked up in the set of Y's, not searched for along Y."""
    def trimmed(text, characters):
        texts = as_texts(text, characters)
        if texts is None:
            return builtin(side, text, characters)
        text, present = texts[0], set(texts[1])
        start, end = 0, len(text)
        if side in ("trim", "ltrim"):
            while start < end and text[start] in present:
                start += 1
        if side in ("trim", "rtrim"):
            while end > start and text[end - 1] in present:
                end -= 1
        return text[start:end]
    return trimmed


# What one query may return, counted as the length of its text and blob values (8 bytes for any
# other value): the biggest page of the knowledge base, 1,000 articles, is about 1 MB.
MAX_ANSWER_BYTES = 10_000_000
spent: "weakref.WeakKeyDictionary[sqlite3.Cursor, int]" = weakref.WeakKeyDictionary()


class AnswerTooLarge(sqlite3.OperationalError):
    """A query whose rows add up to more than MAX_ANSWER_BYTES: reported as the query's error (a 400)."""


def bounded_row(cursor, values):
    """Datasette's row (sqlite3.Row), counting the bytes each cursor has returned."""
    total = spent.get(cursor, 0) + sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in values)
    if total > MAX_ANSWER_BYTES:
        raise AnswerTooLarge(f"the answer is over {MAX_ANSWER_BYTES:,} bytes, the limit of one answer: "
                             "select fewer rows or shorter values")
    spent[cursor] = total
    return sqlite3.Row(cursor, values)


def apply_limits(conn):
    for limit, value in LIMITS.items():
        conn.setlimit(limit, value)


LINEAR = {("instr", 2): linear_instr, ("replace", 3): linear_replace,
          **{(side, 2): linear_trim(side) for side in ("trim", "ltrim", "rtrim")}}


def variables_limit(datasette) -> int:
    """Bound variables of one statement: a page's labels of a foreign key are looked up with one variable
    per distinct value shown (`?_size=max`: up to max_returned_rows), and filters add a few."""
    return datasette.setting("max_returned_rows") + LIMITS[sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER]


@hookimpl
def prepare_connection(conn, datasette):
    apply_limits(conn)
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, variables_limit(datasette))
    quiet_callbacks()
    for name in ("printf", "format"):
        conn.create_function(name, -1, reported(bounded_printf, name), deterministic=True)
    for (name, arguments), function in LINEAR.items():
        conn.create_function(name, arguments, reported(function, name), deterministic=True)
    # Datasette sets sqlite3.Row just before this hook; the same rows, counted.
    conn.row_factory = bounded_row
