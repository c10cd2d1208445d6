"""Import MLPerf Inference results: a round's `summary_results.json` in, a YAML data file out.

The importer is the only code that reads MLCommons' summaries; what it writes
goes under `data/benchmarks/` and is built like every other data file (one
path for data: YAML, then `computekb build`). Each file holds the summary's
source record (the file at the commit read) and one `benchmark_results` record
per row, every value as the summary states it. Accelerator names stay as
written: the build maps them through `data/aliases/mlperf.yml`, and the names
no alias row covers are printed here and listed by `computekb report`.
"""

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import yaml

from .aliases import Resolution, resolve
from .imported import COMMIT, DATE, REPOSITORY, ImportRefused, Output, record_lines, write_all

DATASET = "mlperf"
FOLDER = "benchmarks"
RESULTS_REPOSITORY = "https://github.com/mlcommons/inference_results_{round}"
# The benchmark's model in the models table, where the knowledge base has it (the roofline needs its config).
MODELS = {
    "llama2-70b": "llama-2-70b",
    "llama3.1-405b": "llama-3-1-405b",
    "llama3.1-8b": "llama-3-1-8b",
    "llama3.1-8b-edge": "llama-3-1-8b",
    "mixtral-8x7b": "mixtral-8x7b",
    "gpt-oss-120b": "gpt-oss-120b",
    "deepseek-r1": "deepseek-r1",
}
ACCURACY_TARGET = re.compile(r"^(?P<benchmark>.+)-(?P<target>9\d(?:\.\d+)?)$")  # llama2-70b-99.9, yolo-95
# "(x87)" in an accelerator name: the system's count of that accelerator, where the summary's count rounds the
# cluster up to whole nodes (87 GPUs written as 8 per node × 11 nodes).
NAMED_COUNT = re.compile(r"^[^(]*\(x(?P<count>\d+)\)$")  # one accelerator type: one "(x…)"


@dataclass(frozen=True)
class RunFormat:
    """Rows whose summary states a weight format the submission did not run, and the document that says what
    it ran: the format by a part of the accelerator's name (the first that matches)."""

    round: str
    benchmarks: tuple
    software: str          # the rows' software starts with it (the submitter's harness)
    stated: str            # weight_data_types as the summary writes it
    formats: tuple         # (part of the accelerator name, format slug) pairs
    source: dict           # the sources record of the document
    note: str


# NVIDIA's TensorRT harness, which its partners submit too, states fp16 (its configurations' base precision)
# and quantizes the LLMs: "LLM submissions use FP8 or FP4 if the NVIDIA accelerator supports that feature"
# (documentation/calibration.md); the llama2-70b and mixtral-8x7b configurations of NVIDIA and of every
# partner running TensorRT set use_fp8 = True. Blackwell has FP4, Hopper and Ada FP8.
V4_1_COMMIT = "4a0c87411066bd697db46fa44cf6f04fd458f627"
RUN_FORMATS = (
    RunFormat("v4.1", ("llama2-70b", "mixtral-8x7b"), "TensorRT", "fp16",
              (("B200", "fp4"), ("H100", "fp8"), ("H200", "fp8"), ("GH200", "fp8"), ("L40S", "fp8")),
              {"slug": "mlperf-inference-v4-1-nvidia-calibration",
               "url": f"https://github.com/mlcommons/inference_results_v4.1/blob/{V4_1_COMMIT}/closed/NVIDIA/"
                      "documentation/calibration.md",
               "title": "closed/NVIDIA/documentation/calibration.md", "publisher": "NVIDIA (MLPerf Inference v4.1 "
               "submission, mlcommons/inference_results_v4.1)", "kind": "documentation",
               "tier": "vendor-secondary", "retrieved": "2026-12-04",
               "note": "LLM Quantization: \"LLM submissions use FP8 or FP4 if the NVIDIA accelerator supports that "
                       "feature\"; the Llama2-70B and Mixtral-8x7B linear layers' weights are quantized. The "
                       "configurations (closed/NVIDIA/configs/llama2-70b, mixtral-8x7b) set precision = \"fp16\" "
                       "with use_fp8 = True."},
              "The summary states fp16, the harness's base precision; NVIDIA's TensorRT harness quantizes the "
              "weights to FP8, or FP4 where the accelerator has it (Blackwell), and the submitter's own "
              "configuration sets use_fp8 = True."),
)


class SummaryError(ImportRefused):
    """A summary that cannot be imported: names the file and the row."""


