"""The fast build paths change nothing: cache, parallel reading, the C composer; progress and --quiet."""

import fcntl
import importlib.util
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import termios
from concurrent.futures import ProcessPoolExecutor

import pytest
from click.testing import CliRunner

from computekb.cli import cli
from etl import build, cache, read
from etl.build import build_database, validate_data
from etl.problems import DataError
from serving.paths import ROOT

DATA = ROOT / "data"


def load_generator():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "bench" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """About 1,000 synthetic records in 441 files."""
    return load_generator().generate(tmp_path_factory.mktemp("synthetic") / "data", 1000, seed=7)


def dump(db):
    """Every row of every table but the build time, in a stable order."""
    with sqlite3.connect(db) as conn:
        tables = [t for (t,) in conn.execute("select name from sqlite_master where type = 'table' order by name")]
        return {t: conn.execute(f"select * from [{t}] order by 1, 2").fetchall() for t in tables if t != "release"} | {
            "release": conn.execute("select data_release, data_hash, files, records from release").fetchall()}


class Counting:
    """Counts the files read (not found in the cache) by the serial path."""

    def __init__(self, monkeypatch):
        self.paths = []
        original = build.read_validate_transform
        monkeypatch.setattr(build, "read_validate_transform", lambda item: self.paths.append(item[0]) or original(item))


def test_cached_build_gives_the_same_rows_as_a_fresh_one(tmp_path, monkeypatch):
    build_database(DATA, tmp_path / "cached.db")           # fills the cache
    counting = Counting(monkeypatch)
    build_database(DATA, tmp_path / "cached.db")           # reads nothing
    assert counting.paths == []
    build_database(DATA, tmp_path / "fresh.db", cache=False)
    assert dump(tmp_path / "cached.db") == dump(tmp_path / "fresh.db")


def test_only_the_changed_file_is_read_again(synthetic, tmp_path, monkeypatch):
    data = shutil.copytree(synthetic, tmp_path / "data")
    build_database(data, tmp_path / "kb.db", workers=1)
    changed = next(data.glob("specs/accelerators/*.yml"))
    changed.write_text(changed.read_text().replace("memory_gb: ", "memory_gb: 1", 1))
    counting = Counting(monkeypatch)
    build_database(data, tmp_path / "kb.db", workers=1)
    assert [p.rsplit("/", 1)[-1] for p in counting.paths] == [changed.name]
    build_database(data, tmp_path / "fresh.db", cache=False)
    assert dump(tmp_path / "kb.db") == dump(tmp_path / "fresh.db")


def test_a_code_change_invalidates_the_cache(tmp_path, monkeypatch):
    build_database(DATA, tmp_path / "kb.db")
    monkeypatch.setattr(cache, "code_version", lambda: "another version")
    counting = Counting(monkeypatch)
    build_database(DATA, tmp_path / "kb.db")
    assert len(counting.paths) == len(read.data_files(DATA))


@pytest.mark.parametrize("changed", ["etl/transform.py", "domain/schema.py"])
def test_the_code_version_covers_the_etl_and_the_domain(tmp_path, monkeypatch, changed):
    for package in ("etl", "domain"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "CODE", tuple(tmp_path / p.name for p in cache.CODE))
    cache.code_version.cache_clear()
    before = cache.code_version()
    with (tmp_path / changed).open("a") as code:
        code.write("# changed\n")
    cache.code_version.cache_clear()
    assert cache.code_version() != before
    cache.code_version.cache_clear()


def test_a_damaged_cache_is_ignored(tmp_path):
    build_database(DATA, tmp_path / "kb.db")
    before = dump(tmp_path / "kb.db")
    cache.cache_path(tmp_path / "kb.db").write_bytes(b"not a database")
    build_database(DATA, tmp_path / "kb.db")
    assert dump(tmp_path / "kb.db") == before


