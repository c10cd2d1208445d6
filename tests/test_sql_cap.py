"""Requests that can run arbitrary SQL take one slot at a time (plugins/sql_cap.py):
while one computes, a second waits briefly then gets a 503, and every other page answers."""

import asyncio

import pytest
from datasette.utils.asgi import Request

from plugins.sql_cap import (
    Cap,
    bound_problem,
    cap_of,
    is_expensive,
    large_tables_of,
    with_facet_size_bounded,
)
from serving.headers import SECURITY_HEADERS
from serving.serve import SETTINGS, make_datasette
from serving.site import query_path

# Computes until sql_time_limit_ms stops it: holds its slot (and one SQL thread) for the whole limit
# (`%2B` is a plus sign: a bare `+` in a query string is a space).
SLOW = query_path("json") + "?sql=with recursive c(x) as (select 1 union all select x %2B 1 from c) select count(*) from c"
CAPPED = [
    query_path() + "?sql=select 1",
    query_path("json") + "?sql=select 1",
    query_path("csv") + "?sql=select 1",
    "/computekb/accelerators?_where=1=1",
    "/computekb/accelerators.json?_where=1=1",
    "/computekb/accelerators.csv?_stream=on",
    # a table page asking for more than a page of the default size, and a table's CSV
    "/computekb/accelerators.json?_size=max",
    "/computekb/accelerators.json?_size=51",
    "/computekb/accelerators?_facet_size=max",
    "/computekb/accelerators?_facet=vendor&_facet=device_class&_facet_array=tags",
    "/computekb/articles.csv",
]
NOT_CAPPED = [
    "/",
    "/computekb",
    "/computekb/accelerators",
    "/computekb/accelerators.json?vendor=acme",
    "/computekb/accelerators/acme-x1",
    "/computekb/articles?_search=memory",
    "/computekb/accelerators?_facet=vendor&_facet=device_class&_size=50",
    "/computekb/sources.json?_size=max&_facet=tier&_facet=kind&_facet=publisher",  # a small table: milliseconds
    "/computekb/sources.csv",
    "/computekb/articles-about?accelerator=acme-x1",
    "/-/accelerators",
    "/-/search?q=memory",
]
WAIT_MS = 200  # far below the time the slow query holds its slot


@pytest.fixture(scope="module")
def datasette(fixture_db):
    """The fixture database, its accelerators and articles tables taken as large (the fixture's tables are small)."""
    datasette = make_datasette(fixture_db)
    large_tables_of[datasette] = {("computekb", "accelerators"), ("computekb", "articles")}
    return datasette


@pytest.mark.parametrize("path", CAPPED)
def test_requests_that_choose_their_sql_are_capped(datasette, path):
    assert is_expensive(datasette, Request.fake(path))


@pytest.mark.parametrize("path", NOT_CAPPED)
def test_pages_whose_sql_is_fixed_are_not_capped(datasette, path):
    assert not is_expensive(datasette, Request.fake(path))


def test_the_default_cap_leaves_two_sql_threads_free(datasette):
    cap = cap_of(datasette)
    assert cap == Cap(at_once=SETTINGS["num_sql_threads"] - 2, wait_s=SETTINGS["sql_time_limit_ms"] / 1000)
    assert cap.at_once == 1


@pytest.mark.parametrize("config", [{"expensive_requests_at_once": 0}, {"expensive_requests_at_once": "one"},
                                    {"expensive_request_wait_ms": -1}])
async def test_a_bad_cap_setting_stops_the_start(fixture_db, config):
    with pytest.raises(ValueError, match="expensive_request"):
        await make_datasette(fixture_db, plugin_config=config).invoke_startup()


@pytest.fixture(scope="module")
async def short_wait(fixture_db):
    """The fixture database served with a capped request waiting at most WAIT_MS for a slot."""
    datasette = make_datasette(fixture_db, plugin_config={"expensive_request_wait_ms": WAIT_MS})
    await datasette.invoke_startup()
    return datasette.client


async def while_slow_runs(client, paths):
    """The answers to `paths`, asked together while SLOW holds the slot; and SLOW's own answer."""
    slow = asyncio.create_task(client.get(SLOW))
    await asyncio.sleep(0.1)  # SLOW has taken the slot
    asked = [asyncio.create_task(client.get(path)) for path in paths]
    await asyncio.sleep(0.05)  # each request has met the cap (its first step), whatever its page then costs
    if slow.done():  # a timing this test cannot prove anything with: said, not counted as a pass or a failure
        await asyncio.gather(*asked)
        pytest.skip("the slow query ended before the other pages were asked: the cap was not exercised")
    return await asyncio.gather(*asked), await slow


@pytest.mark.parametrize("path", [query_path("json") + "?sql=select 1", "/computekb/accelerators?_where=1=1",
                                  "/computekb/accelerators.csv?_stream=on"])
async def test_a_second_capped_request_gets_a_503_while_one_runs(short_wait, path):
    [busy], slow = await while_slow_runs(short_wait, [path])
    assert busy.status_code == 503, busy.text[:300]
    assert busy.headers["retry-after"].isdigit()
    assert all(busy.headers[name] == value for name, value in SECURITY_HEADERS.items())
    assert "try again" in busy.text
    assert 400 <= slow.status_code < 500  # the slow query itself ends at the time limit, with its message


