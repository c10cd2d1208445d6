"""Measured results (MLPerf Inference summaries), their rooflines, the decode_efficiency calibration and
achieved rates, on the fixture data (tests/fixture/data/benchmarks, made from tests/fixture/mlperf by the
importer). Expected values are worked out by hand in the comments."""

import re
import sqlite3
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from computekb.cli import cli
from domain.roofline import BenchmarkWorkload, batch_regime, weight_bits, with_prefill
from etl.mlperf import (
    Summary,
    SummaryError,
    average_power,
    check_power,
    details_url,
    power_window,
    split_target,
    total_accelerators,
    weights_as_run,
    whole,
)
from etl.report import RoundCoverage, measured_coverage
from serving.measured import Benchmark, ResultRow, by_round, shown

FIXTURE = Path(__file__).parent / "fixture"
IMPORT_ARGS = ["--summary", str(FIXTURE / "mlperf" / "summary_results.json"), "--round", "v1.0",
               "--repository", "mlcommons/inference_results_v1.0",
               "--commit", "0123456789abcdef0123456789abcdef01234567", "--retrieved", "2026-12-01",
               "--model", "tiny-dense=tiny-dense"]
# The roofline of tiny-dense (2 layers, hidden 1000, 8 heads and 8 KV heads of 125, FFN 3000, vocabulary 1000,
# untied) on acme-x1 (96 GB printed, read as GiB: 103.08 GB; 4.8 TB/s; no dense figure, so no compute roof),
# 8 accelerators per node, FP8 weights and KV, the fixture's workload of 4,096 output tokens per sample (a
# sequence holds half of them on average: 2,048 tokens; no prompt length, so no prefill), vLLM's reserve:
#   TP 1, the narrowest that holds the model. Weights: attention 2 × 4 × 1000 × 1000 = 8,000,000 B; FFN
#   2 × 3 × 1000 × 3000 = 18,000,000 B; embedding and head 2 × 1000 × 1000 = 2,000,000 B: 28,000,000 B.
#   vLLM on a device of 70 GiB or more: headroom 8% of 103.08e9 = 8,246,400,000 B; activation peak the larger
#   of 8,192 × (4 × 1000 + 2 × 1000 + 2 × 3000) × 2 = 196,608,000 B and 1,024 × 1000 × 38.67 = 39,598,080 B;
#   non-torch 0.13 GiB = 139,586,437 B. KV pool 103.08e9 − 8,246,400,000 − 28,000,000 − 196,608,000
#   − 139,586,437 = 94,469,405,563 B; KV per sequence 2 × 2 × 8 × 125 × 2048 × 1 B = 8,192,000 B: batch 11,531.
#   A step reads 8,000,000 + 18,000,000 + 1,000,000 (head) + 11,531 × 8,192,000 = 94,488,952,000 B:
#   0.01968520 s at 4.8e12 B/s, so 11,531 / 0.01968520 = 585,770.07 tokens/s on the one accelerator.
ROOFLINE = 585770.07


