"""MLPerf power results: the importer's average power and energy per query (etl/mlperf_power.py), what it does
with missing and bad files, and the derived columns of the build. Expected values are worked by hand."""

import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from computekb.cli import cli
from domain.energy import electricity_usd_per_million_tokens, rental_usd_per_million_tokens
from etl.mlperf import Summary
from etl.mlperf_power import power_figures, run_folder, run_log, write_power
from serving.measured import usd

FIXTURE = Path(__file__).parent / "fixture"
RUN = FIXTURE / "mlperf" / "results" / "closed/Acme/results/Sys1/tiny-dense-99/Offline/performance/run_1"
SUMMARY = Summary("v1.0", "mlcommons/inference_results_v1.0", "0123456789abcdef0123456789abcdef01234567",
                  "summary_results.json", "2026-12-01")


def test_average_power_of_the_fixture_run():
    """The window is 10:00:00.500 to 10:00:04.500 (4 s). Of the six samples, 10:00:00 and 10:00:05 fall outside
    it and 10:00:02 reads 0 W; the checker keeps 2,300, 2,400 and 2,500 W: (2,300 + 2,400 + 2,500) / 3 = 2,400 W."""
    log = run_log((RUN / "mlperf_log_detail.txt").read_text())
    figures = power_figures("Offline", (RUN / "spl.txt").read_text(), log)
    assert (figures.samples, figures.window_s, figures.average_w, figures.energy_mj_per_query) == (3, 4.0, 2400.0, None)


def test_energy_per_query_of_the_latency_scenarios():
    """SingleStream: 2,400 W × 4 s × 1000 / 800 queries = 12,000 mJ a query. A MultiStream result whose run was
    SingleStream counts 8 samples a query, as the checker does: 96,000 mJ."""
    detail, samples = (RUN / "mlperf_log_detail.txt").read_text(), (RUN / "spl.txt").read_text()
    single = run_log(detail.replace('"Offline"', '"SingleStream"'))
    assert power_figures("SingleStream", samples, single).energy_mj_per_query == 12000.0
    assert power_figures("MultiStream", samples, single).energy_mj_per_query == 96000.0
    assert power_figures("MultiStream", samples, run_log(detail.replace('"Offline"', '"MultiStream"'))) \
        .energy_mj_per_query == 12000.0


def test_run_folder_from_either_form_of_location():
    assert run_folder("closed/A/results/S/bert-99/Offline") == "closed/A/results/S/bert-99/Offline/performance/run_1"
    assert run_folder("./closed/A/results/S/bert-99/Offline/performance/run_1") == \
        "closed/A/results/S/bert-99/Offline/performance/run_1"


def power_row(system, watts=2400.0, scenario="Offline"):
    return {"ID": "1.0-0009", "Category": "closed", "Suite": "datacenter", "Submitter": "Acme", "System": system,
            "Accelerator": "Acme X1-96GB", "a#": 8, "Nodes": 1, "Model": "tiny-dense-99", "Scenario": scenario,
            "Performance_Result": 960000.0, "Performance_Units": "Tokens/s", "has_power": True,
            "Power_Result": watts, "Power_Units": "Watts", "Location": f"closed/Acme/results/{system}/tiny-dense-99/"
            f"{scenario}"}


def copy_run(root, system, spl, detail=None):
    run = root / f"closed/Acme/results/{system}/tiny-dense-99/Offline/performance/run_1"
    run.mkdir(parents=True)
    (run / "spl.txt").write_text(spl)
    (run / "mlperf_log_detail.txt").write_text(detail or (RUN / "mlperf_log_detail.txt").read_text())


