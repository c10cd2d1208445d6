"""The cross-check with Epoch AI's hardware dataset (etl/crosscheck.py): on the fixture with a small CSV whose
values are written out here, then on the real data, where every disagreement must be explained.

Fixture (tests/fixture/data): acme-x1 96 GB, 4.8 TB/s, 700 W; acme-x2 144 GB, 3.35 TB/s, 1.2 kW;
beta-b1 24 GB, 900 GB/s, 350 W.
"""

import shutil
import sqlite3
import textwrap

import pytest
from click.testing import CliRunner

from computekb.cli import cli
from etl.build import build_database
from etl.crosscheck import CSV_PATH, Comparison, crosscheck, summary

from conftest import FIXTURE_DATA

CSV = """\
Hardware name,Manufacturer,Release date,Release price (USD),Tensor-FP16/BF16 performance (FLOP/s),\
Memory (bytes),Memory bandwidth (byte/s),TDP (W)
Acme X1,Acme,,,,96000000000.0,4900000000000.0,700.0
Acme X2,Acme,,41000.0,,150000000000.0,3350000000000.0,1300.0
Beta B1,Beta,,,2.5e+14,24000000000.0,900000000000.0,
Acme Q1,Acme,2019-05-01,,,,,
Zeta Z9,Zeta,2024-01-01,,,8000000000.0,,
"""

ALIASES = """
accelerator_aliases:
  - {slug: epoch-ai-acme-x1, dataset: epoch-ai, name: Acme X1, accelerator: acme-x1}
  - {slug: epoch-ai-acme-x2, dataset: epoch-ai, name: Acme X2, accelerator: acme-x2}
  - {slug: epoch-ai-beta-b1, dataset: epoch-ai, name: Beta B1, accelerator: beta-b1}
  - {slug: epoch-ai-acme-q1, dataset: epoch-ai, name: Acme Q1, note: A prototype with no row.}
"""

NOTES = """
crosscheck_notes:
  - {dataset: epoch-ai, accelerator: acme-x2, field: memory, wrong: dataset, source: acme-news,
     note: The dataset gives the 150 GB of a later revision.}
  - {dataset: epoch-ai, accelerator: beta-b1, field: memory, wrong: dataset, source: beta-datasheet,
     note: Written before the values agreed.}
"""

# A launch price and a throughput figure cited to the dataset itself: they agree with the dataset by construction,
# so they are not compared.
THE_DATASET = """
sources:
  - {slug: the-dataset, url: https://example.com/ml-hardware, title: The dataset, publisher: Example, kind: benchmark,
     tier: reference-dataset, retrieved: 2026-12-01}
"""
FROM_THE_DATASET = """
prices:
  - {slug: acme-x2-launch, accelerator: acme-x2, kind: launch-list, amount: 41000, currency: USD,
     observed: 2026-02-01, date_basis: stated, source: the-dataset}
"""
FIGURE_FROM_THE_DATASET = """
throughput:
  - {accelerator: beta-b1, precision: fp16, sparsity: dense, engine: matrix, tflops: 250 TFLOPS, source: the-dataset}
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The fixture data with the CSV, aliases and notes above, built; and its data folder."""
    folder = tmp_path_factory.mktemp("crosscheck")
    data = folder / "data"
    shutil.copytree(FIXTURE_DATA, data)
    for path, text in {CSV_PATH: CSV, "aliases/epoch-ai.yml": ALIASES, "crosscheck/epoch-ai.yml": NOTES,
                       "sources/the-dataset.yml": THE_DATASET, "specs/prices/from-the-dataset.yml": FROM_THE_DATASET,
                       "specs/accelerators/beta-from-the-dataset.yml": FIGURE_FROM_THE_DATASET}.items():
        (data / path).parent.mkdir(parents=True, exist_ok=True)
        (data / path).write_text(textwrap.dedent(text))
    build_database(data, folder / "kb.db")
    with sqlite3.connect(folder / "kb.db") as conn:
        yield crosscheck(conn, data), folder


def test_every_value_of_a_matched_accelerator_is_compared_within_three_percent(checked):
    result, _ = checked
    assert result.comparisons == [
        Comparison("Acme X1", "acme-x1", "memory", 96.0, 96.0, "agree"),
        Comparison("Acme X1", "acme-x1", "bandwidth", 4900.0, 4800.0, "agree"),   # 100 / 4900 = 2.0%
        Comparison("Acme X1", "acme-x1", "tdp", 700.0, 700.0, "agree"),
        Comparison("Acme X1", "acme-x1", "price", None, 30000.0, "knowledge-base-only"),  # its launch-list price
        Comparison("Acme X2", "acme-x2", "memory", 150.0, 144.0, "explained", "dataset"),  # 6 / 150 = 4%
        Comparison("Acme X2", "acme-x2", "bandwidth", 3350.0, 3350.0, "agree"),
        Comparison("Acme X2", "acme-x2", "tdp", 1300.0, 1200.0, "unexplained"),   # 100 / 1300 = 7.7%
        Comparison("Acme X2", "acme-x2", "fp8", None, 1000.0, "knowledge-base-only"),  # its dense FP8 matrix figure
        Comparison("Acme X2", "acme-x2", "price", 41000.0, None, "cited-to-dataset"),  # ours cites the dataset
        Comparison("Beta B1", "beta-b1", "memory", 24.0, 24.0, "agree"),
        Comparison("Beta B1", "beta-b1", "bandwidth", 900.0, 900.0, "agree"),
        Comparison("Beta B1", "beta-b1", "tdp", None, 350.0, "knowledge-base-only"),
        Comparison("Beta B1", "beta-b1", "bf16-fp16", 250.0, None, "cited-to-dataset"),  # ours cites the dataset
        Comparison("Beta B1", "beta-b1", "price", None, 2500.0, "knowledge-base-only"),  # a kit of 2 at 5,000 USD
    ]


def test_names_not_matched_are_listed_and_stale_notes_found(checked):
    result, _ = checked
    assert result.unmatched == ["Zeta Z9"]
    assert result.none == ["Acme Q1"]
    assert result.stale == [("beta-b1", "memory")]
    assert summary(result) == {"matched accelerators": 3, "agree": 6, "explained": 1, "unexplained": 1,
                               "dataset-only": 0, "knowledge-base-only": 4, "cited-to-dataset": 2, "stale notes": 1,
                               "unmatched names": 1, "names meaning none": 1}


def test_report_crosscheck_prints_both_values_and_the_counts(checked):
    _, folder = checked
    result = CliRunner().invoke(cli, ["report", "--crosscheck", "--db", str(folder / "kb.db"),
                                      "--data", str(folder / "data")])
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in result.output.splitlines()]
    assert ["Acme", "X2", "acme-x2", "tdp", "W", "1300", "1200", "unexplained"] in lines
    assert ["Acme", "X2", "acme-x2", "memory", "GB", "150", "144", "explained", "(dataset", "wrong)"] in lines
    assert "unmatched: Zeta Z9" in result.output
    assert "means no accelerator: Acme Q1" in result.output
    assert "stale note (the values agree or are not compared): beta-b1 memory" in result.output


def test_every_disagreement_with_epoch_ai_is_explained(conn):
    """On the real data: a value more than 3% from Epoch AI's has a crosscheck_notes row, and no note is stale."""
    from serving.paths import DEFAULT_DATA
    result = crosscheck(conn, DEFAULT_DATA)
    assert [c for c in result.comparisons if c.status == "unexplained"] == []
    assert result.stale == []
