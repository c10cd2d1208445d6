"""The pipeline: located errors, atomic builds, repeatable output."""

import os
import shutil
import sqlite3
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from computekb.cli import cli, is_stale
from etl.build import OutputError, build_database, validate_data
from etl.problems import DataError

from conftest import FIXTURE_DATA

SOURCES = """
sources:
  - slug: vendor-page
    url: https://example.com/spec
    title: Example spec page
    publisher: Example
    kind: vendor-page
    tier: vendor-primary
    retrieved: 2026-12-01
vendors:
  - {slug: acme, name: Acme}
"""

ACCELERATOR = """
accelerators:
  - slug: acme-x1
    vendor: acme
    name: X1
    device_class: datacenter-gpu
    scope: device
    status: shipping
    source: vendor-page
    memory_gb: 96 GB
    memory_bandwidth_gbs: 4.8 TB/s
    tdp_w: 700 W
"""


def write(folder, files):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return folder


@pytest.fixture
def good(tmp_path):
    return write(tmp_path / "data", {"sources.yml": SOURCES, "specs/acme-x1.yml": ACCELERATOR})


def rows(db, sql):
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_units_are_converted_to_the_column_unit(good, tmp_path):
    db = tmp_path / "kb.db"
    build_database(good, db)
    assert rows(db, "select memory_gb, memory_bandwidth_gbs, tdp_w from accelerators") == [(96.0, 4800.0, 700.0)]


def test_every_number_gets_a_citation_row(good, tmp_path):
    db = tmp_path / "kb.db"
    build_database(good, db)
    cited = rows(db, "select field, source, kind, as_written from citations order by field")
    assert cited == [("memory_bandwidth_gbs", "vendor-page", "vendor-spec", "4.8 TB/s"),
                     ("memory_gb", "vendor-page", "vendor-spec", "96 GB"),
                     ("tdp_w", "vendor-page", "vendor-spec", "700 W")]


def test_broken_file_is_reported_with_path_line_and_field(good):
    write(good, {"specs/bad.yml": """
        accelerators:
          - slug: acme-x2
            vendor: acme
            name: X2
            device_class: datacenter-gpu
            scope: device
            status: shipping
            source: vendor-page
            memory_bandwidth_gbs: 4.8 GB
        """})
    problems = [str(p) for p in validate_data(good).problems]
    assert len(problems) == 1
    assert problems[0].endswith("bad.yml:10: memory_bandwidth_gbs: '4.8 GB' is in GB, which cannot be converted to GB/s "
                                "(write one of B/s, kB/s, MB/s, GB/s, TB/s, PB/s, KiB/s, MiB/s, GiB/s, TiB/s, PiB/s, "
                                "kbit/s, Mbit/s, Gbit/s, Tbit/s, Pbit/s)")


