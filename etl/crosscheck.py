"""Cross-check with an independent dataset: Epoch AI's machine learning hardware dataset.

The dataset (CC BY 4.0, Epoch AI) is kept as its CSV under the data folder
(`crosscheck/epoch-ai/`, with where the copy was read). Its names meet the
knowledge base's slugs in the one alias table (etl/aliases.py); for every
matched accelerator and compared value, `crosscheck` gives both values and
whether they agree within 3%. A disagreement is explained by a row of
`crosscheck_notes` (which side is wrong, and why) or it is unexplained; a note
on values that agree is stale. Names with no alias row are listed, never
dropped. It reads a built database and the data folder.
"""

import csv
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from domain.schema import CROSSCHECK_FIELDS

from .aliases import resolve

DATASET = "epoch-ai"
REFERENCE_TIER = "reference-dataset"  # the tier of a value cited to the dataset
DATASET_TITLE = "Epoch AI's \"Data on Machine Learning Hardware\" (CC BY, epoch.ai/data/machine-learning-hardware)"
CSV_PATH = Path("crosscheck") / DATASET / "ml_hardware.csv"  # within the data folder
NAME_COLUMN = "Hardware name"
DATE_COLUMN = "Release date"
TOLERANCE = 0.03  # relative: two values agree when they differ by at most 3% of the larger


@dataclass(frozen=True)
class Measure:
    """One compared number: the dataset's column (its name in either version of the CSV) and scale to our unit."""

    field: str
    columns: tuple
    scale: float
    unit: str


MEASURES = (
    Measure("memory", ("Memory (bytes)", "Memory size per board (Byte)"), 1e-9, "GB"),
    Measure("bandwidth", ("Memory bandwidth (byte/s)",), 1e-9, "GB/s"),
    Measure("tdp", ("TDP (W)",), 1, "W"),
    Measure("bf16-fp16", ("Tensor-FP16/BF16 performance (FLOP/s)",), 1e-12, "TFLOPS"),
    Measure("fp8", ("FP8 performance (FLOP/s)",), 1e-12, "TFLOPS"),
    Measure("fp4", ("FP4 performance (FLOP/s)",), 1e-12, "TFLOPS"),
    Measure("price", ("Release price (USD)",), 1, "USD"),
)
assert {m.field for m in MEASURES} | {"release-date"} == set(CROSSCHECK_FIELDS)

# Our side of each number: one SQL expression per accelerator (`a`), dense matrix throughput by precision family.
# A value cited to the dataset itself is left out: it would agree with the dataset by construction.
DENSE_ROWS = ("from throughput t join number_formats f on f.slug = t.precision "
              "where t.accelerator = a.slug and t.sparsity = 'dense' and t.engine = 'matrix' and t.accumulate = 'fp32' "
              "and f.family = '{family}'")
CITED_TO_DATASET = (f"exists (select 1 from citations c where c.table_name = '{{table}}' and c.row_slug = {{row}} "
                    f"and c.field = '{{field}}' and c.tier = '{REFERENCE_TIER}')")
DENSE = ("(select max(t.tflops) " + DENSE_ROWS + " and not "
         + CITED_TO_DATASET.format(table="throughput", row="t.slug", field="tflops") + ")")


def column(name):
    """An accelerators column, null where its value is cited to the dataset."""
    return f"iif({CITED_TO_DATASET.format(table='accelerators', row='a.slug', field=name)}, null, a.{name})"


