"""The whole pipeline: read → validate → transform → load, written atomically.

The new database is built in a temporary file beside the target and renamed
over it only when everything succeeded, so a failed build never touches the
last good database.
"""

import datetime
import hashlib
import json
import os
import time
from pathlib import Path

from datasette.inspect import inspect_hash

from .load import load, table_counts
from .problems import DataError, Problem
from .read import data_files, read_file
from .transform import transform
from .validate import validate


def display_path(path):
    """`data/specs/x.yml` rather than an absolute path, when under the current folder."""
    path = Path(path).absolute()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def read_all(data_dir):
    """Read every data file; return (records, problems, data hash, file count)."""
    files = data_files(data_dir)
    if not files:
        return [], [Problem(str(data_dir), 1, "-", "no data files (*.yml) found")], None, 0
    digest = hashlib.sha256()
    records, problems = [], []
    for path in files:
        shown = display_path(path)
        digest.update(shown.encode() + b"\0" + Path(path).read_bytes() + b"\0")
        found, trouble = read_file(path, shown)
        records += found
        problems += trouble
    return records, problems, digest.hexdigest(), len(files)


def check(data_dir):
    """Read and validate; return (rows, citations, problems, data hash, file count)."""
    records, problems, data_hash, files = read_all(data_dir)
    rows, citations, more = validate(records)
    return rows, citations, problems + more, data_hash, files


def inspect_path(db_path):
    return Path(db_path).with_suffix(".inspect.json")


def write_inspect(tmp_db, final_db, target):
    """Datasette's inspect file (table counts, hash) for the immutable database."""
    final_db = Path(final_db)
    data = {final_db.stem: {
        "hash": inspect_hash(Path(tmp_db)),
        "size": Path(tmp_db).stat().st_size,
        "file": final_db.name,
        "tables": {name: {"count": count} for name, count in table_counts(tmp_db).items()},
    }}
    Path(target).write_text(json.dumps(data, indent=2))


def build_database(data_dir, output):
    """Build `output` from `data_dir`; return rows per table. Raises DataError."""
    started = time.perf_counter()
    rows, citations, problems, data_hash, files = check(data_dir)
    if problems:
        raise DataError(problems)
    tables = transform(rows, citations)
    tables["release"] = [{
        "data_release": data_hash[:12], "data_hash": data_hash,
        "built_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "files": files, "records": len(rows),
    }]
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp_db = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    tmp_inspect = output.with_name(f".{output.name}.{os.getpid()}.inspect.tmp")
    try:
        load(tables, tmp_db)
        write_inspect(tmp_db, output, tmp_inspect)
        os.replace(tmp_db, output)
        os.replace(tmp_inspect, inspect_path(output))
    finally:
        for leftover in (tmp_db, tmp_inspect):
            leftover.unlink(missing_ok=True)
    counts = table_counts(output)
    return {"tables": counts, "seconds": time.perf_counter() - started, "release": data_hash[:12]}
