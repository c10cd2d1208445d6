"""One release, whole: the database is published by one rename, its inspect data made from it; a killed
build leaves nothing that the next build does not clean; a full disk says so; `serve` keeps serving the
last good release when a rebuild fails."""

import errno
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from computekb.cli import cli
from domain.release import built_hash
from etl import build
from etl.build import build_database
from serving.inspect_file import inspect_path
from serving.serve import release_snapshot

from conftest import serving

BASE = Path(__file__).parent / "bad_inputs" / "_base" / "data"


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A data folder and a good kb.db built from it; the current folder."""
    shutil.copytree(BASE, tmp_path / "data")
    build_database(tmp_path / "data", tmp_path / "kb.db")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_snapshot_ignores_an_inspect_file_of_another_release_beside_the_database(site):
    """A kill between the two renames of the former build left such a pair; serve then refused to start."""
    inspect_path(site / "kb.db").write_text(json.dumps({"kb": {"hash": "0" * 64, "tables": {"vendors": {"count": 99}}}}))
    with release_snapshot(site / "kb.db") as copy:
        inspected = json.loads(inspect_path(copy).read_text())["computekb"]
    with sqlite3.connect(site / "kb.db") as conn:
        vendors = conn.execute("select count(*) from vendors").fetchone()[0]
    assert inspected["tables"]["vendors"]["count"] == vendors != 99


def test_the_next_build_removes_what_killed_builds_left(site):
    dead = 2 ** 22 + 12345  # above Linux's default pid_max: no process has it
    leftovers = [f".kb.db.{dead}.tmp", f".kb.db.{dead}.tmp-journal", f".kb.db.{dead}.inspect.tmp"]
    running = f".kb.db.{os.getppid()}.tmp"  # a build still running in another process keeps its file
    for name in [*leftovers, running]:
        (site / name).write_bytes(b"half a database")
    build_database(site / "data", site / "kb.db")
    assert sorted(p.name for p in site.iterdir() if p.name.startswith(".kb.db")) == [running]


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"),
                                     sqlite3.OperationalError("database or disk is full")], ids=["os", "sqlite"])
def test_a_full_disk_is_reported_with_the_folder_and_the_database_kept(site, monkeypatch, failure):
    before = (site / "kb.db").read_bytes()

    def full(path):
        raise failure
    monkeypatch.setattr(build, "fsync", full)
    result = CliRunner().invoke(cli, ["build", "--data", "data", "--output", "kb.db"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert ": the disk is full (" in result.stderr and "kb.db was left as it was" in result.stderr
    assert "Traceback" not in result.output
    assert (site / "kb.db").read_bytes() == before
    assert sorted(p.name for p in site.iterdir() if p.is_file()) == ["kb.db"]


BUILD = [sys.executable, "-m", "computekb", "build", "--data", "data", "--output", "kb.db", "--quiet", "--no-cache"]


@pytest.mark.parametrize("delay", [0.3, 0.6, 0.9, 1.2, 1.5])
def test_a_build_killed_at_any_moment_leaves_a_release_that_serves(site, delay):
    (site / "data/specs/vendors.yml").write_text((site / "data/specs/vendors.yml").read_text()
                                                 + "  - {slug: zz-new, name: ZZ}\n")
    process = subprocess.Popen(BUILD, cwd=site, env={**os.environ, "PYTHONPATH": str(Path(build.__file__).parents[1])})
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    assert built_hash(site / "kb.db") is not None, "a whole release, the old one or the new one"
    with release_snapshot(site / "kb.db") as copy:
        assert json.loads(inspect_path(copy).read_text())["computekb"]["tables"]["vendors"]["count"] >= 1
    build_database(site / "data", site / "kb.db")
    # no leftover: the database, and the values changed since the release it replaced
    assert sorted(p.name for p in site.iterdir() if p.is_file()) == ["kb.changes.txt", "kb.db"]


def test_serve_serves_the_last_good_release_when_the_rebuild_fails(site):
    good = built_hash(site / "kb.db")
    (site / "data/specs/vendors.yml").write_text("vendors: [\n")  # the next build fails
    with serving(site / "kb.db", site / "data") as url:
        release = httpx.get(url + "/-/release.json").json()
        assert httpx.get(url + "/computekb/vendors.json").status_code == 200
    assert release["data_hash"] == good and release["current"] is False
    assert release["rebuild_failed"].startswith("the rebuild from")
    log = next(site.glob("serve-*.log")).read_text()
    assert "data/specs/vendors.yml:2: -: invalid YAML" in log or "vendors.yml" in log
    assert "Serving the last good release of" in log


async def test_the_release_page_of_a_current_release(fixture_client, fixture_db):
    release = (await fixture_client.get("/-/release.json")).json()
    assert release["data_hash"] == built_hash(fixture_db) and release["current"] is True
    assert release["rebuild_failed"] is None
