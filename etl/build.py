"""The whole pipeline: read → validate → transform → load, written atomically.

Each file is read, validated and transformed on its own (here or in worker
processes, or taken from the cache), and its rows go straight into the new
database's staging tables: memory holds what the checks across files need
(slugs, unresolved references), not the rows. The new database is built in a
temporary file beside the target and renamed over it only when everything
succeeded, so a failed build never touches the last good database.

A release is that one file: Datasette's inspect data (its hash and table counts)
is derived from the database by whoever serves it (serving/inspect_file.py), never
published beside it, so no kill between two renames can pair a database with
another release's counts. The temporary files of a build that was killed are
removed by the next build; a full disk is reported as such, with the folder.
"""

import datetime
import errno
import functools
import gc
import hashlib
import multiprocessing
import os
import pickle
import re
import shutil
import sqlite3
import stat
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from tqdm import tqdm

from domain.release import table_counts

from .cache import FileCache, cache_path, file_key
from .consistency import unread_file
from .load import StagingDatabase
from .problems import DataError, Problem
from .read import display_path, read_bytes, scan_data
from .release_diff import NotARelease, changes_path, format_diff, release_diff
from .transform import cross_file_columns, file_tables
from .validate import CrossCheck, file_keys, validate_records


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


PARALLEL_MIN_FILES = 1000  # fewer files: starting worker processes costs more than it saves
CHUNK_FILES = 64          # files per task sent to a worker
CHUNKS_AHEAD = 3          # tasks queued per worker: keeps them busy, bounds the memory of files in flight


class FileResult(NamedTuple):
    """All the build needs of one file, computed from that file alone (so cached and parallel)."""

    tables: dict    # rows for every table (transform.file_tables)
    slugs: list     # for the checks across files (validate.file_keys)
    refs: list
    problems: list
    records: int
    citations: int
    facts: list     # for the consistency rules across files (consistency.Fact)


def read_validate_transform(item):
    """One file on its own: read, validate and transform it into its FileResult."""
    shown, raw = item
    records, problems = read_bytes(raw, shown)
    rows, partial, citations, more = validate_records(records)
    slugs, refs, facts = file_keys(rows, partial, citations)
    if problems:  # part of the file could not be read: what it cites is not known
        facts.append(unread_file(shown))
    return FileResult(file_tables(rows, citations), slugs, refs, problems + more, len(rows), len(citations), facts)


def read_chunk(items):
    """In a worker: the pickled results of a few files (pickled once, and stored as such in the cache)."""
    return [pickle.dumps(read_validate_transform(item), pickle.HIGHEST_PROTOCOL) for item in items]


def file_items(files, digest, data_dir):
    """(shown path, bytes) of each file in turn; a Problem instead of the bytes
    of a file that cannot be read.

    `digest` takes in every byte and every path relative to `data_dir`: the
    data release it gives names the files alone, whatever folder the build
    runs from and however `data_dir` is written.
    """
    cwd, root = os.path.join(os.getcwd(), ""), len(os.path.join(data_dir, ""))
    for path in files:
        shown = display_path(path, cwd)
        try:
            with open(path, "rb", buffering=0) as file:
                raw = file.readall()
        except OSError as error:  # unreadable, or gone since the folder was listed
            digest.update(path[root:].replace(os.sep, "/").encode() + b"\0\0")
            yield shown, Problem(shown, 1, "-", f"cannot read this file ({error.strerror or error})")
            continue
        digest.update(path[root:].replace(os.sep, "/").encode() + b"\0")
        digest.update(raw)  # not concatenated: no copy of the file's bytes
        digest.update(b"\0")
        yield shown, raw


def start_pool(workers):
    # fork: the workers start with every module already imported.
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    return ProcessPoolExecutor(workers, mp_context=context)


