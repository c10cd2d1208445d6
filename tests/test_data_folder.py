"""The data folder is read completely or not at all.

A folder that cannot be listed, a file that cannot be read and a symbolic link
are problems that name the path; a build that would empty a table or halve it
stops unless told it is meant. Root reads anything whatever its mode, so the
unreadable cases run in a forked child that has given up root.
"""

import multiprocessing
import os
import pwd
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from computekb.cli import cli
from etl.build import data_hash
from serving.paths import ROOT

DATA = ROOT / "data"


def drop_root():
    """In the forked child: become `nobody`, so file modes apply."""
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)


def can_drop_root():
    return os.geteuid() != 0 or ("fork" in multiprocessing.get_all_start_methods() and _has_nobody())


def _has_nobody():
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return False
    return True


def run_cli(args):
    """The command run in this process: (exit code, stderr and any exception it raised)."""
    result = CliRunner().invoke(cli, args)
    crashed = result.exception and not isinstance(result.exception, SystemExit)
    return result.exit_code, result.stderr + (f"Traceback: {result.exception!r}" if crashed else "")


def run_unprivileged(args):
    """`computekb args` as a user that file modes apply to: here when not root,
    else in a forked child (all modules already imported) that gave up root."""
    if os.geteuid() != 0:
        return run_cli(args)
    with multiprocessing.get_context("fork").Pool(1, initializer=drop_root) as pool:
        return pool.apply(run_cli, (args,))


unprivileged = pytest.mark.skipif(not can_drop_root(), reason="running as root with no way to drop to `nobody`: "
                                                              "file modes would not apply")


@pytest.fixture
def site(monkeypatch):
    """A copy of the real data and its database, owned by `nobody` when the tests run as root
    (in a folder of its own under the system's temporary folder: pytest's are open to root only)."""
    tmp_path = Path(tempfile.mkdtemp(prefix="computekb-site-"))
    shutil.copytree(DATA, tmp_path / "data")
    assert run_cli(["build", "--data", "data", "--output", str(tmp_path / "kb.db"), "-q"])[0] == 0
    if os.geteuid() == 0 and _has_nobody():
        nobody = pwd.getpwnam("nobody")
        for folder, _, files in os.walk(tmp_path):
            for name in [folder, *(os.path.join(folder, f) for f in files)]:
                os.chown(name, nobody.pw_uid, nobody.pw_gid)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for folder, names, _ in os.walk(tmp_path):  # modes back, so the folder can be removed
        for name in names:
            os.chmod(os.path.join(folder, name), 0o755)
    shutil.rmtree(tmp_path)


def rows(db, table):
    with sqlite3.connect(db) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def database_bytes(site):
    return (site / "kb.db").read_bytes()


@unprivileged
@pytest.mark.parametrize("command", ["validate", "build"])
def test_a_folder_that_cannot_be_listed_is_a_problem(site, command):
    before = database_bytes(site)
    (site / "data/articles").chmod(0)
    args = ["validate", "--data", "data"] if command == "validate" else ["build", "--data", "data", "--output", "kb.db"]

    code, stderr = run_unprivileged(args)

    assert code == 1, stderr
    assert "data/articles:1: -: cannot list this folder (Permission denied)" in stderr.splitlines()
    assert database_bytes(site) == before


@unprivileged
def test_an_unlisted_folder_of_accelerators_is_named(site):
    (site / "data/specs/accelerators").chmod(0)

    code, stderr = run_unprivileged(["validate", "--data", "data"])

    assert code == 1
    assert "data/specs/accelerators:1: -: cannot list this folder (Permission denied)" in stderr.splitlines()


@unprivileged
def test_a_file_that_cannot_be_read_is_a_located_problem(site):
    before = database_bytes(site)
    path = min((site / "data/articles").iterdir())
    path.chmod(0)

    code, stderr = run_unprivileged(["build", "--data", "data", "--output", "kb.db"])

    assert code == 1, stderr
    assert f"data/articles/{path.name}:1: -: cannot read this file (Permission denied)" in stderr.splitlines()
    assert "Traceback" not in stderr
    assert database_bytes(site) == before


def test_a_symbolic_link_to_a_folder_is_refused(site, tmp_path_factory):
    """A linked folder was skipped without a word: 0 articles instead of 98."""
    before = database_bytes(site)
    outside = tmp_path_factory.mktemp("outside") / "articles"
    (site / "data/articles").rename(outside)
    (site / "data/articles").symlink_to(outside, target_is_directory=True)

    code, stderr = run_cli(["build", "--data", "data", "--output", "kb.db"])

    assert code == 1
    assert stderr.startswith("data/articles:1: -: symbolic link:"), stderr
    assert database_bytes(site) == before


def test_a_symbolic_link_to_a_file_inside_the_folder_is_refused(site):
    (site / "data/specs/again.yml").symlink_to(site / "data/specs/vendors.yml")

    code, stderr = run_cli(["validate", "--data", "data"])

    assert code == 1
    assert stderr.startswith("data/specs/again.yml:1: -: symbolic link:"), stderr


def test_the_data_release_of_a_folder_with_a_link_matches_no_build(site):
    """`serve` rebuilds when the data hash differs: a link must make it try, and fail."""
    release = data_hash(site / "data")
    (site / "data/specs/again.yml").symlink_to(site / "data/specs/vendors.yml")
    assert data_hash(site / "data") != release


def test_a_build_that_empties_a_table_stops(site):
    before = database_bytes(site)
    shutil.rmtree(site / "data/articles")

    code, stderr = run_cli(["build", "--data", "data", "--output", "kb.db"])

    assert code == 1
    assert "articles: 98 rows now, 0 in the new build" in stderr and "--allow-shrink" in stderr, stderr
    assert database_bytes(site) == before


def test_a_build_that_halves_a_table_stops(site):
    articles = sorted((site / "data/articles").iterdir())
    for path in articles[: len(articles) // 2 + 1]:
        path.unlink()

    code, stderr = run_cli(["build", "--data", "data", "--output", "kb.db"])

    assert code == 1
    assert "articles: 98 rows now" in stderr, stderr


def test_allow_shrink_publishes_the_smaller_database(site):
    shutil.rmtree(site / "data/articles")

    code, stderr = run_cli(["build", "--data", "data", "--output", "kb.db", "--allow-shrink", "-q"])

    assert code == 0, stderr
    assert rows(site / "kb.db", "articles") == 0


def test_losing_fewer_than_half_the_rows_needs_no_flag(site):
    articles = sorted((site / "data/articles").iterdir())
    for path in articles[:10]:
        path.unlink()

    code, stderr = run_cli(["build", "--data", "data", "--output", "kb.db", "-q"])

    assert code == 0, stderr
    assert rows(site / "kb.db", "articles") == 98 - 10
