"""A failing query of the client's own gets one error answer in every format, naming why
(plugins/failed_queries.py), and the server log no traceback for it."""

import sqlite3
import sys
from urllib.parse import urlencode

import pytest

from domain import sizing
from plugins import limits
from serving.serve import make_datasette
from serving.site import DATASETTE_MAJOR, query_path

from conftest import QUERY_ERROR_PAGE_STATUS

# 101 rows of 99,999 bytes each: over the 10,000,000 bytes of one answer
OVER_THE_CAP = ("with recursive c(x) as (select 1 union all select x + 1 from c limit 101) "
                "select zeroblob(99999) from c")
PRINTF_OVER = "select printf('%.*c', 1000000, 'x')"
FAILURES = [
    ("select nosuch(1)", "no such function: nosuch"),
    ("select * from nosuch", "no such table: nosuch"),
    (OVER_THE_CAP, "the answer is over 10,000,000 bytes, the limit of one answer"),
    (PRINTF_OVER, "printf(): printf width or precision over 100,000"),
]


def url(fmt, query):
    return query_path(fmt) + "?" + urlencode({"sql": query})


@pytest.mark.parametrize(("query", "reason"), FAILURES)
async def test_a_failed_query_is_refused_naming_why_in_every_format(fixture_client, query, reason):
    as_csv = await fixture_client.get(url("csv", query))
    assert (as_csv.status_code, as_csv.headers["content-type"]) == (400, "text/plain; charset=utf-8")
    assert as_csv.text.startswith(reason)
    as_json = await fixture_client.get(url("json", query))
    assert as_json.status_code == 400 and as_json.json()["error"].startswith(reason)
    page = await fixture_client.get(url(None, query))
    assert page.status_code == QUERY_ERROR_PAGE_STATUS and reason in page.text
    assert "user-defined function raised exception" not in as_json.text + page.text


@pytest.mark.parametrize("query, expected", [("select 1 as a where 0", "a\r\n"), ("select 'x' as a", "a\r\nx\r\n")])
async def test_an_answer_with_few_rows_is_left_as_it_is(fixture_client, query, expected):
    answer = await fixture_client.get(url("csv", query))
    assert (answer.status_code, answer.text) == (200, expected)
    assert (await fixture_client.get(url("csv", query) + "&_header=off")).status_code == 200


async def test_a_function_refusal_prints_no_traceback(fixture_client, capfd, monkeypatch):
    printed = []  # what sqlite3 hands Python to print as "Exception ignored in: <function ...>" and a traceback
    monkeypatch.setattr(sys, "unraisablehook", printed.append)
    capfd.readouterr()
    await fixture_client.get(url("json", PRINTF_OVER))
    as_json = capfd.readouterr().err
    await fixture_client.get(url("csv", PRINTF_OVER))
    as_csv = capfd.readouterr().err
    assert printed == [] and "Traceback" not in as_json + as_csv
    # Datasette's one line for each failed query; 1.0 runs a failed CSV query twice, and logs each run
    assert (as_json.count("\n"), as_csv.count("\n")) == (1, 2 if DATASETTE_MAJOR >= 1 else 1)


def test_the_largest_batch_at_extreme_arguments_is_a_refusal_not_an_overflow():
    arch = sizing.Architecture(layers=2, hidden_size=8, attention_heads=4, vocab_size=10, kv_heads=2, head_dim=2,
                               intermediate_size=16)
    # 10^15 bytes free, a cache of 10^-300 bits per value: no float holds the count of sequences
    workload = sizing.Workload(context=1, batch=1, kv_bits=1e-300)
    with pytest.raises(ValueError, match="no count of sequences"):
        sizing.largest_batch(arch, sizing.Checkpoint.uniform(16), sizing.Layout(1), sizing.Device(1e15, 1), workload)


@pytest.mark.skipif(DATASETTE_MAJOR >= 1, reason="0.65's settings API")
def test_a_page_of_the_largest_size_may_bind_one_variable_per_row(fixture_db):
    datasette = make_datasette(fixture_db)
    conn = sqlite3.connect(":memory:")
    limits.prepare_connection(conn, datasette)
    rows = datasette.setting("max_returned_rows")  # 1,000: the labels of a page of ?_size=max
    assert conn.execute(f"select {rows} in ({', '.join('?' * rows)})", list(range(1, rows + 1))).fetchone()[0] == 1
    with pytest.raises(sqlite3.OperationalError, match="too many SQL variables"):
        conn.execute(f"select 1 in ({', '.join('?' * 1101)})", [0] * 1101)