@dataclass(frozen=True)
class Summary:
    """Where one round's summary was read."""

    round: str            # v4.1
    repository: str       # owner/name of the repository that publishes it (MLCommons)
    commit: str           # the commit whose file was read
    path: str             # path of the file in the repository
    retrieved: str        # YYYY-MM-DD
    read_via: str | None = None  # owner/name of the copy read, when not the repository itself
    models: tuple = ()    # (benchmark, model slug) pairs added to MODELS

    @property
    def slug(self) -> str:
        return f"mlperf-inference-{slugify(self.round)}-summary"

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repository}/blob/{self.commit}/{self.path}"


class Imported(NamedTuple):
    path: Path
    rows: int
    names: Resolution


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def whole(value, name="count") -> int | None:
    """A count as the summaries write it (8, 8.0, "8", or "" for none)."""
    if value in ("", None):
        return None
    number = float(value)
    if number != int(number):
        raise ValueError(f"{name}: not a whole number: {value!r}")
    return int(number)


def split_target(model: str) -> tuple[str, str | None]:
    """('llama2-70b', '99.9') from 'llama2-70b-99.9'; a benchmark with one target keeps its name."""
    match = ACCURACY_TARGET.match(model)
    return (match["benchmark"], match["target"]) if match else (model, None)


def details_url(summary: Summary, location: str) -> str:
    """The system's folder in MLCommons' results repository, from the row's Location
    (`closed/<submitter>/results/<system>/...`): the summaries' own Details links point
    to other copies in some rounds."""
    parts = location.removeprefix("./").split("/")[:4]
    return f"{RESULTS_REPOSITORY.format(round=summary.round)}/tree/main/{'/'.join(parts)}"


def sources_used(summary: Summary, rows: Iterable[dict]) -> list[dict]:
    """The summary's source record, and the records of the documents the rows' weights_as_run cite."""
    used = {}
    for row in rows:
        found = run_format(summary, row, split_target(row["Model"])[0])
        if found:
            used[found[0].source["slug"]] = found[0].source
    return [source_record(summary), *used.values()]


def source_record(summary: Summary) -> dict:
    note = (f"MLPerf Inference {summary.round} results summary, one row per system, benchmark and scenario; "
            f"published by MLCommons in {summary.repository} (Apache 2.0), read at commit {summary.commit}. "
            "Results are submitted by vendors and their partners and audited by MLCommons.")
    if summary.read_via:
        note += (f" Read through the copy {summary.read_via}, which holds that commit; the official repository "
                 "is too large to read whole.")
    record = {"slug": summary.slug, "url": summary.url, "title": summary.path, "publisher": "MLCommons",
              "kind": "benchmark", "tier": "independent-measurement", "retrieved": summary.retrieved, "note": note}
    if summary.read_via:
        record["read_via"] = f"https://github.com/{summary.read_via}/blob/{summary.commit}/{summary.path}"
    return record


def result_record(summary: Summary, row: dict) -> dict:
    """One benchmark_results record of a summary row, values as stated (counts made whole)."""
    benchmark, target = split_target(row["Model"])
    check_power(row)
    per_node, nodes = whole(row.get("a#"), "a#"), whole(row.get("Nodes"), "Nodes")
    record = {
        "slug": f"mlperf-{slugify(row['ID'].removeprefix('v'))}-{slugify(row['Model'])}-{slugify(row['Scenario'])}",
        "round": summary.round, "result_id": row["ID"], "division": row["Category"], "category": row["Suite"],
        "availability": row.get("Availability") or None, "submitter": row["Submitter"],
        "system": row.get("System") or None, "platform": row.get("Platform") or None,
        "accelerator_name": row.get("Accelerator") or None,
        "accelerators_per_node": per_node, "nodes": nodes,
        "total_accelerators": total_accelerators(row, per_node, nodes),
        "benchmark": benchmark, "accuracy_target": target, "model": {**MODELS, **dict(summary.models)}.get(benchmark),
        "scenario": row["Scenario"], "weight_formats": str(row.get("weight_data_types") or "") or None,
        "weights_as_run": weights_as_run(summary, row, benchmark),
        "result": row["Performance_Result"], "units": row["Performance_Units"],
        "software": row.get("Software") or None, "details_url": details_url(summary, row["Location"]),
        "source": summary.slug, "note": row_note(row),
    }
    return {key: value for key, value in record.items() if value is not None}