def file_results(files, digest, data_dir, cache, workers=None):
    """The FileResult of every file, in file order: from the cache, else computed.

    With enough files and `workers` > 1 (default: one per core), runs of files
    not in the cache go to worker processes, CHUNK_FILES at a time and a few
    chunks ahead, while this process stores the results that come back. A lone
    changed file is read here: starting the workers would cost more.
    """
    workers = workers or os.cpu_count() or 1
    batch = CHUNK_FILES if workers > 1 and len(files) >= PARALLEL_MIN_FILES else 1
    slots, chunk, pool = deque(), [], None  # slots: results (or a worker's future) in file order
    try:
        for shown, raw in file_items(files, digest, data_dir):
            if isinstance(raw, Problem):
                cached = FileResult({}, [], [], [raw], 0, 0, [unread_file(shown)])
            else:
                key = file_key(shown, raw)
                cached = cache.get(key)
            if cached is None:
                chunk.append((key, (shown, raw)))
            if chunk and (cached is not None or len(chunk) == batch):
                if pool is None and len(chunk) == CHUNK_FILES:
                    pool = start_pool(workers)
                slots.append(run(chunk, pool, cache))
                chunk = []
            if cached is not None:
                slots.append([cached])
            yield from take(slots, cache, block=len(slots) > CHUNKS_AHEAD * workers)
        if chunk:
            slots.append(run(chunk, pool, cache))
        while slots:
            yield from take(slots, cache, block=True)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def run(chunk, pool, cache):
    """Results of a chunk of (key, item): computed here, or (keys, a worker's future)."""
    if pool is not None:
        return [key for key, _ in chunk], pool.submit(read_chunk, [item for _, item in chunk])
    results = [read_validate_transform(item) for _, item in chunk]
    for (key, _), result in zip(chunk, results):
        cache.put(key, result)
    return results


def take(slots, cache, block):
    """Yield the results at the head of `slots` that are ready (waiting for the first one if `block`)."""
    while slots and (block or isinstance(slots[0], list) or slots[0][1].done()):
        head = slots.popleft()
        block = False
        if isinstance(head, tuple):
            keys, future = head
            head = []
            for key, blob in zip(keys, future.result()):
                head.append(pickle.loads(blob))
                cache.put(key, head[-1], blob)
        yield from head


def data_hash(data_dir):
    """The SHA-256 that a build of `data_dir` records as its `data_hash`, without
    building; None when there is no data file. A folder with parts that cannot
    be read gives a hash no build records: a build must say why."""
    found, digest = scan_data(data_dir), hashlib.sha256()
    files, problems = found.paths, found.problems
    for _ in file_items(files, digest, data_dir):
        pass
    digest.update("".join(map(str, problems)).encode())
    return digest.hexdigest() if files or problems else None


def no_progress(total):
    return tqdm(total=total, disable=True)


@gc_paused
class Validation(NamedTuple):
    """What reading and validating every data file found."""

    records: int
    citations: int
    problems: list
    data_hash: str | None  # None when there is no data file
    files: int


def validate_data(data_dir, cache_file=None, workers=None, progress=None, staging=None):
    """Read, validate and transform every file; return their Validation.

    `staging` (a load.StagingDatabase) receives each file's rows as they come.
    """
    found = scan_data(data_dir)
    files, problems = found.paths, found.problems
    if not files:
        return Validation(0, 0, problems or [Problem(str(data_dir), 1, "-", "no data files (*.yml) found")], None, 0)
    digest, cross, records, citations = hashlib.sha256(), CrossCheck(), 0, 0
    with FileCache(cache_file) as cache, (progress or no_progress)(total=len(files)) as bar:
        for result in file_results(files, digest, data_dir, cache, workers):
            problems += result.problems
            cross.add(result.slugs, result.refs, result.facts)
            records += result.records
            citations += result.citations
            if staging is not None:
                staging.add(result.tables)
            bar.update(1)
    return Validation(records, citations, problems + cross.problems(), digest.hexdigest(), len(files))


class ShrinkError(Exception):
    """The new database would lose most rows of a table that the current one has."""

    def __init__(self, output, losses):
        self.losses = losses  # {table: (rows now, rows in the new build)}
        tables = "; ".join(f"{table}: {before:,} rows now, {after:,} in the new build"
                           for table, (before, after) in sorted(losses.items()))
        super().__init__(f"{display_path(output)} would shrink ({tables}). A folder or files may be missing "
                         "from the data; if the rows were removed on purpose, build with --allow-shrink")


def current_counts(output):
    """Rows per table of the database at `output` now (read-only: a server may be
    reading it); empty when there is none to compare with."""
    try:
        return table_counts(output)
    except sqlite3.Error:  # no database, or not one: nothing to lose
        return {}


def shrinkage(before, after):
    """Tables that would become empty or lose more than half of their rows: {table: (before, after)}."""
    return {table: (rows, after.get(table, 0)) for table, rows in before.items()
            if rows and (after.get(table, 0) == 0 or after.get(table, 0) * 2 < rows)}