@pytest.fixture(scope="module")
def db(fixture_db):
    conn = sqlite3.connect(f"file:{fixture_db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    yield conn
    conn.close()


def result(db, slug):
    return db.execute("select * from benchmark_results where slug = ?", (slug,)).fetchone()


def test_importer_writes_the_committed_fixture(tmp_path):
    """Re-importing the fixture summary gives the data file the fixture holds, byte for byte."""
    (tmp_path / "aliases").mkdir()
    (tmp_path / "aliases" / "mlperf.yml").write_bytes((FIXTURE / "data" / "aliases" / "mlperf.yml").read_bytes())
    out = CliRunner().invoke(cli, ["import", "mlperf", *IMPORT_ARGS, "--data", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "8 results" in out.output and "unmapped: Zeta Z9" in out.output
    written = tmp_path / "benchmarks" / "mlperf-inference-v1-0.yml"
    assert written.read_text() == (FIXTURE / "data" / "benchmarks" / "mlperf-inference-v1-0.yml").read_text()
    records = yaml.safe_load(written.read_text())["benchmark_results"]
    first = records[0]
    assert (first["slug"], first["benchmark"], first["accuracy_target"], first["model"]) == (
        "mlperf-1-0-0001-tiny-dense-99-offline", "tiny-dense", "99", "tiny-dense")
    assert first["total_accelerators"] == {"value": 8, "kind": "derived", "note": "accelerators per node (a#) × nodes, as stated"}
    assert "accelerator_name" not in records[-1] and "accelerators_per_node" not in records[-1]  # "" in the summary
    assert records[4]["note"] == "The summary marks this result as inferred (inferred: 1)."


def test_importer_refuses_a_bad_model_option(tmp_path):
    out = CliRunner().invoke(cli, ["import", "mlperf", *IMPORT_ARGS, "--model", "nothing", "--data", str(tmp_path)])
    assert out.exit_code == 2 and "BENCHMARK=SLUG" in out.output


def test_summary_fields():
    assert split_target("llama2-70b-99.9") == ("llama2-70b", "99.9")
    assert split_target("3d-unet-99") == ("3d-unet", "99")
    assert split_target("llama3.1-405b") == ("llama3.1-405b", None)
    assert split_target("gpt-oss-120b") == ("gpt-oss-120b", None)
    assert [whole(v) for v in (8, 8.0, "8", "", None)] == [8, 8, 8, None, None]
    with pytest.raises(ValueError):
        whole(2.5)
    summary = Summary("v6.0", "mlcommons/inference_results_v6.0", "ab" * 20, "summary_results.json", "2026-12-02")
    assert details_url(summary, "./closed/AMD/results/8xMI355X/llama2-70b-99/Offline/performance/run_1") == (
        "https://github.com/mlcommons/inference_results_v6.0/tree/main/closed/AMD/results/8xMI355X")
    assert summary.url == f"https://github.com/mlcommons/inference_results_v6.0/blob/{'ab' * 20}/summary_results.json"


def test_weight_bits_take_the_narrowest_stated_format():
    bits = {"bf16": 16, "fp16": 16, "fp32": 32, "fp8": 8, "fp8-e4m3": 8, "fp4": 4, "mxfp4": 4.25}
    assert weight_bits("BF16/F32/F8_E4M3/U8", bits) == 8
    assert weight_bits("fp8,bf16", bits) == 8
    assert weight_bits("bf16, fp8, fp4", bits) == 4
    assert weight_bits("MXFP4", bits) == 4.25
    assert weight_bits("UNSET", bits) is None
    assert weight_bits(None, bits) is None
    assert [batch_regime(s) for s in ("Offline", "Server", "Interactive", "SingleStream", "MultiStream")] == [
        "large-batch", "large-batch", "large-batch", "batch-1", None]


def test_a_sample_holds_its_prompt_and_half_its_output_while_it_decodes():
    assert BenchmarkWorkload(294.45, None).decode_context == 147      # 294.45 / 2 = 147.2
    assert BenchmarkWorkload(100, 1000).decode_context == 1050        # 1,000 + 100 / 2


def test_prefill_takes_its_share_of_the_layout_time():
    # 500 output tokens at 1,000 tokens/s take 0.5 s, the prompt 0.5 s more: 500 tokens in 1 s
    assert with_prefill(1000, 0.5, 500) == 500
    assert with_prefill(1000, 0.0, 500) == 1000


V4_1 = Summary("v4.1", "mlcommons/inference_results_v4.1", "ab" * 20, "summary_results.json", "2026-12-02")


def summary_row(**values):
    return {"Model": "llama2-70b-99", "weight_data_types": "fp16", "Software": "TensorRT 10.2.0, CUDA 12.4",
            "Accelerator": "NVIDIA H100-SXM-80GB", **values}


def test_weights_as_run_where_the_submitters_documents_say_so():
    """NVIDIA's v4.1 TensorRT rows state fp16 and ran FP8, FP4 on Blackwell; other rows keep their format."""
    hopper = weights_as_run(V4_1, summary_row(), "llama2-70b")
    assert (hopper["value"], hopper["kind"], hopper["source"]) == ("fp8", "derived", "mlperf-inference-v4-1-nvidia-calibration")
    assert weights_as_run(V4_1, summary_row(Accelerator="NVIDIA B200-SXM-180GB"), "llama2-70b")["value"] == "fp4"
    assert weights_as_run(V4_1, summary_row(Model="mixtral-8x7b"), "mixtral-8x7b")["value"] == "fp8"
    assert weights_as_run(V4_1, summary_row(Software="vLLM 0.5.2"), "llama2-70b") is None       # not NVIDIA's harness
    assert weights_as_run(V4_1, summary_row(weight_data_types="fp8"), "llama2-70b") is None      # stated as run
    assert weights_as_run(V4_1, summary_row(Model="gptj-99"), "gptj") is None                    # no document read
    v5_1 = Summary("v5.1", "mlcommons/inference_results_v5.1", "ab" * 20, "summary_results.json", "2026-12-02")
    assert weights_as_run(v5_1, summary_row(), "llama2-70b") is None


def test_a_cluster_counts_the_accelerators_its_name_states():
    """AMD's "(x87)" cluster: 87 GPUs, where the summary counts 8 per node × 11 nodes = 88."""
    count = total_accelerators({"Accelerator": "AMD Instinct MI355X 288GB HBM3e (x87)", "Total Accelerators": 88}, 8, 11)
    assert count["value"] == 87 and count["kind"] == "derived" and "88" in count["note"]
    mixed = {"Accelerator": "AMD Instinct MI300X 192GB HBM3 (x8) and AMD Instinct MI325X 256GB HBM3e (x8)",
             "Total Accelerators": 16}
    assert total_accelerators(mixed, 8, 2) == 16   # two kinds named: the summary's count stands
    assert total_accelerators({"Accelerator": "AMD Instinct MI355X 288GB HBM3e (Power Cap 1000 W)"}, 8, 1) == {
        "value": 8, "kind": "derived", "note": "accelerators per node (a#) × nodes, as stated"}


DETAIL = """:::MLLOG {"key": "effective_scenario", "value": "Offline", "time_ms": 1.0}
:::MLLOG {"key": "power_begin", "value": "07-28-2025 08:14:05.414", "time_ms": 2.0}
:::MLLOG {"key": "power_end", "value": "07-28-2025 08:14:09.000", "time_ms": 2.0}
"""
SAMPLES = "\n".join(f"Time,{time},Watts,{watts},Volts,211.0,Amps,4.6,PF,0.98,Mark,testing" for time, watts in (
    ("07-28-2025 08:14:04.500", 1000),   # before the window
    ("07-28-2025 08:14:05.414", 5000),   # at its begin: the checker keeps samples strictly inside
    ("07-28-2025 08:14:06.000", 2800),
    ("07-28-2025 08:14:07.000", 0),      # no reading
    ("07-28-2025 08:14:07.500", 2900),
    ("07-28-2025 08:14:08.000", 3030),
    ("07-28-2025 08:14:09.000", 9000),   # at its end
)) + "\nError,the analyzer's other lines are skipped\n"


def test_average_power_as_the_submission_checker_computes_it():
    """Three samples strictly inside the window and above zero: (2,800 + 2,900 + 3,030) / 3 = 2,910 W."""
    window = power_window(DETAIL)
    assert (window.begin.second, window.begin.microsecond, window.end.second) == (5, 414000, 9)
    assert average_power(SAMPLES, window) == 2910.0
    assert average_power(SAMPLES.replace("08:14:0", "09:14:0"), window) is None   # no sample in the window
    with pytest.raises(SummaryError, match="power_end"):
        power_window(DETAIL.replace("power_end", "power_stop"))


def test_a_power_result_is_checked_not_kept():
    """The summary's power figure is checked (power_results recomputes it from the files): a number in a known
    unit, or none."""
    assert check_power({"Power_Result": 10400.9988793425, "Power_Units": "Watts"}) is None
    assert check_power({"Power_Result": None, "Power_Units": None}) is None
    with pytest.raises(ValueError, match="kWh"):
        check_power({"Power_Result": 1.0, "Power_Units": "kWh"})
    with pytest.raises(ValueError, match="Power_Result: 'high' is not a result"):
        check_power({"Power_Result": "high", "Power_Units": "Watts"})


def test_every_value_cites_the_summary_as_a_measurement(db):
    cited = db.execute("""select field, kind, tier, source from citations
                          where table_name = 'benchmark_results' and row_slug = 'mlperf-1-0-0001-tiny-dense-99-offline'
                          order by field""").fetchall()
    assert [tuple(c) for c in cited] == [
        ("accelerators_per_node", "measured", "independent-measurement", "mlperf-inference-v1-0-summary"),
        ("nodes", "measured", "independent-measurement", "mlperf-inference-v1-0-summary"),
        ("result", "measured", "independent-measurement", "mlperf-inference-v1-0-summary"),
        ("total_accelerators", "derived", "independent-measurement", "mlperf-inference-v1-0-summary"),
    ]


def test_roofline_of_a_result(db):
    offline, server = result(db, "mlperf-1-0-0001-tiny-dense-99-offline"), result(db, "mlperf-1-0-0003-tiny-dense-99-server")
    assert offline["roofline_per_accelerator"] == ROOFLINE
    assert offline["roofline_share"] == 0.2049        # 120,000 / 585,770.07
    assert server["roofline_share"] == 0.4097         # 240,000 / 585,770.07
    assert offline["roofline_basis"] == ("TP 1, batch 11531 at 2048 tokens; 4096 output tokens per sample, no prefill "
                                         "(no mean prompt length); weights 8 bits, KV 8 bits, 103.08 GB at 4800 GB/s")
    # no roofline: a latency, an unmapped accelerator, weights in formats the fixture does not know (bf16, fp8-e4m3)
    for slug in ("mlperf-1-0-0004-tiny-dense-99-singlestream", "mlperf-1-0-0006-tiny-dense-99-offline",
                 "mlperf-1-0-0007-tiny-dense-99-offline"):
        assert result(db, slug)["roofline_share"] is None, slug


def test_decode_efficiency(db):
    """The best closed, available result of each group (Offline: 120,000 beats 60,000; Server: 240,000):
    median of 0.2049 and 0.4097 = 0.3073, over 2 results; beta-b1 has no family and no roofline."""
    rows = [dict(r) for r in db.execute("select * from decode_efficiency")]
    assert [(r["accelerator_family"], r["model_class"], r["batch_regime"], r["efficiency"], r["results"]) for r in rows] == [
        ("Acme One", "dense-small", "large-batch", 0.3073, 2)]
    assert "median of measured ÷ roofline" in rows[0]["basis"]
    columns = [c[1] for c in db.execute("pragma table_info(decode_efficiency)")]
    assert columns == ["accelerator_family", "model_class", "batch_regime", "efficiency", "results", "basis"]


def test_achieved_rates_beside_the_peak(db):
    rows = {r["slug"]: dict(r) for r in db.execute("select * from achieved_vs_peak")}
    assert (rows["acme-x1-hbm-copy"]["achieved"], rows["acme-x1-hbm-copy"]["peak"],
            rows["acme-x1-hbm-copy"]["percent_of_peak"]) == (4200, 4800, 87.5)   # 4.2 of 4.8 TB/s
    # no dense FP8 matrix figure for acme-x1 in the fixture: no percentage rather than a wrong one
    assert (rows["acme-x1-matmul-fp8"]["unit"], rows["acme-x1-matmul-fp8"]["peak"],
            rows["acme-x1-matmul-fp8"]["percent_of_peak"]) == ("TFLOPS", None, None)


def test_report_measured_section(fixture_db):
    conn = sqlite3.connect(fixture_db)
    try:
        coverage = measured_coverage(conn)
    finally:
        conn.close()
    # 8 rows: 5 mapped (1, 2, 3, 4, 7), 1 mixed (5), 1 unmapped (6), 1 with no accelerator named (8)
    assert coverage.rounds == [RoundCoverage("v1.0", 8, 5, 1, 1, 1)]
    assert round(coverage.rounds[0].mapped_share, 4) == 0.7143   # 5 of the 7 named
    assert [n.name for n in coverage.unmapped] == ["Zeta Z9"]
    assert [(n.name, n.note) for n in coverage.means_none] == [("Mixed X1 (x4), B1 (x4)", "A system mixing X1 and B1.")]
    assert coverage.measured == ["acme-x1", "beta-b1"] and coverage.unmeasured == ["acme-x2"]


def test_shown_numbers():
    assert [shown(v) for v in (120000, 90000.5, 7.2449, 0.0565)] == ["120,000", "90,000", "7.24", "0.0565"]


async def test_spec_sheet_measured_section(fixture_client):
    page = (await fixture_client.get("/computekb/accelerators/acme-x1")).text
    section = page[page.index('id="section-measured"'):page.index('id="section-articles"')]
    offline = section[section.index('data-benchmark="tiny-dense" data-scenario="Offline"'):]
    offline = offline[:offline.index("</tr>")]
    # best 120,000 (result v1.0-0001), median of 120,000 and 60,000, share 0.2049 of 585,770
    assert ">120,000</a>" in offline and "90,000, median of 2 results" in offline
    assert "20% <small>of a 586,000 tokens/s ceiling</small>" in offline
    assert "vendor-submitted, audited" in offline and "independent-measurement" not in offline
    assert 'href="/computekb/citations/benchmark-results-mlperf-1-0-0001-tiny-dense-99-offline-result"' in offline
    assert ('href="https://github.com/mlcommons/inference_results_v1.0/tree/main/closed/Acme/results/Sys1" '
            'rel="noopener">v1.0-0001</a>') in offline
    # the power result: 2,400 W for the system of 8, 300 W each; 960,000 tokens/s ÷ 2,400 W = 400 tokens per joule
    energy = section[section.index('class="measured-energy'):section.index('class="achieved-rates')]
    assert ('href="/computekb/citations/power-results-mlperf-1-0-0001-tiny-dense-99-offline-average-w"'
            in energy and ">2,400</a> <small>W</small>" in energy)
    assert "300 <small>W of system power</small>" in energy and "400 <small>tokens per joule</small>" in energy
    assert energy.count("<tr data-benchmark") == 1
    rates = section[section.index('class="achieved-rates'):]
    assert re.search(r'data-measure="memory-bandwidth".*?>4,200</a>.*?87\.5%', rates, re.S)
    assert "no dense figure stored" in rates


async def test_compare_measured_rows_like_with_like(fixture_client):
    page = (await fixture_client.get("/-/compare?ids=acme-x1,beta-b1")).text
    section = page[page.index('id="measured"'):page.index("<h2>Charts</h2>")]
    # tiny-dense 99% Offline v1.0 both have (acme-x1's best 120,000; beta-b1's 300); the rows one of them
    # lacks stay, the missing cell saying so
    rows = re.findall(r'<tr data-measure="([^"]+)".*?</tr>', section, re.S)
    assert rows[:2] == ["tiny-dense (99%) Offline, v1.0", "tiny-dense (99%) Server, v1.0"]
    assert ">120,000</a>" in section and ">300</a>" in section
    server = re.search(r'<tr data-measure="tiny-dense \(99%\) Server, v1.0">.*?</tr>', section, re.S).group(0)
    assert server.count('<small class="none">no result</small>') == 1
    alone = (await fixture_client.get("/-/compare?ids=acme-x2,acme-x1")).text
    alone = alone[alone.index('id="measured"'):alone.index("<h2>Charts</h2>")]
    assert "tiny-dense (99%) Offline, v1.0" in alone, "acme-x2 has no result: acme-x1's rows stay"


async def test_energy_per_accelerator_query(fixture_client):
    rows = (await fixture_client.get("/computekb/energy-per-accelerator.json?benchmark=tiny-dense&_shape=array")).json()
    # the one power result: 2,400 W for 8 accelerators (300 W each), 960,000 tokens/s over it: 400 tokens per joule
    assert [(r["accelerator"], r["system_watts"], r["watts_per_accelerator"], r["result_per_joule"]) for r in rows] == [
        ("acme-x1", 2400.0, 300.0, 400.0)]
    refused = await fixture_client.get("/computekb/energy-per-accelerator?benchmark=nope")
    assert refused.status_code == 400


async def test_measured_queries_answer_and_refuse_bad_parameters(fixture_client):
    rows = (await fixture_client.get("/computekb/measured-vs-roofline.json?benchmark=tiny-dense&scenario=Offline"
                                     "&_shape=array")).json()
    # the best Offline result of acme-x1 (120,000 beats 60,000); beta-b1's has no roofline
    assert [(r["accelerator"], r["result_id"], r["measured_per_accelerator"], r["roofline_share"]) for r in rows] == [
        ("acme-x1", "v1.0-0001", 120000.0, 0.2049)]
    best = (await fixture_client.get("/computekb/best-result-per-accelerator.json?benchmark=tiny-dense"
                                     "&scenario=Offline&_shape=array")).json()
    # acme-x1: best 120,000, median of 120,000 and 60,000; beta-b1: its one result
    assert [(r["accelerator"], r["best_per_accelerator"], r["median_per_accelerator"], r["results"]) for r in best] == [
        ("acme-x1", 120000, 90000, 2), ("beta-b1", 300, 300, 1)]
    for query in ("benchmark=nope", "benchmark=tiny-dense&scenario=Sideways", "benchmark=&round=v1.0"):
        response = await fixture_client.get(f"/computekb/best-result-per-accelerator?{query}")
        assert response.status_code == 400, query
    refused = await fixture_client.get("/computekb/measured-vs-roofline?benchmark=tiny-dense&round=v9")
    assert refused.status_code == 400 and "round &#39;v9&#39; is not one of: v1.0" in refused.text


def test_decode_efficiency_is_calibrated_by_model_class(conn):
    """Dense models by computed size (under 20B, to 200B, above), MoE apart (the real models)."""
    classes = dict(conn.execute("select slug, model_class from models where slug in "
                                "('llama-3-1-8b', 'llama-3-1-70b', 'llama-3-1-405b', 'deepseek-v3')"))
    assert classes == {"llama-3-1-8b": "dense-small", "llama-3-1-70b": "dense-medium",
                       "llama-3-1-405b": "dense-large", "deepseek-v3": "moe"}


def measured_row(benchmark, round_number, share, results=1, units="Tokens/s", ceiling=None):
    best = {"units": units, "round_number": round_number, "roofline_share": share, "roofline_per_accelerator": ceiling}
    return ResultRow(Benchmark(benchmark, None, "Offline", f"v{round_number}"), units, best, 100.0, results)


def test_the_sheet_shows_a_round_each_the_most_telling_result_first():
    rows = [measured_row("gpt-oss-120b", 6.0, 0.047), measured_row("whisper", 6.0, None, units="Samples/s"),
            measured_row("llama2-70b", 5.1, 0.48, results=10), measured_row("mixtral-8x7b", 5.1, None)]
    rounds = by_round(rows)
    # v5.1 holds the highest share (48%), so it comes first; within v6.0 the tokens/s result before whisper's
    assert [(r.name, [row.key.benchmark for row in r.rows]) for r in rounds] == [
        ("v5.1", ["llama2-70b", "mixtral-8x7b"]), ("v6.0", ["gpt-oss-120b", "whisper"])]


def test_a_median_of_one_result_is_said_in_words_and_a_ceiling_to_three_digits():
    assert measured_row("x", 6.0, None).median_words == "the only result"
    assert measured_row("x", 6.0, None, results=7).median_words == "100, median of 7 results"
    assert measured_row("x", 6.0, 0.31, ceiling=14359.7).ceiling_shown == "14,400"
    assert measured_row("x", 6.0, 0.31, ceiling=77.06).ceiling_shown == "77.1"