async def test_other_pages_answer_while_a_capped_request_runs(short_wait):
    answers, _ = await while_slow_runs(short_wait, NOT_CAPPED)
    assert [(str(a.url), a.status_code) for a in answers if a.status_code != 200] == []


async def test_a_capped_request_waits_for_a_slot_that_comes_free(fixture_db):
    datasette = make_datasette(fixture_db)  # the default wait: the time limit
    await datasette.invoke_startup()
    answers = await asyncio.gather(*[datasette.client.get(f"{query_path('json')}?sql=select {i} as n") for i in range(4)])
    assert [a.status_code for a in answers] == [200] * 4


@pytest.mark.parametrize(("path", "problem"), [
    ("/computekb/articles?_size=max",
     "_size=max: an HTML page shows at most 100 rows; the .json and .csv forms give up to 1,000"),
    ("/computekb/articles?_size=101", "_size=101: an HTML page shows at most 100 rows"),
    ("/computekb/articles.json?" + "&".join(f"_facet=c{i}" for i in range(6)),
     "at most 5 facets per page (6 asked)"),
    ("/computekb/articles?_facet=a&_facet_array=b&_facet_date=c&_facet=d&_facet=e&_facet=f",
     "at most 5 facets per page (6 asked)"),
    ("/computekb/articles.csv?_stream=on", "a table of over 1,000 rows is not streamed as one CSV (it would run for "
     "seconds): download the whole database (/computekb.db), or take the CSV a page of 1,000 rows at a time"),
])
def test_a_table_page_beyond_its_bounds_is_refused_naming_them(datasette, path, problem):
    assert bound_problem(datasette, Request.fake(path)).startswith(problem)


@pytest.mark.parametrize("path", ["/computekb/articles?_size=100", "/computekb/articles.json?_size=max",
                                  "/computekb/articles.csv?_size=max&_facet=a&_facet=b&_facet=c&_facet=d&_facet=e",
                                  "/computekb/sources?_size=max&" + "&".join(f"_facet=c{i}" for i in range(6)),
                                  "/computekb/sources.csv?_stream=on",
                                  "/-/accelerators?_size=max"])
def test_a_table_page_within_its_bounds_is_answered(datasette, path):
    assert bound_problem(datasette, Request.fake(path)) is None


@pytest.fixture(scope="module")
def with_a_large_table(fixture_db, tmp_path_factory):
    """The fixture database with a table of 1,001 rows: large (its other tables are small)."""
    import sqlite3
    database = tmp_path_factory.mktemp("large") / "computekb.db"
    database.write_bytes(fixture_db.read_bytes())
    with sqlite3.connect(database) as conn:
        conn.execute("create table big (x)")
        conn.executemany("insert into big values (?)", [(i,) for i in range(1001)])
    return database


async def test_a_refused_table_page_is_a_400_in_its_format(with_a_large_table):
    datasette = make_datasette(with_a_large_table)
    await datasette.invoke_startup()
    page = await datasette.client.get("/computekb/big?_size=max")
    assert page.status_code == 400 and "an HTML page shows at most 100 rows" in page.text
    answer = await datasette.client.get("/computekb/big.json?" + "&".join(f"_facet=c{i}" for i in range(6)))
    assert answer.status_code == 400 and answer.json()["error"] == "at most 5 facets per page (6 asked): ask the " \
                                                                    "others on another page"
    assert (await datasette.client.get("/computekb/accelerators?_size=max")).status_code == 200, "a small table"


@pytest.mark.parametrize(("query", "sent"), [
    ("_facet=vendor&_facet_size=max", "_facet=vendor&_facet_size=100"),
    ("_facet_size=5000&x=1", "_facet_size=100&x=1"),
    ("_facet_size=100", "_facet_size=100"),
    ("_facet_size=7", "_facet_size=7"),
])
def test_a_facet_size_is_read_within_its_bound(query, sent):
    request = Request.fake("/computekb/accelerators?" + query)
    assert with_facet_size_bounded(request.scope, request)["query_string"].decode() == sent


async def test_the_download_is_the_file_with_its_size(fixture_client, fixture_db):
    answer = await fixture_client.get("/computekb.db", headers={"accept-encoding": "gzip"})
    assert answer.status_code == 200 and answer.content == fixture_db.read_bytes()
    assert answer.headers["content-length"] == str(fixture_db.stat().st_size)
    assert answer.headers["content-encoding"] == "identity", "sent as it is, not compressed on the event loop"
    assert answer.headers["content-disposition"] == 'attachment; filename="computekb.db"'
    assert all(answer.headers[name] == value for name, value in SECURITY_HEADERS.items())


async def test_a_large_tables_heavy_page_waits_for_the_slot_and_a_small_tables_does_not(with_a_large_table):
    """A page of 1,000 rows of the large table is capped; the same of a small table, and a default page, are not."""
    datasette = make_datasette(with_a_large_table, plugin_config={"expensive_request_wait_ms": WAIT_MS})
    await datasette.invoke_startup()
    (big, small, big_default), _ = await while_slow_runs(datasette.client, [
        "/computekb/big.json?_size=max", "/computekb/accelerators.json?_size=max", "/computekb/big.json"])
    assert (big.status_code, small.status_code, big_default.status_code) == (503, 200, 200)