# Per compared field, whether a value of ours is cited to the dataset (and so left out of the comparison).
LEFT_OUT = {
    "memory": CITED_TO_DATASET.format(table="accelerators", row="a.slug", field="memory_gb"),
    "bandwidth": CITED_TO_DATASET.format(table="accelerators", row="a.slug", field="memory_bandwidth_gbs"),
    "tdp": CITED_TO_DATASET.format(table="accelerators", row="a.slug", field="tdp_w"),
    **{field: " or ".join("exists (select 1 " + DENSE_ROWS.format(family=family) + " and "
                          + CITED_TO_DATASET.format(table="throughput", row="t.slug", field="tflops") + ")"
                          for family in families)
       for field, families in (("bf16-fp16", ("bf16", "fp16")), ("fp8", ("fp8",)), ("fp4", ("fp4",)))},
    "price": (f"exists (select 1 from prices p join sources s on s.slug = p.source where p.accelerator = a.slug "
              f"and p.kind = 'launch-list' and s.tier = '{REFERENCE_TIER}')"),
}
OURS = {
    "memory": column("memory_gb"),
    "bandwidth": column("memory_bandwidth_gbs"),
    "tdp": column("tdp_w"),
    # Epoch's "Tensor-FP16/BF16": the BF16 figure, else the FP16 one
    "bf16-fp16": f"coalesce({DENSE.format(family='bf16')}, {DENSE.format(family='fp16')})",
    "fp8": DENSE.format(family="fp8"),
    "fp4": DENSE.format(family="fp4"),
    # the launch list price of one device in USD (as launch_price_usd), leaving out prices cited to the dataset
    # itself: they would agree with it by construction
    "price": "(select p.per_device_amount from prices p left join sources s on s.slug = p.source "
             "where p.accelerator = a.slug and p.kind = 'launch-list' and p.currency = 'USD' "
             f"and coalesce(s.tier, '') != '{REFERENCE_TIER}' order by p.observed, p.slug limit 1)",
}


class DatasetRow(NamedTuple):
    name: str
    values: dict  # {field: number in our unit, or the release date as written}


class Comparison(NamedTuple):
    """Both sides of one value of one matched accelerator."""

    name: str           # the dataset's name
    accelerator: str
    field: str
    theirs: object      # number, date text, or None
    ours: object
    status: str         # agree, explained, unexplained, dataset-only, knowledge-base-only, cited-to-dataset
    wrong: str | None = None  # the side a note says is wrong


class CrossCheck(NamedTuple):
    comparisons: list
    unmatched: list     # dataset names with no alias row
    none: list          # dataset names whose alias row says they mean no accelerator
    stale: list         # (accelerator, field) of notes on values that agree or are not compared


def number(text: str) -> float | None:
    text = (text or "").strip()
    return float(text) if text else None


def read_dataset(path: Path) -> list[DatasetRow]:
    """The rows of the dataset's CSV, values in our units."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = []
        for record in csv.DictReader(handle):
            values = {}
            for measure in MEASURES:
                column = next((c for c in measure.columns if c in record), None)
                value = number(record[column]) if column else None
                values[measure.field] = None if value is None else round(value * measure.scale, 6)
            values["release-date"] = (record.get(DATE_COLUMN) or "").strip() or None
            rows.append(DatasetRow(record[NAME_COLUMN].strip(), values))
    return rows


def agree(theirs: float, ours: float) -> bool:
    return abs(theirs - ours) <= TOLERANCE * max(abs(theirs), abs(ours))


def dates_agree(theirs: str, ours: Iterable[str]) -> bool:
    """The dataset's date (YYYY-MM-DD) agrees with our announced or available date to the precision we give."""
    return any(date and theirs[:len(date)] == date for date in ours)


def our_values(conn: sqlite3.Connection, slug: str) -> dict:
    """Our value of each compared field, and under LEFT the fields whose value is cited to the dataset."""
    columns = ", ".join(f"{sql} as [{field}]" for field, sql in OURS.items())
    left = ", ".join(f"{sql} as [left {field}]" for field, sql in LEFT_OUT.items())
    row = conn.execute(f"select {columns}, a.announced, a.available, {left} from accelerators a where a.slug = ?",
                       (slug,)).fetchone()
    names = [*OURS, "announced", "available", *(f"left {field}" for field in LEFT_OUT)]
    found = dict(zip(names, row)) if row else {}
    values = {name: found.get(name) for name in [*OURS, "announced", "available"]}
    values["release-date"] = [values.get("announced"), values.get("available")] if row else []
    values[LEFT] = {field for field in LEFT_OUT if found.get(f"left {field}")}
    return values


