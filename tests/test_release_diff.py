"""The list of values added, changed and removed between two data releases, on two builds
of the fixture data that differ by hand-made edits; the expected lines are worked out
from those edits."""

import re
import shutil
import sqlite3
from contextlib import closing

import pytest
from click.testing import CliRunner

from computekb.cli import cli
from etl.build import build_database
from etl.release_diff import changes_path
from tests.conftest import FIXTURE_DATA

HEADING = re.compile(r"Changes from data release [0-9a-f]{12} to [0-9a-f]{12}\n")
# The new data: acme-x2's memory goes from 144 GB to 288 GB, the provider otherco is added,
# and the number format int8 (in the old data only, cited to acme-datasheet) is removed.
EXPECTED = """
providers (rows 1 added)
  otherco  name: (none) → OtherCo

accelerators (rows 1 changed)
  acme-x2  memory_gb: 144 → 288

number_formats (rows 1 removed)
  int8  name: INT8 → (none)
  int8  family: int8 → (none)
  int8  kind: integer → (none)
  int8  bits: 8 → (none)
  int8  source: acme-datasheet → (none)

citations (rows 1 changed, 1 removed)
  accelerators-acme-x2-memory-gb  value: 144 → 288
  accelerators-acme-x2-memory-gb  as_written: 144 GB → 288 GB
  number-formats-int8-bits  table_name: number_formats → (none)
  number-formats-int8-bits  row_slug: int8 → (none)
  number-formats-int8-bits  field: bits → (none)
  number-formats-int8-bits  value: 8 → (none)
  number-formats-int8-bits  as_written: 8 → (none)
  number-formats-int8-bits  source: acme-datasheet → (none)
  number-formats-int8-bits  kind: vendor-spec → (none)
  number-formats-int8-bits  tier: vendor-primary → (none)
"""


def append(path, text):
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


@pytest.fixture(scope="module")
def data_pair(tmp_path_factory):
    """(old data folder, new data folder)."""
    root = tmp_path_factory.mktemp("releases")
    old, new = shutil.copytree(FIXTURE_DATA, root / "old"), shutil.copytree(FIXTURE_DATA, root / "new")
    append(old / "specs" / "number_formats.yml",
           "  - {slug: int8, name: INT8, family: int8, kind: integer, bits: 8, source: acme-datasheet}\n")
    accelerators = new / "specs" / "accelerators" / "acme.yml"
    accelerators.write_text(accelerators.read_text(encoding="utf-8").replace("memory_gb: 144 GB", "memory_gb: 288 GB"),
                            encoding="utf-8")
    append(new / "specs" / "vendors.yml", "  - {slug: otherco, name: OtherCo}\n")
    return old, new


def split(text):
    """(heading, the rest) of a diff's text."""
    heading = HEADING.match(text)
    assert heading, text
    return heading.group(0), text[heading.end():]


def test_the_diff_command_lists_every_value_added_changed_and_removed(data_pair, tmp_path):
    old, new = data_pair
    build_database(old, tmp_path / "old.db", cache=False)
    build_database(new, tmp_path / "new.db", cache=False)
    result = CliRunner().invoke(cli, ["diff", str(tmp_path / "old.db"), str(tmp_path / "new.db")])
    assert result.exit_code == 0, result.output
    assert split(result.output)[1] == EXPECTED


def test_a_build_writes_the_changes_since_the_release_it_replaces(data_pair, tmp_path):
    old, new = data_pair
    db = tmp_path / "computekb.db"
    build_database(old, db, cache=False)
    assert not changes_path(db).exists(), "nothing to compare the first build with"
    build_database(new, db, cache=False)
    assert changes_path(db) == tmp_path / "computekb.changes.txt"
    written = changes_path(db).read_text(encoding="utf-8")
    assert split(written)[1] == EXPECTED
    build_database(new, db, cache=False)
    assert changes_path(db).read_text(encoding="utf-8") == written, "the same release rebuilt keeps its list"


def test_two_builds_of_the_same_data_differ_in_nothing(data_pair, tmp_path):
    old, _ = data_pair
    build_database(old, tmp_path / "a.db", cache=False)
    build_database(old, tmp_path / "b.db", cache=False)
    result = CliRunner().invoke(cli, ["diff", str(tmp_path / "a.db"), str(tmp_path / "b.db")])
    assert split(result.output)[1] == "No value changed.\n"


def test_a_full_disk_while_listing_the_changes_leaves_release_and_list_as_they_were(data_pair, tmp_path, monkeypatch):
    """The list is staged beside the database and renamed after it: a failure before the release is
    published never leaves a list for a release that was not published, nor a cut-off one."""
    import errno

    import etl.build
    from etl.build import DiskFullError

    old, new = data_pair
    db = tmp_path / "computekb.db"
    build_database(new, db, cache=False)
    build_database(old, db, cache=False)
    database, listed = db.read_bytes(), changes_path(db).read_bytes()
    synced = etl.build.fsync

    def full_disk_for_the_list(path):
        if str(path).endswith(".changes.tmp"):
            raise OSError(errno.ENOSPC, "No space left on device")
        synced(path)

    monkeypatch.setattr(etl.build, "fsync", full_disk_for_the_list)
    with pytest.raises(DiskFullError):
        build_database(new, db, cache=False)
    assert (db.read_bytes(), changes_path(db).read_bytes()) == (database, listed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["computekb.changes.txt", "computekb.db"]


def another_schema(path):
    """An SQLite database with an accelerators table, but none of a release's others."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("create table accelerators (slug text)")
        conn.commit()


def no_release_named(path):
    """The tables every release has, and a release table naming no 12-hex-digit release."""
    with closing(sqlite3.connect(path)) as conn:
        for table in ("accelerators", "sources", "citations"):
            conn.execute(f"create table {table} (slug text)")
        conn.execute("create table release (data_release text)")
        conn.execute("insert into release values ('$(touch x)')")
        conn.commit()


def damaged(path, release):
    """The release with 4 KB of its middle overwritten."""
    data = release.read_bytes()
    middle = len(data) // 2
    path.write_bytes(data[:middle] + b"\xff" * 4096 + data[middle + 4096:])


@pytest.mark.parametrize(("make", "why"), [
    (lambda path, release: path.write_text("old.db\n", encoding="utf-8"), "not an SQLite database"),
    (lambda path, release: path.write_bytes(b""), "an empty file"),
    (lambda path, release: path.write_bytes(release.read_bytes()[:8192]), "a damaged database"),
    (damaged, "a damaged database"),
    (lambda path, release: another_schema(path), "no table release, sources, citations"),
    (lambda path, release: no_release_named(path), "no data release named in it"),
])
def test_diff_refuses_a_file_that_is_not_a_release_naming_it(data_pair, tmp_path, make, why):
    release = tmp_path / "release.db"
    build_database(data_pair[0], release, cache=False)
    given = tmp_path / "given.db"
    make(given, release)
    for arguments in ([given, release], [release, given]):
        result = CliRunner().invoke(cli, ["diff", *map(str, arguments)])
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert result.output.startswith(f"Error: {given}: {why}"), result.output
        assert result.output.endswith(": not a computekb release (a database `computekb build` wrote)\n")
        assert "Traceback" not in result.output and "Changes from" not in result.output


def test_diff_refuses_a_device():
    result = CliRunner().invoke(cli, ["diff", "/dev/null", "/dev/null"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: /dev/null: not a regular file: not a computekb release")
