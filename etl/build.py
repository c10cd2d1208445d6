"""The whole pipeline: read → validate → transform → load, written atomically.

The new database is built in a temporary file beside the target and renamed
over it only when everything succeeded, so a failed build never touches the
last good database.
"""

import datetime
import functools
import gc
import hashlib
import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from datasette.inspect import inspect_hash
from tqdm import tqdm

from .cache import FileCache, cache_path, file_key
from .load import load, table_counts
from .problems import DataError, Problem
from .read import data_files, read_bytes
from .transform import transform
from .validate import check_across, validate_records


def display_path(path):
    """`data/specs/x.yml` rather than an absolute path, when under the current folder."""
    path, cwd = os.path.abspath(path), os.path.join(os.getcwd(), "")
    return path[len(cwd):] if path.startswith(cwd) else path


def gc_paused(function):
    """Run `function` with the cyclic garbage collector off.

    A build allocates millions of long-lived objects and no cycles worth
    collecting: left on, the collector rescans them over and over (half of a
    10,000-file rebuild). Reference counting still frees everything.
    """
    @functools.wraps(function)
    def paused(*args, **kwargs):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()
    return paused


PARALLEL_MIN_FILES = 1000  # fewer files to read: starting worker processes costs more than it saves
CHUNK_FILES = 64          # files per task sent to a worker


def read_and_validate(item):
    """One file on its own: (rows, partial rows, citations, problems)."""
    shown, raw = item
    records, problems = read_bytes(raw, shown)
    rows, partial, citations, more = validate_records(records)
    return rows, partial, citations, problems + more


def read_chunk(items):
    return [read_and_validate(item) for item in items]


def read_many(items, workers, progress):
    """Results of `items`, in order: on `workers` processes when there are enough files."""
    workers = workers or os.cpu_count() or 1
    if workers < 2 or len(items) < PARALLEL_MIN_FILES:
        for item in items:
            result = read_and_validate(item)
            progress.update(1)
            yield result
        return
    chunks = [items[i:i + CHUNK_FILES] for i in range(0, len(items), CHUNK_FILES)]
    # fork: the workers start with every module already imported.
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with ProcessPoolExecutor(min(workers, len(chunks)), mp_context=context) as pool:
        for results in pool.map(read_chunk, chunks):
            progress.update(len(results))
            yield from results


def read_all(files, cache_file=None, workers=None, progress=None):
    """Read and validate every file on its own, through the cache; return (results in file order, data hash)."""
    digest, items, keys = hashlib.sha256(), [], []
    for path in files:
        shown, raw = display_path(path), Path(path).read_bytes()
        digest.update(shown.encode() + b"\0" + raw + b"\0")
        items.append((shown, raw))
        keys.append(file_key(shown, raw))
    with FileCache(cache_file) as cache, (progress or functools.partial(tqdm, disable=True))(total=len(files)) as bar:
        results = [cache.get(key) for key in keys]
        missing = [i for i, result in enumerate(results) if result is None]
        bar.update(len(files) - len(missing))
        for i, result in zip(missing, read_many([items[i] for i in missing], workers, bar)):
            results[i] = result
        cache.save({keys[i]: results[i] for i in missing}, keys)
    return results, digest.hexdigest()


@gc_paused
def check(data_dir, cache_file=None, workers=None, progress=None):
    """Read and validate; return (rows, citations, problems, data hash, file count)."""
    files = data_files(data_dir)
    if not files:
        return [], [], [Problem(str(data_dir), 1, "-", "no data files (*.yml) found")], None, 0
    results, data_hash = read_all(files, cache_file, workers, progress)
    rows, partial, citations, problems = ([x for result in results for x in result[part]] for part in range(4))
    return rows, citations, problems + check_across(rows, partial, citations), data_hash, len(files)


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


def fsync(path):
    with open(path, "rb") as file:
        os.fsync(file.fileno())


@gc_paused
def build_database(data_dir, output, cache=True, workers=None, progress=None):
    """Build `output` from `data_dir`; return rows per table. Raises DataError.

    `cache`: reuse the results of unchanged files (see cache.py); `workers`:
    processes that read files (default: one per core); `progress(total=n)`: a
    context manager with `update(files)`, such as tqdm.
    """
    started = time.perf_counter()
    rows, citations, problems, data_hash, files = check(data_dir, cache_path(output) if cache else None, workers, progress)
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
        fsync(tmp_db)  # load() does not sync: the rename below must not expose a half-written file
        os.replace(tmp_db, output)
        os.replace(tmp_inspect, inspect_path(output))
    finally:
        for leftover in (tmp_db, tmp_inspect):
            leftover.unlink(missing_ok=True)
    counts = table_counts(output)
    return {"tables": counts, "seconds": time.perf_counter() - started, "release": data_hash[:12]}