def test_validate_reports_every_problem_and_exits_1(good):
    write(good, {"specs/bad.yml": """
        accelerators:
          - slug: Acme_X2
            vendor: nobody
            name: X2
            device_class: gpu
            scope: device
            status: shipping
            memory_gb: 80 GB
        """})
    result = CliRunner().invoke(cli, ["validate", "--data", str(good)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if "bad.yml" in line]
    fields = sorted(line.split(": ")[1] for line in lines)
    assert fields == ["device_class", "slug", "vendor"]


def test_number_without_citation_is_an_error(good):
    write(good, {"specs/acme-x1.yml": ACCELERATOR.replace("    source: vendor-page\n", "")})
    problems = validate_data(good).problems
    numbers = [p for p in problems if p.field != "slug"]
    assert {p.field for p in numbers} == {"memory_gb", "memory_bandwidth_gbs", "tdp_w"}
    assert all("without a citation" in p.message for p in numbers)
    # and the page the record cited is now cited by nothing
    assert [p.message.split(":")[0] for p in problems if p.field == "slug"] == [
        "source 'vendor-page' is cited by no value, price, offer or claim and is no catalogued article"]


def test_failed_build_leaves_the_previous_database_untouched(good, tmp_path):
    db = tmp_path / "kb.db"
    build_database(good, db)
    before = db.read_bytes()
    write(good, {"specs/broken.yml": "accelerators: [\n"})
    with pytest.raises(DataError) as error:
        build_database(good, db)
    assert "broken.yml:1" in str(error.value.problems[0])
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["kb.db"], "the release is one file"


def test_build_cli_exits_1_and_keeps_database(good, tmp_path):
    db = tmp_path / "kb.db"
    runner = CliRunner()
    assert runner.invoke(cli, ["build", "--data", str(good), "--output", str(db)]).exit_code == 0
    before = db.read_bytes()
    write(good, {"specs/acme-x1.yml": ACCELERATOR.replace("700 W", "-700 W")})
    result = runner.invoke(cli, ["build", "--data", str(good), "--output", str(db)])
    assert result.exit_code == 1
    assert "acme-x1.yml:12: tdp_w:" in result.output
    assert db.read_bytes() == before


def test_same_data_gives_the_same_rows(tmp_path):
    from serving.paths import ROOT
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    build_database(ROOT / "data", first)
    build_database(ROOT / "data", second)
    tables = [t for (t,) in rows(first, "select name from sqlite_master where type='table' and name not like '%fts%'")]
    assert "accelerators" in tables
    for table in tables:
        if table != "release":
            assert rows(first, f"select * from [{table}] order by 1") == rows(second, f"select * from [{table}] order by 1"), table


def test_data_release_names_the_files_wherever_the_build_runs(good, tmp_path, monkeypatch):
    """Authors cite the release: the same files give the same one from any folder, the path written any way."""
    copy = shutil.copytree(good, tmp_path / "copy" / "data")
    (tmp_path / "elsewhere").mkdir()
    releases = []
    for cwd, data in ((good.parent, Path("data")), (tmp_path / "elsewhere", copy), (copy, Path("."))):
        monkeypatch.chdir(cwd)
        releases.append(build_database(data, tmp_path / f"{len(releases)}.db", cache=False)["release"])
    assert len(set(releases)) == 1
    (copy / "specs" / "acme-x1.yml").rename(copy / "specs" / "acme-x2.yml")
    assert build_database(copy, tmp_path / "renamed.db", cache=False)["release"] != releases[0]


def test_serve_rebuilds_when_the_files_differ_from_the_database(good, tmp_path):
    db = tmp_path / "kb.db"
    assert is_stale(db, good)
    build_database(good, db, cache=False)
    assert not is_stale(db, good)
    (good / "specs" / "acme-x1.yml").touch()  # saved again, unchanged
    assert not is_stale(db, good)
    (good / "specs" / "acme-x1.yml").unlink()  # no file is newer than the database
    assert is_stale(db, good)
    assert not is_stale(db, tmp_path / "no-data")  # no data folder: the database is served as it is


def test_a_source_whose_title_is_not_known_is_labelled_by_its_address(good, tmp_path):
    untitled = SOURCES.replace("    title: Example spec page\n", "").replace("https://example.com/spec", "https://example.com/spec/")
    write(good, {"sources.yml": untitled})
    db = tmp_path / "kb.db"
    build_database(good, db, cache=False)
    assert rows(db, "select title, label, label_derived from sources") == [
        (None, "example.com/spec", 1)]
    write(good, {"sources.yml": SOURCES})
    build_database(good, db, cache=False)
    assert rows(db, "select title, label, label_derived from sources") == [("Example spec page", "Example spec page", 0)]


def test_duplicate_slug_across_files_names_both(good):
    write(good, {"specs/copy.yml": ACCELERATOR})
    problems = [str(p) for p in validate_data(good).problems]
    assert len(problems) == 1
    assert "duplicate accelerators slug 'acme-x1'" in problems[0] and "first defined at" in problems[0]


def test_memory_is_the_number_the_vendor_prints_gib_or_gb(good, tmp_path):
    """DRAM capacities are binary: "192 GiB" is stored as 192, like "192 GB"; the citation keeps what was written."""
    write(good, {"specs/acme-x1.yml": ACCELERATOR.replace("96 GB", "192 GiB")})
    db = tmp_path / "kb.db"
    build_database(good, db)
    assert rows(db, "select memory_gb from accelerators") == [(192.0,)]
    assert rows(db, "select as_written from citations where field = 'memory_gb'") == [("192 GiB",)]


def test_a_citations_kind_follows_its_sources_tier(good, tmp_path):
    """A maker's own repository is vendor-primary: its figures are vendor specs, whoever hosts the page."""
    sources = SOURCES.replace("vendors:", """  - slug: model-config
    url: https://github.com/example-lab/model/blob/main/config.json
    title: config.json
    publisher: Example Lab (example-lab/model on GitHub)
    kind: documentation
    tier: vendor-primary
    retrieved: 2026-12-01
  - slug: press-report
    url: https://news.example.org/x1
    title: X1 report
    publisher: Example News
    kind: press
    tier: third-party
    retrieved: 2026-12-01
  - slug: lab-run
    url: https://bench.example.org/x1
    title: X1 measured
    publisher: Example Bench
    kind: benchmark
    tier: independent-measurement
    retrieved: 2026-12-01
vendors:""")
    accelerator = ACCELERATOR.replace("    tdp_w: 700 W\n", """    tdp_w: {value: 700 W, source: press-report}
    memory_gb: {value: 96 GB, source: model-config}
    memory_bandwidth_gbs: {value: 4.8 TB/s, source: lab-run}
""").replace("    memory_gb: 96 GB\n    memory_bandwidth_gbs: 4.8 TB/s\n", "")
    write(good, {"sources.yml": sources, "specs/acme-x1.yml": accelerator})
    db = tmp_path / "kb.db"
    build_database(good, db)
    assert rows(db, "select field, kind, tier from citations order by field") == [
        ("memory_bandwidth_gbs", "measured", "independent-measurement"),
        ("memory_gb", "vendor-spec", "vendor-primary"),
        ("tdp_w", "third-party", "third-party")]


def test_announced_and_available_dates_are_cited(good, tmp_path):
    write(good, {"specs/acme-x1.yml": ACCELERATOR.replace("    source: vendor-page\n", """    source: vendor-page
    announced: '2025-03'
    available: {value: '2025-06-02', source: vendor-page, note: First shipments.}
""")})
    db = tmp_path / "kb.db"
    build_database(good, db)
    assert rows(db, "select announced, available from accelerators") == [("2025-03", "2025-06-02")]
    assert rows(db, "select field, value, as_written, note from citations where field in ('announced', 'available') "
                    "order by field") == [("announced", None, "2025-03", None),
                                          ("available", None, "2025-06-02", "First shipments.")]


FORMATS = """
number_formats:
  - {slug: bf16, name: BF16, family: bf16, kind: float, bits: 16, source: vendor-page}
  - {slug: fp8, name: FP8, family: fp8, kind: family, bits: 8, source: vendor-page}
  - {slug: fp8-e4m3, name: FP8 E4M3, family: fp8, kind: float, bits: 8, source: vendor-page}
  - {slug: bfp8, name: BFP8, family: bfp, kind: block-scaled-float, bits: 8, exponent_bits: 0, block_size: 16,
     source: vendor-page}
"""


def test_fp8_speedup_is_dense_fp8_over_dense_bf16_matrix(good, tmp_path):
    """x1: 1979 ÷ 989.5 = 2 (the E4M3 row, the family's highest, not the sparse or vector ones); x2: FP8 at the
    BF16 rate is 1, stored and native; x3: a block format is no FP8 and no BF16 means no ratio; x4: no FP8."""
    write(good, {"specs/formats.yml": FORMATS, "specs/more.yml": """
        accelerators:
          - {slug: acme-x2, vendor: acme, name: X2, device_class: tpu-asic, scope: device, source: vendor-page}
          - {slug: acme-x3, vendor: acme, name: X3, device_class: ai-asic, scope: device, source: vendor-page}
          - {slug: acme-x4, vendor: acme, name: X4, device_class: ai-asic, scope: device, source: vendor-page}
        throughput:
          - {accelerator: acme-x1, precision: bf16, sparsity: dense, engine: matrix, tflops: 989.5 TFLOPS, source: vendor-page}
          - {accelerator: acme-x1, precision: fp8, sparsity: dense, engine: matrix, tflops: 1500 TFLOPS, source: vendor-page}
          - {accelerator: acme-x1, precision: fp8-e4m3, sparsity: dense, engine: matrix, tflops: 1979 TFLOPS, source: vendor-page}
          - {accelerator: acme-x1, precision: fp8, sparsity: sparse-2-4, engine: matrix, tflops: 3958 TFLOPS, source: vendor-page}
          - {accelerator: acme-x1, precision: fp8, sparsity: dense, engine: vector, tflops: 5000 TFLOPS, source: vendor-page}
          - {accelerator: acme-x2, precision: bf16, sparsity: dense, engine: matrix, tflops: 459 TFLOPS, source: vendor-page}
          - {accelerator: acme-x2, precision: fp8, sparsity: dense, engine: matrix, tflops: 459 TFLOPS, source: vendor-page}
          - {accelerator: acme-x3, precision: bfp8, sparsity: dense, engine: matrix, tflops: 664 TFLOPS, source: vendor-page}
          - {accelerator: acme-x4, precision: bf16, sparsity: dense, engine: matrix, tflops: 100 TFLOPS, source: vendor-page}
        """})
    db = tmp_path / "kb.db"
    build_database(good, db)
    assert rows(db, "select slug, fp8_speedup, native_fp8 from accelerators order by slug") == [
        ("acme-x1", 2.0, "yes"), ("acme-x2", 1.0, "yes"), ("acme-x3", None, "unknown"), ("acme-x4", None, "unknown")]
    assert rows(db, "select tflops from throughput where accelerator = 'acme-x2' and precision = 'fp8'") == [(459.0,)]


def test_a_shared_exponent_block_format_is_never_fp8(good):
    write(good, {"specs/formats.yml": FORMATS.replace("family: bfp,", "family: fp8,")})
    assert [str(p) for p in validate_data(good).problems] == [
        f"{good}/specs/formats.yml:6: family: 'fp8': the elements have no exponent of their own (a shared-exponent "
        "block format), so it is a family of its own (bfp), not a float family"]


def test_a_mirror_keeps_a_vendor_tier_only_for_a_named_document(good, tmp_path):
    mirrored = SOURCES.replace("    title: Example spec page\n", "").replace(
        "    url: https://example.com/spec\n",
        "    url: https://example.com/spec\n    read_via: https://mirror.example.org/example.com/spec\n")
    write(good, {"sources.yml": mirrored})
    assert [f"{p.field}: {p.message}" for p in validate_data(good).problems] == [
        "tier: vendor-primary read through a mirror (read_via) needs the title of the vendor document it copies "
        "verbatim; an unnamed copy is third-party"]
    write(good, {"sources.yml": mirrored.replace("tier: vendor-primary", "tier: third-party")})
    assert validate_data(good).problems == []
    write(good, {"sources.yml": mirrored.replace("    publisher:", "    title: Example spec page\n    publisher:")})
    db = tmp_path / "kb.db"
    build_database(good, db)
    assert rows(db, "select read_via, tier from sources") == [("https://mirror.example.org/example.com/spec", "vendor-primary")]


def test_a_derived_value_cites_the_sources_it_rests_on(tmp_path):
    """A dense figure derived from a sparse one rests on the sparse figure's page and the page stating the
    ratio: the second is the citation's basis, which counts as citing it."""
    data = shutil.copytree(Path(__file__).parent / "bad_inputs" / "_base" / "data", tmp_path / "data")
    (data / "sources" / "ratio.yml").write_text(textwrap.dedent("""\
        sources:
          - {slug: acme-ratio-page, url: https://example.com/acme-sparsity, title: Acme sparsity, publisher: Acme,
             kind: vendor-page, tier: vendor-primary, retrieved: 2026-12-01}
        """))
    (data / "specs" / "accelerators" / "acme-x3.yml").write_text(textwrap.dedent("""\
        accelerators:
          - slug: acme-x3
            vendor: acme
            name: X3
            device_class: datacenter-gpu
            scope: device
            tdp_w: {value: 350 W, source: acme-datasheet, kind: derived, basis: [acme-ratio-page], note: 700 / 2}
            source: acme-datasheet
        """))
    build_database(data, tmp_path / "kb.db")
    with sqlite3.connect(tmp_path / "kb.db") as db:
        row = db.execute("select source, kind, basis from citations where row_slug = 'acme-x3' and field = 'tdp_w'").fetchone()
    assert row == ("acme-datasheet", "derived", '["acme-ratio-page"]')


@pytest.mark.parametrize("make, what", [
    (lambda path: os.mkfifo(path), "is a named pipe"),
    (lambda path: path.symlink_to(path.with_name("elsewhere.db")), "is a symbolic link"),
])
def test_build_writes_only_to_a_regular_file_or_a_new_path(tmp_path, make, what):
    target = tmp_path / "target"
    make(target)
    result = CliRunner().invoke(cli, ["build", "--data", str(FIXTURE_DATA), "--output", str(target), "-q"])
    assert result.exit_code == 1
    assert f"{what}, not a regular file" in result.output and "was left as it was" in result.output
    assert not (tmp_path / "elsewhere.db").exists()


def test_build_refuses_a_folder_where_its_list_of_changes_goes(tmp_path):
    (tmp_path / "kb.changes.txt").mkdir()
    with pytest.raises(OutputError, match="kb.changes.txt is a folder, not a regular file"):
        build_database(FIXTURE_DATA, tmp_path / "kb.db", cache=False)
    assert not (tmp_path / "kb.db").exists()
