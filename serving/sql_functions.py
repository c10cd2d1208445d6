"""Python functions as SQL functions: NULL in gives NULL out, every argument count registered.

A nonsensical argument raises ValueError, which sqlite reports as a query
error: Datasette answers it with HTTP 400 (sqlite's own text, "user-defined
function raised exception").
"""

import functools
import inspect
import sqlite3


def nullable(fn):
    """NULL in any argument gives NULL: an unknown figure makes an unknown answer."""
    @functools.wraps(fn)
    def wrapper(*args):
        if any(arg is None for arg in args):
            return None
        return fn(*args)
    return wrapper


def arities(fn):
    """Every argument count a function takes: SQLite registers one name per count,
    so an argument added with a default keeps the older calls working."""
    parameters = inspect.signature(inspect.unwrap(fn)).parameters.values()
    required = sum(1 for p in parameters if p.default is inspect.Parameter.empty)
    return range(required, len(parameters) + 1)


def register(conn: sqlite3.Connection, functions) -> None:
    """Each function under its own name, for every argument count it takes."""
    for fn in functions:
        for count in arities(fn):
            conn.create_function(fn.__name__, count, fn, deterministic=True)
