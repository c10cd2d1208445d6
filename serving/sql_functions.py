"""Python functions as SQL functions: NULL in gives NULL out, every argument count registered.

A nonsensical argument raises ValueError, which sqlite reports as a query
error: Datasette answers it with HTTP 400. SQLite's own text for it is only
"user-defined function raised exception", so each function's refusal is kept,
on the thread that ran it, for `refusal_of` to name (plugins/failed_queries.py
puts it in the answer). A refusal is expected and printed nowhere; any other
exception of a function is a bug, logged with its traceback, once.
"""

import functools
import inspect
import logging
import sqlite3
import threading
import time

log = logging.getLogger("computekb.sql_functions")
local = threading.local()


def nullable(fn):
    """NULL in any argument gives NULL: an unknown figure makes an unknown answer."""
    @functools.wraps(fn)
    def wrapper(*args):
        if any(arg is None for arg in args):
            return None
        return fn(*args)
    return wrapper


def reported(fn, name=None):
    """`fn` as the SQL function `name` (its own by default): its refusal (ValueError) kept for
    `refusal_of`, any other error logged."""
    name = name or fn.__name__

    @functools.wraps(fn)
    def wrapper(*args):
        try:
            return fn(*args)
        except ValueError as error:
            local.refusal = f"{name}(): {error}"
            raise
        except Exception:
            log.exception("SQL function %s failed", name)
            raise
    return wrapper


def quiet_callbacks():
    """No traceback printed by sqlite3 for an exception of a function (Datasette turns them on): a refusal
    is expected, and `reported` logs every other one itself."""
    sqlite3.enable_callback_tracebacks(False)


def refusal_of(conn: sqlite3.Connection, sql: str, params, seconds: float) -> str | None:
    """What stops `sql` on `conn` within `seconds`, asked on the calling thread: a function's refusal,
    else SQLite's own message; None when it runs. (SQLite's answer to a function's exception names no
    function and no reason.)"""
    deadline = time.monotonic() + seconds
    conn.set_progress_handler(lambda: time.monotonic() > deadline, 1000)
    local.refusal = None
    try:
        conn.execute(sql, params).fetchall()
    except sqlite3.Error as error:
        return local.refusal or str(error)
    finally:
        conn.set_progress_handler(None, 0)
    return None


def arities(fn):
    """Every argument count a function takes: SQLite registers one name per count,
    so an argument added with a default keeps the older calls working."""
    parameters = inspect.signature(inspect.unwrap(fn)).parameters.values()
    required = sum(1 for p in parameters if p.default is inspect.Parameter.empty)
    return range(required, len(parameters) + 1)


def register(conn: sqlite3.Connection, functions) -> None:
    """Each function under its own name, for every argument count it takes."""
    quiet_callbacks()
    for fn in functions:
        for count in arities(fn):
            conn.create_function(fn.__name__, count, reported(fn), deterministic=True)
