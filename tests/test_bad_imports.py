"""The importers refuse what the build would refuse, before writing anything: each bad input ends in one
line naming the input, its row and its field, exit 1, no traceback, and the data folder as it was."""

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from computekb.cli import cli

FIXTURE = Path(__file__).parent / "fixture"
SUMMARY = json.loads((FIXTURE / "mlperf" / "summary_results.json").read_text(encoding="utf-8"))
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def files_of(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(args, data, fragment):
    """Run `computekb args`: refused with one error line holding `fragment`, and `data` left as it was."""
    before = files_of(data)
    result = CliRunner().invoke(cli, [*args, "--data", str(data)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and fragment in lines[0], result.output
    assert files_of(data) == before


# MLPerf: the fixture's summary with one thing changed

def summary_text(change):
    rows = json.loads(json.dumps(SUMMARY))
    field, value = change
    rows[1][field] = value
    return json.dumps(rows, indent=1).replace('"RAW:', "").replace(':RAW"', "")


MLPERF_CASES = {
    "html": ("<html><body>404</body></html>", "not JSON: Expecting value at line 1 column 1"),
    "empty": ("", "not JSON: Expecting value at line 1 column 1"),
    "truncated": (json.dumps(SUMMARY, indent=1)[:700], "not JSON:"),
    "nested": (json.dumps([[row] for row in SUMMARY]), "row 1 : expected an object of the summary's columns"),
    "no rows": ("[]", "expected a list of rows"),
    "price as text": (summary_text(("Performance_Result", "fast")),
                      "row 2 (v1.0-0002): Performance_Result: 'fast' is not a result (a number above 0)"),
    "price beyond a float": (summary_text(("Performance_Result", "RAW:1e400:RAW")), "1e400 is beyond any float"),
    "NaN": (summary_text(("Performance_Result", "RAW:NaN:RAW")), "NaN is not a number JSON allows"),
    "negative": (summary_text(("Performance_Result", -2.49)), "Performance_Result: -2.49 is not a result"),
    "zero": (summary_text(("Performance_Result", 0)), "Performance_Result: 0 is not a result"),
    "half an accelerator": (summary_text(("a#", 0.5)), "row 2 (v1.0-0002): a#: not a whole number: 0.5"),
    # read, then refused by the build's own rule on the file it would write, traced to the summary's row
    "no accelerator per node": (summary_text(("a#", 0)),
                                "row 2 (v1.0-0002): accelerators_per_node: Input should be greater than or equal to 1"),
    "power as text": (json.dumps([{**SUMMARY[0], "Power_Result": "high"}, *SUMMARY[1:]]),
                      "row 1 (v1.0-0001): Power_Result: 'high' is not a result"),
}


def mlperf_args(summary, **options):
    values = {"round": "v1.0", "repository": "mlcommons/inference_results_v1.0", "commit": COMMIT,
              "retrieved": "2026-12-01", **options}
    return ["import", "mlperf", "--summary", str(summary), "--model", "tiny-dense=tiny-dense",
            *(part for name, value in values.items() for part in (f"--{name}", value))]


@pytest.fixture
def mlperf_data(tmp_path):
    """A data folder holding a previous import of the round, which a refused import must leave as it is."""
    data = tmp_path / "data"
    (data / "benchmarks").mkdir(parents=True)
    (data / "benchmarks" / "mlperf-inference-v1-0.yml").write_bytes(
        (FIXTURE / "data" / "benchmarks" / "mlperf-inference-v1-0.yml").read_bytes())
    return data


@pytest.mark.parametrize("case", MLPERF_CASES)
def test_mlperf_import_refuses_a_bad_summary(tmp_path, mlperf_data, case):
    text, fragment = MLPERF_CASES[case]
    summary = tmp_path / "summary_results.json"
    summary.write_text(text, encoding="utf-8")
    refused(mlperf_args(summary), mlperf_data, fragment)


@pytest.mark.parametrize(("options", "fragment"), [
    ({"commit": "$(touch pwned)"}, "--commit '$(touch pwned)': expected the full 40-hex-digit commit hash"),
    ({"commit": "0123456"}, "--commit '0123456': expected the full 40-hex-digit commit hash"),
    ({"repository": "mlcommons/x y"}, "--repository 'mlcommons/x y': expected owner/name"),
    ({"round": "v1.0; rm"}, "--round 'v1.0; rm': expected a round"),
    ({"retrieved": "2099-01-01"}, "--retrieved 2099-01-01: a date in the future"),
    ({"retrieved": "yesterday"}, "--retrieved 'yesterday': expected the date the summary was read"),
])
def test_mlperf_import_refuses_bad_citation_parts(mlperf_data, options, fragment):
    refused(mlperf_args(FIXTURE / "mlperf" / "summary_results.json", **options), mlperf_data, fragment)


def test_mlperf_import_reads_a_summary_with_a_byte_order_mark(tmp_path):
    summary = tmp_path / "summary_results.json"
    summary.write_bytes(b"\xef\xbb\xbf" + (FIXTURE / "mlperf" / "summary_results.json").read_bytes())
    (tmp_path / "data").mkdir()
    result = CliRunner().invoke(cli, [*mlperf_args(summary), "--data", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "data" / "benchmarks" / "mlperf-inference-v1-0.yml").read_text() == \
        (FIXTURE / "data" / "benchmarks" / "mlperf-inference-v1-0.yml").read_text()


# SkyPilot: a folder of catalog files read one by one, and its read.yml

HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,Price,Region,AvailabilityZone,SpotPrice\n"
ROWS = ["big-8x,H100,8,96,24.0,r1,r1-a,8.0", "big-8x,H100,8,96,23.2,r2,r2-b,", "small-1x,H100,1,8,3.0,r1,r1-a,"]
CATALOG = HEADER + "\n".join(ROWS) + "\n"
MANIFEST = f"files:\n  - {{path: catalogs/v8/cloudco/vms.csv, commit: {'ab' * 20}, read: 2026-12-02}}\n"


@pytest.fixture
def sky_data(tmp_path):
    data = tmp_path / "data"
    (data / "aliases").mkdir(parents=True)
    (data / "aliases" / "skypilot.yml").write_text(yaml.safe_dump({"accelerator_aliases": [
        {"slug": "skypilot-h100", "dataset": "skypilot", "name": "H100", "accelerator": "acme-x1"}]}), encoding="utf-8")
    (data / "specs").mkdir()
    (data / "specs" / "vendors.yml").write_text("providers:\n  - {slug: cloudco, name: CloudCo}\n", encoding="utf-8")
    return data


def catalog_folder(tmp_path, csv_text=CATALOG, manifest=MANIFEST):
    folder = tmp_path / "read"
    (folder / "catalogs/v8/cloudco").mkdir(parents=True)
    if csv_text is not None:
        (folder / "catalogs/v8/cloudco/vms.csv").write_text(csv_text, encoding="utf-8")
    if manifest is not None:
        (folder / "read.yml").write_text(manifest, encoding="utf-8")
    return folder


SKYPILOT_CASES = {
    "no read.yml": ({"manifest": None}, "read.yml: no such file"),
    "read.yml not YAML": ({"manifest": "files: [\n"}, "read.yml: not YAML text"),
    "read.yml without files": ({"manifest": "- a\n"}, "read.yml: expected `files:`"),
    "a path out of the folder": ({"manifest": MANIFEST.replace("catalogs/v8/cloudco/vms.csv", "../outside/vms.csv")},
                                 "read.yml file 1: path: '../outside/vms.csv' is not a catalog vms.csv inside"),
    "an absolute path": ({"manifest": MANIFEST.replace("catalogs/v8/cloudco/vms.csv", "/etc/vms.csv")},
                         "read.yml file 1: path: '/etc/vms.csv' is not a catalog vms.csv inside"),
    "shell text as the commit": ({"manifest": MANIFEST.replace("ab" * 20, "'$(touch pwned)'")},
                                 "read.yml file 1: commit: '$(touch pwned)' is not a full 40-hex-digit commit hash"),
    "a file listed and missing": ({"csv_text": None}, "catalogs/v8/cloudco/vms.csv: cannot be read"),
    "HTML": ({"csv_text": "<html><body>Rate limited</body></html>\n"}, "vms.csv: no column InstanceType"),
    "renamed column": ({"csv_text": CATALOG.replace("SpotPrice", "Spot")}, "vms.csv: no column SpotPrice"),
    "empty": ({"csv_text": ""}, "vms.csv: empty file"),
    "cut off in a row": ({"csv_text": CATALOG[:-8]}, "vms.csv: ends inside a row"),
    "a row of fewer fields": ({"csv_text": CATALOG + "big-8x,H100,8,96\n"}, "vms.csv row 5: 4 fields, the header has 8"),
    "a price as text": ({"csv_text": CATALOG + "big-8x,H100,8,96,cheap,r3,r3-a,\n"},
                        "vms.csv row 5: Price: 'cheap' is not a number"),
    "a price beyond a float": ({"csv_text": CATALOG + "big-8x,H100,8,96,1e400,r3,r3-a,\n"},
                               "vms.csv row 5: Price: '1e400' is not a price (a number above 0)"),
    "NaN": ({"csv_text": CATALOG + "big-8x,H100,8,96,NaN,r3,r3-a,\n"}, "row 5: Price: 'NaN' is not a price"),
    "a negative spot price": ({"csv_text": CATALOG + "big-8x,H100,8,96,20,r3,r3-a,-2.49\n"},
                              "row 5: SpotPrice: '-2.49' is not a price"),
    "a price of 0": ({"csv_text": CATALOG + "big-8x,H100,8,96,0,r3,r3-a,\n"}, "row 5: Price: '0' is not a price"),
    "a count as text": ({"csv_text": CATALOG + "big-8x,H100,eight,96,20,r3,r3-a,\n"},
                        "row 5: AcceleratorCount: 'eight' is not a number"),
    # read, then refused by the build's own rule on the file it would write, traced to the catalog's row
    "a price per GPU far too low": ({"csv_text": CATALOG + "big-8x,H100,8,96,0.000008,r3,r3-a,\n"},
                                    "vms.csv row 5: price_per_hour: 8e-06 USD for 8 GPU(s) is below 0.001"),
}


@pytest.mark.parametrize("case", SKYPILOT_CASES)
def test_skypilot_import_refuses_a_bad_catalog(tmp_path, sky_data, case):
    parts, fragment = SKYPILOT_CASES[case]
    refused(["import", "skypilot", str(catalog_folder(tmp_path, **parts))], sky_data, fragment)


def test_skypilot_import_refuses_a_catalog_much_shorter_than_the_previous_snapshot(tmp_path, sky_data):
    """A catalog cut at a line end: no row is malformed, but most offers are gone."""
    previous = tmp_path / "previous"
    assert CliRunner().invoke(cli, ["import", "skypilot", str(catalog_folder(previous)), "--data", str(sky_data)]
                              ).exit_code == 0
    cut = catalog_folder(tmp_path, HEADER + ROWS[0] + "\n", MANIFEST.replace("ab" * 20, "cd" * 20))
    refused(["import", "skypilot", str(cut)], sky_data,
            "vms.csv: 1 offers, 67% fewer than the 3 of cloudco-2026-12-02-abababab.yml".replace("abababab", "ab" * 5))
    result = CliRunner().invoke(cli, ["import", "skypilot", str(cut), "--max-drop", "0.7", "--data", str(sky_data)])
    assert result.exit_code == 0, result.output


def test_skypilot_import_says_why_each_provider_is_skipped_and_leaves_out_a_fraction_of_a_gpu(tmp_path, sky_data):
    folder = catalog_folder(tmp_path, CATALOG + "part-1x,H100,0.5,8,1.0,r1,r1-a,\n",
                            MANIFEST + "  - {path: catalogs/v8/otherco/vms.csv, commit: " + "ab" * 20 + ", read: 2026-12-02}\n"
                            + "  - {path: catalogs/v8/cloudco2/vms.csv, commit: " + "ab" * 20 + ", read: 2026-12-02}\n")
    for provider, text in (("otherco", CATALOG), ("cloudco2", HEADER + "x,Z9,1,8,1.0,r1,r1-a,\n")):
        (folder / "catalogs/v8" / provider).mkdir()
        (folder / "catalogs/v8" / provider / "vms.csv").write_text(text, encoding="utf-8")
    (sky_data / "specs" / "vendors.yml").write_text(
        "providers:\n  - {slug: cloudco, name: CloudCo}\n  - {slug: cloudco2, name: CloudCo 2}\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["import", "skypilot", str(folder), "--data", str(sky_data)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "cloudco2: no alias row for Z9 (rows not imported)",
        "cloudco2: skipped: no offer: no row names an accelerator of the knowledge base with a price "
        "(names without an alias row: Z9)",
        "otherco: skipped: no providers row"]
    (written,) = (sky_data / "specs/cloud_offers/skypilot").iterdir()
    assert sorted(o["instance"] for o in yaml.safe_load(written.read_text())["cloud_offers"]) == \
        ["big-8x", "big-8x", "small-1x"], "half a GPU is no offer of one"


def test_skypilot_import_refuses_an_unknown_commit(tmp_path, sky_data):
    repo = tmp_path / "catalog"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for commit, fragment in (("v9.9-nothing", "no commit 'v9.9-nothing'"),
                             ("--upload-pack=x", "--commit '--upload-pack=x': expected a commit hash")):
        refused(["import", "skypilot", str(repo / ".git"), "--commit", commit], sky_data, fragment)
