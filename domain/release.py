"""A data release is one SQLite file: what the build writes and the server serves.

Both read the same two facts of it: the hash of the data it was built from,
and its rows per table. Opened read-only: a server may be reading the file.
"""

import sqlite3
from contextlib import closing
from pathlib import Path


def read_only(db_path):
    return closing(sqlite3.connect(f"{Path(db_path).resolve().as_uri()}?mode=ro", uri=True))


def built_hash(db_path):
    """The `data_hash` a database was built from, or None (no database, or not one of ours)."""
    try:
        with read_only(db_path) as conn:
            row = conn.execute("SELECT data_hash FROM release").fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def table_counts(db_path):
    """Rows per table, full-text index tables left out; sqlite3.Error where there is no database."""
    with read_only(db_path) as conn:
        names = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                 if "_fts" not in name and not name.startswith("sqlite_")]
        return {name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in names}