def test_bad_and_missing_power_files_are_listed_with_the_reason(tmp_path):
    """Every result with power is loaded or listed: no files, no window, no sample in it, a line not the
    analyzer's. One whose summary figure differs is loaded with a note saying both."""
    spl, detail = (RUN / "spl.txt").read_text(), (RUN / "mlperf_log_detail.txt").read_text()
    results = tmp_path / "results"
    copy_run(results, "Good", spl)
    copy_run(results, "Differs", spl)
    copy_run(results, "NoWindow", spl, detail.replace("power_end", "power_stop"))
    copy_run(results, "Outside", spl.replace("12-01-2026", "12-02-2026"))
    copy_run(results, "Garbled", spl.replace("Watts,2400.000000", "Watts,lots"))
    rows = [power_row("Good"), power_row("Differs", watts=2600.0), power_row("Missing"), power_row("NoWindow"),
            power_row("Outside"), power_row("Garbled"), {**power_row("NoPower"), "has_power": False}]
    imported = write_power(SUMMARY, rows, results, tmp_path / "data")
    assert imported.loaded == 2
    reasons = [skipped.reason for skipped in imported.skipped]
    assert len(reasons) == 4
    assert reasons[0] == "no spl.txt or mlperf_log_detail.txt in closed/Acme/results/Missing/tiny-dense-99/Offline/" \
                         "performance/run_1"
    assert "no power_end" in reasons[1]
    assert "no sample inside the run's window" in reasons[2]
    assert "could not convert string to float: 'lots'" in reasons[3]
    written = yaml.safe_load(imported.path.read_text())
    assert [r.get("note") for r in written["power_results"]] == [
        None, "The summary's Power_Result is 2600 Watts; the files give 2400."]
    assert imported.path.read_text().count("# Not loaded: 1.0-0009 tiny-dense-99 Offline: ") == 4


