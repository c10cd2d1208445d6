"""Per-file cache of parsed and validated data, so a rebuild re-reads only what changed.

A file's result (its rows ready for the tables, its slugs and references for
the checks across files, its problems) depends only on its content, its displayed path and the code that read it. The
cache keys each result by a hash of the first two, and the whole cache by a
hash of the code (every `etl/*.py` and `domain/*.py`, and the versions of the libraries that
parse and validate): change either and the entry is simply not found. Results are
pickled into one SQLite file in a folder beside the output database. Anything
unreadable in it is treated as a miss, so the cache can make a build faster,
never different.
"""

import hashlib
import pickle
import sqlite3
from functools import cache
from importlib.metadata import version
from pathlib import Path

import domain

CACHE_DIR = ".computekb-cache"
CODE = (Path(__file__).parent, Path(domain.__file__).parent)  # the ETL, and the schema and models it applies
LIBRARIES = ("PyYAML", "pydantic", "pydantic-core", "pint")


@cache
def code_version():
    """Hash of the code that turns a file into its result."""
    digest = hashlib.sha256()
    for path in sorted(path for folder in CODE for path in folder.glob("*.py")):
        digest.update(f"{path.parent.name}/{path.name}".encode() + b"\0" + path.read_bytes() + b"\0")
    for library in LIBRARIES:
        digest.update(f"{library}={version(library)}\0".encode())
    return digest.hexdigest()


def file_key(display_path, raw):
    """The key of one file's result: its path as shown in problems, and its content."""
    digest = hashlib.sha256(display_path.encode() + b"\0")
    digest.update(raw)  # not concatenated: no copy of the file's bytes
    return digest.digest()


def cache_path(output):
    """Where the cache of a database lives: `.computekb-cache/<name>.sqlite` beside it."""
    output = Path(output)
    return output.parent / CACHE_DIR / f"{output.stem}.sqlite"


class FileCache:
    """Results by file key, for one code version; used as a context manager.

    Entries are read one at a time and new ones written as they come, in one
    transaction committed on a clean exit (then the entries of files that are
    gone are dropped); memory holds only the keys. With no path it caches
    nothing (`computekb validate`, `build --no-cache`).
    """

    FLUSH = 256  # new entries buffered before they are written

    def __init__(self, path=None):
        self.path = None if path is None else Path(path)
        self.conn = None
        self.known, self.used, self.new = set(), set(), []

    def __enter__(self):
        if self.path is None:
            return self
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, timeout=30)
            self.conn.execute("CREATE TABLE IF NOT EXISTS results (key BLOB PRIMARY KEY, code TEXT, result BLOB)")
            self.known = {key for (key,) in self.conn.execute("SELECT key FROM results WHERE code = ?", (code_version(),))}
        except (OSError, sqlite3.Error):
            self.discard()
        return self

    def get(self, key):
        """The cached result, or None (missing, or unreadable: then it is recomputed)."""
        if self.conn is None:
            return None
        self.used.add(key)
        if key not in self.known:
            return None
        try:
            (blob,) = self.conn.execute("SELECT result FROM results WHERE key = ?", (key,)).fetchone()
            return pickle.loads(blob)
        except sqlite3.Error:
            self.discard()
        except Exception:  # noqa: BLE001 - any damage to an entry only means a miss
            pass
        return None

    def put(self, key, result, blob=None):
        """Store a new result (`blob`: its pickle, when the caller has it already)."""
        if self.conn is None:
            return
        self.new.append((key, code_version(), blob or pickle.dumps(result, pickle.HIGHEST_PROTOCOL)))
        if len(self.new) >= self.FLUSH:
            self.write()

    def write(self):
        try:
            self.conn.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?)", self.new)
        except sqlite3.Error:
            self.discard()
        self.new = []

    def finish(self):
        """Write what is left and drop every entry not used by this build (files gone, older code)."""
        if self.new:
            self.write()
        if self.conn is None or self.known <= self.used and not self.conn.in_transaction:
            return
        try:
            with self.conn:
                self.conn.execute("CREATE TEMP TABLE used (key BLOB PRIMARY KEY)")
                self.conn.executemany("INSERT OR IGNORE INTO used VALUES (?)", ((k,) for k in self.used))
                self.conn.execute("DELETE FROM results WHERE code != ? OR key NOT IN (SELECT key FROM used)", (code_version(),))
                self.conn.execute("DROP TABLE used")
        except sqlite3.Error:
            self.discard()

    def discard(self):
        """A cache that cannot be read or written is removed; the build goes on without it."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        self.known, self.new = set(), []
        self.path.unlink(missing_ok=True)

    def __exit__(self, exc_type, *exc):
        if self.conn is None:
            return
        if exc_type is None:  # an interrupted build keeps the cache as it was
            self.finish()
        if self.conn is not None:
            self.conn.close()