def test_problems_are_reported_again_from_the_cache(tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    (data / "broken.yml").write_text("accelerators:\n  - slug: Bad Slug\n    name: X\n")
    reports = []
    for _ in range(2):
        with pytest.raises(DataError) as error:
            build_database(data, tmp_path / "kb.db")
        reports.append([str(p) for p in error.value.problems])
        counting = Counting(monkeypatch)
    assert counting.paths == []
    assert reports[0] == reports[1]
    assert any("broken.yml:2: slug:" in problem for problem in reports[0])


def test_parallel_reading_gives_the_same_rows_and_problems(synthetic, tmp_path, monkeypatch):
    monkeypatch.setattr(build, "PARALLEL_MIN_FILES", 100)
    pools = []
    monkeypatch.setattr(build, "ProcessPoolExecutor", lambda *a, **k: pools.append(a) or ProcessPoolExecutor(*a, **k))
    build_database(synthetic, tmp_path / "serial.db", cache=False, workers=1)
    assert pools == []
    build_database(synthetic, tmp_path / "parallel.db", cache=False, workers=2)
    assert pools == [(2,)]
    assert dump(tmp_path / "serial.db") == dump(tmp_path / "parallel.db")
    data = shutil.copytree(synthetic, tmp_path / "broken")
    articles = sorted(data.glob("articles/*.yml"))
    first, last = articles[0], articles[-1]
    last.write_text(first.read_text())                      # a duplicate slug, far apart
    (data / "articles" / "zz.yml").write_text("articles: [\n")
    assert [str(p) for p in validate_data(data, workers=1).problems] == [str(p) for p in validate_data(data, workers=2).problems]


def test_the_c_composer_reads_the_same_as_the_safe_one():
    """FastLoader (libyaml's composer) is chosen for shallow files; it must not read them differently."""
    for path in read.data_files(DATA):
        text = path.read_text(encoding="utf-8")
        documents = []
        for loader in (read.FastLoader(text), read.Loader(text)):
            documents.append(structure(loader.get_single_data()))
            loader.dispose()
        assert documents[0] == documents[1], path


def structure(value):
    if isinstance(value, read.LineDict):
        return value.line, value.lines, {k: structure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [structure(v) for v in value]
    return type(value).__name__, value


def test_deep_nesting_goes_to_the_safe_composer():
    assert read.loader_for("a:\n  - [1, 2]\n") is read.FastLoader
    assert read.loader_for("[" * 20_000) is read.Loader
    assert read.loader_for("a:\n" + "- " * 20_000 + "x\n") is read.Loader
    assert read.parse_text(b"[" * 60_000, "deep.yml")[1][0].message == "invalid YAML: nested too deeply"


def test_quiet_build_prints_nothing_and_plain_build_no_progress_bar(tmp_path):
    runner = CliRunner()
    quiet = runner.invoke(cli, ["build", "--quiet", "--data", str(DATA), "--output", str(tmp_path / "q.db")])
    assert quiet.exit_code == 0 and quiet.output == ""
    plain = runner.invoke(cli, ["build", "--data", str(DATA), "--output", str(tmp_path / "p.db")])
    assert plain.exit_code == 0 and "Built" in plain.output
    assert "Reading" not in plain.output  # CliRunner's stderr is not a terminal


def on_a_terminal(args, columns=100):
    """What `args` writes to a pseudo-terminal of `columns` columns (stdout and stderr both)."""
    main, secondary = os.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary)
    os.close(secondary)  # the child holds it now: reading ends when the child has exited
    written = b""
    try:
        while chunk := os.read(main, 1 << 16):  # read as it comes, so the child never waits on a full terminal
            written += chunk
    except OSError:  # EIO: the child's side is closed and everything was read
        pass
    finally:
        os.close(main)
    return process.wait(timeout=120), written.decode()


def test_build_on_a_terminal_draws_a_progress_bar(tmp_path):
    command = [sys.executable, "-c", "from computekb.cli import cli; cli()", "build", "--no-cache", "--data", str(DATA)]
    returncode, written = on_a_terminal(command + ["--output", str(tmp_path / "kb.db")])
    files = len(read.data_files(DATA))
    assert returncode == 0 and "Reading:   0%" in written and f"0/{files} [" in written and "Built" in written
    returncode, written = on_a_terminal(command + ["--quiet", "--output", str(tmp_path / "q.db")])
    assert returncode == 0 and written == ""


def test_progress_bar_counts_every_file(tmp_path):
    seen = []

    class Bar:
        def __init__(self, total):
            seen.append(total)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def update(self, n):
            seen.append(n)

    build_database(DATA, tmp_path / "kb.db", progress=Bar)
    files = len(read.data_files(DATA))
    assert seen[0] == files and sum(seen[1:]) == files
