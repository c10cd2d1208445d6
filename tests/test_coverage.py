"""Coverage of the real data: every product a reader filters for LLM work is a
row, and the coverage report counts core values and their tiers correctly."""

import sqlite3

import pytest
from click.testing import CliRunner

from computekb.cli import cli
from etl.report import coverage, format_report

# The products the knowledge base must cover, by slug (one row per sold variant, per GPU).
REQUIRED = [
    "nvidia-v100-sxm2", "nvidia-v100-pcie", "nvidia-a100-sxm-40gb", "nvidia-a100-sxm-80gb", "nvidia-a100-pcie-40gb",
    "nvidia-a100-pcie-80gb", "nvidia-a10", "nvidia-a30", "nvidia-a40", "nvidia-l4", "nvidia-l40", "nvidia-l40s", "nvidia-h20",
    "nvidia-h100-pcie", "nvidia-h100-sxm", "nvidia-h100-nvl", "nvidia-gh200", "nvidia-h200-sxm", "nvidia-h200-nvl", "nvidia-b100",
    "nvidia-b200", "nvidia-gb200", "nvidia-b300", "nvidia-gb300", "nvidia-rubin",
    "nvidia-rtx-a6000", "nvidia-rtx-6000-ada", "nvidia-rtx-pro-6000-blackwell", "nvidia-rtx-pro-6000-blackwell-server",
    "nvidia-rtx-3090", "nvidia-rtx-4080", "nvidia-rtx-4090", "nvidia-rtx-5080", "nvidia-rtx-5090", "nvidia-dgx-spark",
    "nvidia-dgx-station", "nvidia-rtx-spark", "nvidia-jetson-orin-nano-super", "nvidia-jetson-orin-nx-16gb",
    "nvidia-jetson-agx-orin-64gb", "nvidia-jetson-agx-thor",
    "amd-mi210", "amd-mi250x", "amd-mi300a", "amd-mi300x", "amd-mi325x", "amd-mi350x", "amd-mi355x", "amd-mi455x",
    "amd-radeon-rx-7900-xtx", "amd-radeon-pro-w7900", "amd-ryzen-ai-max-plus-395",
    "google-tpu-v4", "google-tpu-v5e", "google-tpu-v5p", "google-tpu-v6e", "google-tpu-v7",
    "aws-trainium", "aws-trainium2", "aws-trainium3", "aws-inferentia2",
    "intel-gaudi-2", "intel-gaudi-3", "intel-arc-b580", "intel-arc-pro-b60",
    "apple-m2-ultra", "apple-m3-max", "apple-m3-ultra", "apple-m4-pro", "apple-m4-max",
    "qualcomm-cloud-ai-100", "tenstorrent-wormhole-n300", "tenstorrent-blackhole-p150a",
]
MINIMUM_ROWS = 110


def test_every_required_product_is_a_row(conn):
    present = {slug for (slug,) in conn.execute("select slug from accelerators")}
    assert sorted(set(REQUIRED) - present) == []


def test_at_least_the_minimum_number_of_accelerators(conn):
    (count,) = conn.execute("select count(*) from accelerators").fetchone()
    assert count >= MINIMUM_ROWS


@pytest.mark.xfail(strict=True, reason="a known gap: 19 of 112 rows have no bandwidth from a page that could be read "
                                        "(computekb report lists them); strict, so it fails once the gap is closed")
def test_memory_and_bandwidth_on_nearly_every_row(conn):
    total, both = conn.execute(
        "select count(*), sum(memory_gb is not null and memory_bandwidth_gbs is not null) from accelerators").fetchone()
    assert both >= 0.95 * total


