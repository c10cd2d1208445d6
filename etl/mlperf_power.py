"""Import MLPerf power results: each result submitted with power, its system's wall power recomputed from the files.

A result submitted with power (`has_power` in the round's summary) keeps, beside its performance run
(`<system>/<benchmark>/<scenario>/performance/run_1/`), the power analyzer's samples (`spl.txt`) and the run's
log (`mlperf_log_detail.txt`, which gives the window the samples are averaged over). From a local copy of the
round's results repository at the summary's commit, this writes `data/benchmarks/mlperf-power-<round>.yml`: one
`power_results` record per result, the average computed as MLCommons' submission checker computes it
(`etl.mlperf.average_power`), cited to the result's folder at that commit. A result whose files are missing or
unreadable is returned with the reason, never dropped silently; one whose average differs from the summary's
`Power_Result` is loaded with a note saying both.
"""

import json
from pathlib import Path
from typing import NamedTuple

import yaml

from .mlperf import FOLDER, MLLOG, PowerWindow, Summary, SummaryError, average_power, power_window, result_record, slugify

# The checker read: the power metric of get_power_metric_check (docs/DATA.md, "Import MLPerf results").
CHECKER = ("https://github.com/mlcommons/inference/blob/b66003e10e2db4b8c36a448b0545ec90fcc6e9e9/"
           "tools/submission/submission_checker/checks/power_check.py")
RUN = "performance/run_1"
# The checker's power metric: the average in watts for these scenarios, energy per query in mJ for the others.
WATT_SCENARIOS = ("offline", "server", "interactive")
# Samples per query of the latency scenarios (the checker's samples_per_query).
SAMPLES_PER_QUERY = {"singlestream": 1, "multistream": 8}
# How far the recomputed average may sit from the summary's before the record says so (rounding of the summary).
AGREEMENT = 0.001


class Skipped(NamedTuple):
    """A result submitted with power that is not loaded, and why."""

    result: str
    reason: str


class PowerImport(NamedTuple):
    path: Path | None
    loaded: int
    skipped: list[Skipped]


class RunLog(NamedTuple):
    """What the checker reads of a performance run's mlperf_log_detail.txt."""

    window: PowerWindow
    effective_scenario: str | None
    query_count: int | None


def run_log(detail: str) -> RunLog:
    """The power window, the scenario run and the count of queries of a mlperf_log_detail.txt."""
    values = {}
    for line in detail.splitlines():
        if line.startswith(MLLOG) and ('"effective_scenario"' in line or '"result_query_count"' in line):
            entry = json.loads(line[len(MLLOG):])
            values[entry["key"]] = entry["value"]
    count = values.get("result_query_count")
    return RunLog(power_window(detail), values.get("effective_scenario"), int(count) if count is not None else None)


class PowerFigures(NamedTuple):
    samples: int            # analyzer samples inside the window, above zero
    window_s: float         # the window's length in seconds
    average_w: float
    energy_mj_per_query: float | None


def power_figures(scenario: str, samples: str, log: RunLog) -> PowerFigures:
    """The checker's power metric of one result: the average watts, and for SingleStream and MultiStream the
    energy per query (average × window × 1000 ÷ queries; a MultiStream run as SingleStream counts 8 samples a
    query, as the checker does)."""
    watts = average_power(samples, log.window)
    if watts is None:
        raise SummaryError(f"spl.txt: no sample inside the run's window {log.window.begin} – {log.window.end}")
    count = sum(1 for line in samples.splitlines() if line.startswith("Time") and in_window(line, log.window))
    seconds = (log.window.end - log.window.begin).total_seconds()
    energy = None
    if scenario.lower() not in WATT_SCENARIOS:
        if scenario.lower() not in SAMPLES_PER_QUERY:
            raise SummaryError(f"scenario {scenario!r} is not one the checker knows")
        if not log.query_count:
            raise SummaryError("mlperf_log_detail.txt: no result_query_count")
        factor = 8 if scenario.lower() == "multistream" and (log.effective_scenario or "").lower() == "singlestream" else 1
        energy = watts * seconds * factor * 1000 / log.query_count
    return PowerFigures(count, seconds, watts, energy)


def in_window(line: str, window: PowerWindow) -> bool:
    """An spl.txt sample line strictly inside the window with watts above zero: one average_power keeps."""
    return average_power(line, window) is not None