def run_format(summary: Summary, row: dict, benchmark: str) -> tuple[RunFormat, str] | None:
    """The RunFormat rule of a row and the format it ran, or None when the summary's format stands."""
    name, software = row.get("Accelerator") or "", row.get("Software") or ""
    for rule in RUN_FORMATS:
        if (rule.round, rule.stated) == (summary.round, row.get("weight_data_types")) and \
                benchmark in rule.benchmarks and software.startswith(rule.software):
            for part, fmt in rule.formats:
                if part in name:
                    return rule, fmt
    return None


def weights_as_run(summary: Summary, row: dict, benchmark: str) -> dict | None:
    found = run_format(summary, row, benchmark)
    if found is None:
        return None
    rule, fmt = found
    return {"value": fmt, "kind": "derived", "source": rule.source["slug"], "note": rule.note}


def total_accelerators(row: dict, per_node: int | None, nodes: int | None):
    """The count the accelerator name states ("(x87)"), else as stated (the v6.0 summary), else per node × nodes,
    cited as derived."""
    named = NAMED_COUNT.match(row.get("Accelerator") or "")
    if named:
        stated = whole(row.get("Total Accelerators")) or (per_node * nodes if per_node and nodes else None)
        return {"value": int(named["count"]), "kind": "derived",
                "note": f"the count the accelerator name and the system folder state; the summary's count, {stated}, "
                        "is accelerators per node (a#) × nodes"}
    stated = whole(row.get("Total Accelerators"), "Total Accelerators")
    if stated is not None:
        return stated
    if per_node is None or nodes is None:
        return None
    return {"value": per_node * nodes, "kind": "derived", "note": "accelerators per node (a#) × nodes, as stated"}


# The summary's Power_Units of power results: the average system power for the throughput scenarios, the energy
# per query for the latency ones.
POWER_UNITS = ("Watts", "millijoules")


def check_power(row: dict) -> None:
    """A row submitted with power states its result as a number above 0 in a known unit. The figure is not kept
    here: power_results recomputes it from the result's own files (etl/mlperf_power.py) and notes where the
    summary's differs."""
    if row.get("Power_Result") in ("", None):
        return
    units = row.get("Power_Units")
    if units not in POWER_UNITS:
        raise ValueError(f"Power_Units {units!r} is not one of {', '.join(POWER_UNITS)}")
    measured(row, "Power_Result")


def row_note(row: dict) -> str | None:
    notes = [row["Notes"].strip()] if (row.get("Notes") or "").strip() else []
    if row.get("inferred") in (1, "1", True):
        notes.append("The summary marks this result as inferred (inferred: 1).")
    return " ".join(notes) or None


ROUND = re.compile(r"v[0-9]+\.[0-9]+")


def summary_problem(summary: Summary) -> str | None:
    """What is wrong with where the summary was read, as the command gives it: each part is cited."""
    checks = (("--round", summary.round, ROUND, "a round as the summary writes it, such as v5.1"),
              ("--repository", summary.repository, REPOSITORY, "owner/name of a GitHub repository"),
              ("--commit", summary.commit, COMMIT, "the full 40-hex-digit commit hash the summary was read at"),
              ("--retrieved", summary.retrieved, DATE, "the date the summary was read, YYYY-MM-DD"),
              ("--read-via", summary.read_via or "a/b", REPOSITORY, "owner/name of a GitHub repository"),
              ("--path", summary.path, re.compile(r"[A-Za-z0-9._/-]{1,200}"), "a path in the repository"))
    for option, value, pattern, what in checks:
        if not pattern.fullmatch(value):
            return f"{option} {value!r}: expected {what}"
    if summary.retrieved > datetime.now(UTC).date().isoformat():
        return f"--retrieved {summary.retrieved}: a date in the future (the summary is read before it is imported)"
    return None