@pytest.fixture
def tiny():
    """A hand-made database with only what the report reads: two vendors, three accelerators."""
    db = sqlite3.connect(":memory:")
    db.executescript("""
        create table accelerators (slug, vendor, device_class, memory_gb, memory_bandwidth_gbs, tdp_w,
                                   interconnect_gbs, launch_price_usd);
        create table prices (slug, accelerator, kind, currency, per_device_amount);
        create table throughput (slug, accelerator, precision, sparsity, engine, accumulate);
        create table citations (table_name, row_slug, field, tier);
        insert into accelerators values
          ('a1', 'acme', 'datacenter-gpu', 80, 3000, 700, 900, 10000),
          ('a2', 'acme', 'datacenter-gpu', 40, null, null, null, null),
          ('b1', 'beta', 'npu', null, null, 5, 100, 500);
        insert into prices values
          ('a1-launch', 'a1', 'launch-list', 'USD', 10000),
          ('a1-street', 'a1', 'street', 'USD', 10000),
          ('a1-launch-eur', 'a1', 'launch-list', 'EUR', 10000),
          ('b1-launch-kit', 'b1', 'launch-list', 'USD', 500),
          ('b1-list', 'b1', 'list', 'USD', 500);
        insert into citations values
          ('accelerators', 'a1', 'memory_gb', 'vendor-primary'),
          ('accelerators', 'a1', 'memory_bandwidth_gbs', 'third-party'),
          ('accelerators', 'a1', 'tdp_w', 'vendor-secondary'),
          ('accelerators', 'a2', 'memory_gb', 'third-party'),
          ('accelerators', 'b1', 'tdp_w', 'vendor-primary'),
          ('accelerators', 'a1', 'interconnect_gbs', 'vendor-secondary'),
          ('accelerators', 'b1', 'interconnect_gbs', 'third-party'),
          ('prices', 'a1-launch', 'amount', 'reference-dataset'),
          ('prices', 'a1-street', 'amount', 'vendor-primary'),
          ('prices', 'a1-launch-eur', 'amount', 'vendor-primary'),
          ('prices', 'b1-launch-kit', 'devices', 'vendor-primary'),
          ('prices', 'b1-launch-kit', 'amount', 'vendor-quoted'),
          ('prices', 'b1-list', 'amount', 'vendor-primary');
        insert into throughput values
          ('a1-fp8-dense-matrix', 'a1', 'fp8', 'dense', 'matrix', 'fp32'),
          ('a1-fp8-e4m3-dense-matrix', 'a1', 'fp8-e4m3', 'dense', 'matrix', 'fp32'),
          ('a1-fp8-sparse-matrix', 'a1', 'fp8', 'sparse-2-4', 'matrix', 'fp32'),
          ('a2-bf16-dense-vector', 'a2', 'bf16', 'dense', 'vector', 'fp32'),
          ('a2-fp16-dense-matrix-fp16-accumulate', 'a2', 'fp16', 'dense', 'matrix', 'fp16');
        insert into citations values
          ('throughput', 'a1-fp8-dense-matrix', 'tflops', 'third-party'),
          ('throughput', 'a1-fp8-e4m3-dense-matrix', 'tflops', 'vendor-primary'),
          ('throughput', 'a1-fp8-sparse-matrix', 'tflops', 'vendor-primary'),
          ('throughput', 'a2-bf16-dense-vector', 'tflops', 'vendor-primary'),
          ('throughput', 'a2-fp16-dense-matrix-fp16-accumulate', 'tflops', 'vendor-primary');
    """)
    return db


def test_report_counts_rows_values_and_tiers(tiny):
    acme, beta = coverage(tiny)
    assert (acme.vendor, acme.device_class, acme.rows) == ("acme", "datacenter-gpu", 2)
    assert acme.tiers["memory"] == {"vendor-primary": 1, "third-party": 1}
    assert acme.tiers["bandwidth"] == {"third-party": 1}
    assert acme.tiers["power"] == {"vendor-secondary": 1}
    # FP8 stated twice for a1 counts once, at the stronger tier; sparse, vector and FP16-accumulate rows never count.
    assert acme.tiers["fp8"] == {"vendor-primary": 1}
    assert acme.tiers["bf16/fp16"] == {}
    assert (beta.rows, beta.tiers["power"], beta.tiers["memory"]) == (1, {"vendor-primary": 1}, {})
    assert acme.tiers["interconnect"] == {"vendor-secondary": 1}
    # the launch price is the launch-list USD row's amount: neither a street, a EUR nor a later list price
    # counts, nor the citation of another field of the same row
    assert acme.tiers["launch price"] == {"reference-dataset": 1}
    assert beta.tiers["launch price"] == {"vendor-quoted": 1}


def test_report_text_gives_filled_counts_and_totals(tiny):
    lines = format_report(coverage(tiny))
    assert lines[0].split()[:3] == ["vendor", "class", "rows"]
    acme_line = next(line for line in lines if line.startswith("acme"))
    assert "2/2 (vp 1, tp 1)" in acme_line     # memory
    total_line = next(line for line in lines if line.startswith("all"))
    assert total_line.split()[1] == "3"          # rows in all
    assert "2/3 (vp 1, vs 1)" in total_line      # power: b1 vendor-primary, a1 vendor-secondary


def test_report_command_prints_the_real_database(db_path):
    result = CliRunner().invoke(cli, ["report", "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    (count,) = sqlite3.connect(db_path).execute("select count(*) from accelerators").fetchone()
    lines = result.output.splitlines()
    assert lines[lines.index("prices") - 5].split()[:2] == ["all", str(count)]
    priced = sqlite3.connect(db_path).execute("select count(*) from accelerators where launch_price_usd > 0").fetchone()
    assert f"accelerators with a launch price: {priced[0]}" in lines
    assert any(line.startswith("round  rows  mapped") for line in lines)  # the measured section


def test_report_gives_the_tier_mix_of_the_core_values(tiny):
    lines = format_report(coverage(tiny))
    # memory (vp, tp), bandwidth (tp), power (vs, vp), fp8 (vp), interconnect (vs, tp), launch price (rd, vq):
    # 10 stated, 6 on a vendor tier, 1 on the dataset
    assert lines[-2] == ("on a vendor tier, per core value: memory 50%, bandwidth 0%, power 100%, bf16/fp16 -, "
                         "fp8 100%, fp4 -, interconnect 50%, launch price 50%")
    assert lines[-1] == ("core values stated: 10; on a vendor tier (vp, vs, vq): 6 (60%); "
                         "on the reference dataset (rd): 1 (10%)")