def test_the_importer_writes_the_committed_power_fixture(tmp_path):
    """`import mlperf --results` gives the fixture's power file byte for byte, and says what it loaded."""
    args = ["--summary", str(FIXTURE / "mlperf" / "summary_results.json"), "--round", "v1.0",
            "--repository", "mlcommons/inference_results_v1.0", "--commit", "0123456789abcdef0123456789abcdef01234567",
            "--retrieved", "2026-12-01", "--model", "tiny-dense=tiny-dense", "--results", str(FIXTURE / "mlperf" / "results")]
    out = CliRunner().invoke(cli, ["import", "mlperf", *args, "--data", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "1 power results, 0 not loaded." in out.output
    written = tmp_path / "benchmarks" / "mlperf-power-v1-0.yml"
    assert written.read_text() == (FIXTURE / "data" / "benchmarks" / "mlperf-power-v1-0.yml").read_text()


def test_power_columns_of_the_fixture(fixture_db):
    """2,400 W over 8 accelerators: 300 W each; 960,000 tokens/s ÷ 2,400 W = 400 tokens per joule."""
    conn = sqlite3.connect(f"file:{fixture_db}?mode=ro", uri=True)
    row = conn.execute("select accelerator, average_w, watts_per_accelerator, result_per_joule from power_results "
                       "where slug = 'mlperf-1-0-0001-tiny-dense-99-offline'").fetchone()
    kind = conn.execute("select kind from citations where table_name = 'power_results' and field = 'average_w'").fetchone()
    conn.close()
    assert row == ("acme-x1", 2400.0, 300.0, 400.0)
    assert kind == ("measured",)


@pytest.mark.parametrize("slug, watts", [
    ("mlperf-5-1-0061-llama2-70b-99-offline", 10401.0),   # Lenovo SR680a V3, 8 × B200: the summary's 10,400.999 W
    ("mlperf-4-1-0049-llama2-70b-99-offline", 6152.98),   # NVIDIA's 8 × H200 MaxQ: the summary's 6,152.984 W
])
def test_real_power_results_agree_with_the_summaries(slug, watts):
    data = Path(__file__).parent.parent / "data" / "benchmarks"
    records = {r["slug"]: r for path in data.glob("mlperf-power-*.yml")
               for r in yaml.safe_load(path.read_text())["power_results"]}
    assert records[slug]["average_w"] == watts and "note" not in records[slug]


def test_cost_of_a_million_tokens():
    """400 tokens per joule: a million tokens take 2,500 J = 2,500 / 3,600,000 kWh, at $0.36/kWh $0.00025.
    120,000 tokens/s per accelerator make 432 million tokens an hour: at $2.16 an hour, $0.005 a million."""
    assert electricity_usd_per_million_tokens(400, 0.36) == pytest.approx(0.00025)
    assert rental_usd_per_million_tokens(120_000, 2.16) == pytest.approx(0.005)
    assert [usd(v) for v in (0.0000694, 0.0025127, 0.1056, 6.64)] == ["$0.000069", "$0.0025", "$0.11", "$6.64"]


async def test_spec_sheet_energy_at_the_default_and_the_readers_price(fixture_client):
    """acme-x1's power result: 400 tokens per joule. At the fixture's default $0.10/kWh, 2,500 J = 0.000694 kWh:
    $0.000069 a million tokens; at $0.36, $0.00025. Rental: $2.50 an accelerator-hour over 120,000 tokens/s
    (432 million an hour): $0.0058. Beside it the datasheet's 700 W."""
    page = (await fixture_client.get("/computekb/accelerators/acme-x1")).text
    energy = page[page.index('id="energy"'):page.index('class="achieved-rates')]
    assert "whole-system wall power, not the chip's" in energy
    assert 'title="Citation of the datasheet power">700</a> <small>W</small>' in energy
    assert '<td data-label="Electricity per million tokens">$0.000069</td>' in energy
    assert '<td data-label="Rental per million tokens">$0.0058</td>' in energy
    assert 'href="/computekb/citations/electricity-prices-virginia-commercial-2023-usd-per-kwh">$0.1</a>' in energy
    set_by_reader = (await fixture_client.get("/computekb/accelerators/acme-x1?kwh_usd=0.36")).text
    assert '<td data-label="Electricity per million tokens">$0.00025</td>' in set_by_reader
    assert "your price, $0.36 per kWh" in set_by_reader
    for bad in ("abc", "0", "-1", "11", "nan"):
        refused = await fixture_client.get(f"/computekb/accelerators/acme-x1?kwh_usd={bad}")
        assert refused.status_code == 400 and "kwh_usd must" in refused.text, bad
    none = (await fixture_client.get("/computekb/accelerators/beta-b1")).text
    assert "No MLPerf result submitted with power names this accelerator." in none


async def test_energy_query_costs_a_million_tokens(fixture_client):
    """The query's electricity and rental columns, at the default $0.10 and at $0.36 a kWh (worked above)."""
    url = "/computekb/energy-per-accelerator.json?benchmark=tiny-dense&_shape=array"
    row, = (await fixture_client.get(url)).json()
    assert (row["kwh_usd"], row["electricity_usd_per_million_tokens"], row["rental_usd_per_million_tokens"]) == \
        (0.1, 0.000069, 0.0058)
    row, = (await fixture_client.get(url + "&kwh_usd=0.36")).json()
    assert row["electricity_usd_per_million_tokens"] == 0.00025
    refused = await fixture_client.get("/computekb/energy-per-accelerator?benchmark=tiny-dense&kwh_usd=lots")
    assert refused.status_code == 400


async def test_compare_energy_rows(fixture_client):
    """acme-x1's one LLM power result (400 tokens per joule, 2,400 W over 8: 300 W each) beside beta-b1's none."""
    page = (await fixture_client.get("/-/compare?ids=acme-x1,beta-b1")).text
    energy = page[page.index('class="compare-table compare-energy"'):]
    energy = energy[:energy.index("</table>")]
    assert energy.count('<tr data-energy="') == 1 and '<tr data-energy="tiny-dense (99%) Offline">' in energy
    assert ('href="/computekb/citations/power-results-mlperf-1-0-0001-tiny-dense-99-offline-average-w" '
            'title="Citation: the result\'s folder at MLCommons">400</a>') in energy
    assert "v1.0 · 300 W of system power per accelerator" in energy
    assert "no power result" in energy
    alone = (await fixture_client.get("/-/compare?ids=beta-b1,acme-x2")).text
    assert "compare-energy" not in alone


def test_the_build_refuses_a_bad_power_result(tmp_path):
    """A power result of no known result and a power of zero: each named at its file, line and field."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE / "data", data)
    path = data / "benchmarks" / "mlperf-power-v1-0.yml"
    path.write_text(path.read_text().replace("  result: mlperf-1-0-0001-tiny-dense-99-offline", "  result: mlperf-nope")
                    .replace("average_w: 2400.0", "average_w: 0"))
    out = CliRunner().invoke(cli, ["build", "-q", "--data", str(data), "--output", str(tmp_path / "kb.db")])
    assert out.exit_code != 0 and not (tmp_path / "kb.db").exists()
    assert "mlperf-power-v1-0.yml:16: result: 'mlperf-nope' is not a known benchmark_results slug" in out.output
    assert "mlperf-power-v1-0.yml:19: average_w: Input should be greater than 0" in out.output