def finite(text: str) -> float:
    """A JSON number that a float holds (1e400 is none)."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is beyond any float")
    return value


def not_a_number(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def measured(row: dict, field: str) -> float:
    """A result the summary states: a number above 0."""
    value = row.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{field}: {value!r} is not a result (a number above 0)")
    return value


def records(summary: Summary, rows: Iterable[dict]) -> list[dict]:
    out, seen = [], set()
    for number, row in enumerate(rows, 1):
        try:
            if not isinstance(row, dict):
                raise ValueError(f"expected an object of the summary's columns, got {type(row).__name__}")
            measured(row, "Performance_Result")
            record = result_record(summary, row)
        except KeyError as error:
            raise SummaryError(f"{summary.path} row {number} ({row.get('ID', '?')}): no {error} column") from None
        except (TypeError, ValueError) as error:
            where = f"({row.get('ID', '?')})" if isinstance(row, dict) else ""
            raise SummaryError(f"{summary.path} row {number} {where}: {error}") from None
        if record["slug"] in seen:
            raise SummaryError(f"{summary.path} row {number}: {record['slug']} twice (same ID, model and scenario)")
        seen.add(record["slug"])
        out.append(record)
    return out


def read_summary(path: Path) -> list[dict]:
    """The rows of a summary file: a list of rows, or (v6.1's summary.json) a mapping of row number to row.
    SummaryError for anything else: not UTF-8, not JSON (HTML, empty, cut off), NaN or a number no float
    holds, another shape."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig"), parse_float=finite, parse_constant=not_a_number)
    except UnicodeDecodeError as error:
        raise SummaryError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise SummaryError(f"{path}: not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    except ValueError as error:
        raise SummaryError(f"{path}: {error}") from None
    rows = list(data.values()) if isinstance(data, dict) else data
    if not isinstance(rows, list) or not rows:
        raise SummaryError(f"{path}: expected a list of rows (or an object of them), got "
                           f"{'none' if rows == [] else type(data).__name__}")
    return rows


def write(summary: Summary, rows: list[dict], data_dir: Path) -> Imported:
    """Write `data/benchmarks/mlperf-inference-<round>.yml`, once the build's rules accept it, and resolve
    its accelerator names."""
    if problem := summary_problem(summary):
        raise SummaryError(problem)
    results = records(summary, rows)
    target = data_dir / FOLDER / f"mlperf-inference-{slugify(summary.round)}.yml"
    header = (f"# Written by `computekb import mlperf` from {summary.url}\n"
              "# Do not edit by hand: re-run the importer (accelerator names map through data/aliases/mlperf.yml).\n")
    body = yaml.safe_dump({"sources": sources_used(summary, rows), "benchmark_results": results},
                          sort_keys=False, allow_unicode=True, width=120)
    text = header + body
    starts = record_lines(text, [r["slug"] for r in results])
    origin = {r["slug"]: f"{summary.path} row {number} ({r['result_id']})" for number, r in enumerate(results, 1)}
    write_all([Output(target, text, {line: origin[slug] for line, slug in starts.items()})])
    names = resolve(data_dir, DATASET, [r["accelerator_name"] for r in results if "accelerator_name" in r])
    return Imported(target, len(results), names)


# Power results: a system submitted with power has, beside its performance run, the power analyzer's samples
# (`spl.txt`) and the run's window (`power_begin` and `power_end` in `mlperf_log_detail.txt`). The average is
# computed as MLCommons' submission checker computes it (tools/submission/submission_checker/checks/
# power_check.py, get_power_metric_check): the "Time" lines whose timestamp falls strictly inside the
# window, their watts (the fourth field) where above zero, averaged; Offline, Server and Interactive report
# the average in watts and the result over it (tokens/s ÷ W = tokens per joule).
POWER_TIME_FORMAT = "%m-%d-%Y %H:%M:%S.%f"
MLLOG = ":::MLLOG "


class PowerWindow(NamedTuple):
    begin: datetime
    end: datetime


def power_window(detail: str) -> PowerWindow:
    """The performance run's power window from its mlperf_log_detail.txt."""
    found = {}
    for line in detail.splitlines():
        if line.startswith(MLLOG):
            entry = json.loads(line[len(MLLOG):])
            if entry.get("key") in ("power_begin", "power_end"):
                found[entry["key"]] = datetime.strptime(entry["value"], POWER_TIME_FORMAT)
    missing = [key for key in ("power_begin", "power_end") if key not in found]
    if missing:
        raise SummaryError(f"mlperf_log_detail.txt: no {' or '.join(missing)}")
    return PowerWindow(found["power_begin"], found["power_end"])


def average_power(samples: str, window: PowerWindow) -> float | None:
    """Mean wall power in watts of the spl.txt samples inside the window; None when no sample falls in it."""
    watts = []
    for line in samples.splitlines():
        if not line.startswith("Time"):
            continue
        fields = line.split(",")
        if window.begin < datetime.strptime(fields[1], POWER_TIME_FORMAT) < window.end and float(fields[3]) > 0:
            watts.append(float(fields[3]))
    return sum(watts) / len(watts) if watts else None