def run_folder(location: str) -> str:
    """The result's performance run folder from the summary's Location (the scenario folder, or the run itself)."""
    scenario = location.removeprefix("./").rstrip("/").removesuffix(f"/{RUN}")
    return f"{scenario}/{RUN}"


def folder_source(summary: Summary, location: str, result_slug: str) -> dict:
    """The source record of one result's performance folder, at the summary's commit."""
    folder = run_folder(location).removesuffix("/run_1")
    record = {"slug": f"{result_slug}-power", "url": f"https://github.com/{summary.repository}/tree/{summary.commit}/{folder}",
              "title": folder, "publisher": "MLCommons", "kind": "benchmark", "tier": "independent-measurement",
              "retrieved": summary.retrieved,
              "note": f"MLPerf Inference {summary.round}: the power analyzer's samples (run_1/spl.txt) and the "
                      f"performance run's log (run_1/mlperf_log_detail.txt) of one result submitted with power, read "
                      f"at commit {summary.commit}; averaged as MLCommons' submission checker does ({CHECKER})."}
    if summary.read_via:
        record["read_via"] = f"https://github.com/{summary.read_via}/tree/{summary.commit}/{folder}"
    return record


def power_record(summary: Summary, row: dict, results_dir: Path) -> tuple[dict, dict]:
    """The power_results record of one summary row submitted with power, and its source record."""
    result = result_record(summary, row)
    run = results_dir / run_folder(row["Location"])
    files = {name: run / name for name in ("spl.txt", "mlperf_log_detail.txt")}
    missing = [name for name, path in files.items() if not path.is_file()]
    if missing:
        raise SummaryError(f"no {' or '.join(missing)} in {run_folder(row['Location'])}")
    try:
        log = run_log(files["mlperf_log_detail.txt"].read_text(encoding="utf-8", errors="replace"))
        figures = power_figures(row["Scenario"], files["spl.txt"].read_text(encoding="utf-8", errors="replace"), log)
    except (ValueError, IndexError, KeyError) as error:  # a line that is not the analyzer's or the logger's
        raise SummaryError(f"{run_folder(row['Location'])}: {error}") from None
    record = {"slug": result["slug"], "result": result["slug"], "samples": figures.samples,
              "window_s": round(figures.window_s, 3), "average_w": round(figures.average_w, 2)}
    if figures.energy_mj_per_query is not None:
        record["energy_mj_per_query"] = round(figures.energy_mj_per_query, 3)
    source = folder_source(summary, row["Location"], result["slug"])
    record["source"] = source["slug"]
    stated = float(row["Power_Result"]) if row.get("Power_Result") not in ("", None) else None
    computed = figures.energy_mj_per_query if figures.energy_mj_per_query is not None else figures.average_w
    if stated is None:
        record["note"] = "The summary states no Power_Result for this result."
    elif abs(computed - stated) > AGREEMENT * stated:
        record["note"] = f"The summary's Power_Result is {stated:g} {row.get('Power_Units', '')}; the files give {computed:g}."
    return record, source


def write_power(summary: Summary, rows: list[dict], results_dir: Path, data_dir: Path) -> PowerImport:
    """Write `data/benchmarks/mlperf-power-<round>.yml` from the power files of the rows with has_power."""
    records, sources, skipped = [], [], []
    for row in rows:
        if not row.get("has_power"):
            continue
        try:
            record, source = power_record(summary, row, results_dir)
        except SummaryError as error:
            slug = f"{row.get('ID', '?')} {row.get('Model', '?')} {row.get('Scenario', '?')}"
            skipped.append(Skipped(slug, str(error)))
            continue
        records.append(record)
        sources.append(source)
    target = data_dir / FOLDER / f"mlperf-power-{slugify(summary.round)}.yml"
    if not records and not skipped:  # no row of the round was submitted with power
        return PowerImport(None, 0, [])
    target.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Written by `computekb import mlperf --results` from the power files of {summary.repository} at "
              f"{summary.commit}\n# Do not edit by hand: re-run the importer.\n")
    for item in skipped:
        header += f"# Not loaded: {item.result}: {item.reason}\n"
    body = yaml.safe_dump({"sources": sources, "power_results": records}, sort_keys=False, allow_unicode=True,
                          width=120) if records else ""
    target.write_text(header + body, encoding="utf-8")
    return PowerImport(target, len(records), skipped)