LEFT = "left out"


def agrees(field: str, theirs, ours) -> bool:
    return dates_agree(theirs, ours) if field == "release-date" else agree(theirs, ours)


def compare(name: str, slug: str, theirs: dict, ours: dict, notes: dict) -> list[Comparison]:
    """The comparisons of one matched row, in CROSSCHECK_FIELDS order (`notes`: {(slug, field): wrong side})."""
    found = []
    for field in CROSSCHECK_FIELDS:
        mine = ours.get(field)
        # our dates as we give them, "announced / available"
        written = " / ".join(date for date in mine if date) or None if field == "release-date" else mine
        if theirs[field] is None and written is None:
            continue
        if written is None and field in ours.get(LEFT, ()):
            status = "cited-to-dataset"  # our value is the dataset's own: nothing to compare
        elif theirs[field] is None or written is None:
            status = "dataset-only" if written is None else "knowledge-base-only"
        elif agrees(field, theirs[field], mine):
            status = "agree"
        else:
            status = "explained" if (slug, field) in notes else "unexplained"
        wrong = notes[(slug, field)] if status == "explained" else None
        found.append(Comparison(name, slug, field, theirs[field], written, status, wrong))
    return found


def crosscheck(conn: sqlite3.Connection, data_dir: Path) -> CrossCheck:
    """Compare every row of the dataset matched to an accelerator with the built database `conn`."""
    rows = read_dataset(Path(data_dir) / CSV_PATH)
    resolution = resolve(data_dir, DATASET, [row.name for row in rows])
    notes = {(accelerator, field): wrong for accelerator, field, wrong in conn.execute(
        "select accelerator, field, wrong from crosscheck_notes where dataset = ?", (DATASET,))}
    comparisons = []
    for row in rows:
        slug = resolution.mapped.get(row.name)
        if slug is not None:
            comparisons += compare(row.name, slug, row.values, our_values(conn, slug), notes)
    disagreeing = {(c.accelerator, c.field) for c in comparisons if c.status == "explained"}
    stale = sorted(set(notes) - disagreeing)
    return CrossCheck(comparisons, resolution.unmapped, resolution.none, stale)


def shown(value) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def summary(result: CrossCheck) -> dict:
    """Counts of the cross-check: matched accelerators, and comparisons by status."""
    counts = {"matched accelerators": len({c.accelerator for c in result.comparisons})}
    for status in ("agree", "explained", "unexplained", "dataset-only", "knowledge-base-only", "cited-to-dataset"):
        counts[status] = sum(c.status == status for c in result.comparisons)
    counts["stale notes"] = len(result.stale)
    counts["unmatched names"] = len(result.unmatched)
    counts["names meaning none"] = len(result.none)
    return counts


def format_crosscheck(result: CrossCheck) -> list[str]:
    """The cross-check as text lines: one line per comparison, the counts, then what was not matched."""
    units = {m.field: m.unit for m in MEASURES} | {"release-date": ""}
    header = ["dataset name", "accelerator", "field", "unit", DATASET, "knowledge base", "status"]
    lines = [[c.name, c.accelerator, c.field, units[c.field], shown(c.theirs), shown(c.ours),
              c.status + (f" ({c.wrong} wrong)" if c.wrong else "")] for c in result.comparisons]
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    out = [f"Cross-check with {DATASET_TITLE}, within {TOLERANCE:.0%}"]
    out += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *lines]]
    out.append("; ".join(f"{name}: {count}" for name, count in summary(result).items()))
    out += [f"stale note (the values agree or are not compared): {a} {f}" for a, f in result.stale]
    out += [f"means no accelerator: {name}" for name in result.none]
    out += [f"unmatched: {name}" for name in result.unmatched]
    return out