def staged_changes(output, new_db) -> Path | None:
    """Before `new_db` replaces the database at `output`: when their data releases differ, what changed
    between them, written to a temporary file beside `output` and synced; None when there is nothing to
    publish (the same release rebuilt keeps the list it had; with no database before, there is nothing to
    compare with). publish() renames it into place after the database: a list never describes a release
    that was not published, and a full disk stops the build before either is replaced."""
    if not output.exists():
        return None
    try:
        diff = release_diff(output, new_db)
    except (sqlite3.Error, NotARelease):  # not a release: nothing to compare with
        return None
    if diff.old_release == diff.new_release:
        return None
    staged = staged_changes_path(output)
    staged.write_text(format_diff(diff), encoding="utf-8")
    fsync(staged)
    return staged


def staged_changes_path(output) -> Path:
    return output.with_name(f".{output.name}.{os.getpid()}.changes.tmp")


def publish(output, new_db, changes):
    """The release, then its list of changes: two renames, which need no free space."""
    os.replace(new_db, output)
    if changes is not None:
        os.replace(changes, changes_path(output))


class OutputError(Exception):
    """The output names something a build must not replace: a device, a folder, a pipe, a link."""

    def __init__(self, output, what):
        super().__init__(f"{display_path(str(output))} is {what}, not a regular file: the database is written only "
                         "to a regular file or a new path")


def output_problem(output: Path) -> str | None:
    """What `output` is when a build must not replace it, or None for a regular file or a new path."""
    if output.is_symlink():
        return "a symbolic link"
    if not output.exists():
        return None
    mode = output.stat().st_mode
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))
    return next((what for test, what in kinds if test(mode)), "not a regular file")


def fsync(path):
    with open(path, "rb") as file:
        os.fsync(file.fileno())


class DiskFullError(Exception):
    """The disk holding the output filled up while the new database was written."""

    def __init__(self, output):
        folder = Path(output).resolve().parent
        free = shutil.disk_usage(folder).free
        super().__init__(f"{display_path(str(folder))}: the disk is full ({free / 1e6:,.1f} MB free): the new "
                         f"database could not be written; {display_path(output)} was left as it was")


def is_disk_full(error):
    """Whether `error` is the disk filling up: the OS's ENOSPC, or SQLite's SQLITE_FULL."""
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(error, sqlite3.Error) and "disk is full" in str(error)


TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)\.(?:inspect\.|changes\.)?tmp(?:-journal|-wal|-shm)?\Z")


def is_running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_leftovers(output):
    """Remove the temporary files that builds of `output` killed before their end left beside it
    (a build still running keeps its own)."""
    for path in Path(output).parent.glob(f".{Path(output).name}.*tmp*"):
        match = TEMPORARY.match(path.name)
        if match and match["name"] == Path(output).name and not is_running(int(match["pid"])):
            path.unlink(missing_ok=True)


@gc_paused
def build_database(data_dir, output, cache=True, workers=None, progress=None, allow_shrink=False):
    """Build `output` from `data_dir`; return rows per table. Raises DataError, or
    ShrinkError when a table would lose most of its rows (unless `allow_shrink`).

    `cache`: reuse the results of unchanged files (see cache.py); `workers`:
    processes that read files (default: one per core); `progress(total=n)`: a
    context manager with `update(files)`, such as tqdm. The shrink check is a
    second line of defence against data that went missing without a problem.
    """
    started = time.perf_counter()
    output = Path(output)
    for path in (output, changes_path(output)):
        if what := output_problem(path):
            raise OutputError(path, what)
    output.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(output)
    tmp_db = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        with StagingDatabase(tmp_db) as stage:
            records, _, problems, data_hash, files = validate_data(data_dir, cache_path(output) if cache else None,
                                                                   workers, progress, stage)
            if problems:
                raise DataError(problems)
            cross_file_columns(stage)
            stage.finish({
                "data_release": data_hash[:12], "data_hash": data_hash,
                "built_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "files": files, "records": records,
            })
        # The new file is written without syncs: the rename below must not expose a
        # half-written file. The disk syncs while the tables are counted.
        with ThreadPoolExecutor(1) as syncing:
            synced = syncing.submit(fsync, tmp_db)
            counts = table_counts(tmp_db)
            synced.result()
        if not allow_shrink and (losses := shrinkage(current_counts(output), counts)):
            raise ShrinkError(output, losses)
        publish(output, tmp_db, staged_changes(output, tmp_db))
    except (OSError, sqlite3.Error) as error:
        if is_disk_full(error):
            raise DiskFullError(output) from None
        raise
    finally:
        tmp_db.unlink(missing_ok=True)
        staged_changes_path(output).unlink(missing_ok=True)
    return {"tables": counts, "seconds": time.perf_counter() - started, "release": data_hash[:12]}
