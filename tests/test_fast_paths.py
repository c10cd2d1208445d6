"""The serving shortcuts give what Datasette itself would give, only faster."""

import copy
import json
import math
import sqlite3
from collections import Counter

import pytest
from datasette.app import Datasette
from datasette.database import Database
from datasette.tracer import capture_traces, trace_child_tasks
from datasette.views.base import ureg
from hypothesis import given, settings
from hypothesis import strategies as st

from etl.load import index_columns
from etl.read_only import read_only
from etl.schema import TABLES_BY_NAME
from etl.serve import PLUGINS_DIR
from plugins.facets import COUNT_SQL, equality_filters, without_repeated_facets
from plugins.immutable_schema import SCHEMA_METHODS, SCHEMA_SQL, remembered
from plugins.units import with_unit

UNITS = ["GB", "GB/s", "W", "TFLOPS"]


# --- metadata shared, not copied ---------------------------------------------

async def test_served_metadata_is_shared_on_deep_copy(ds, client):
    metadata = ds._metadata_local
    copied = copy.deepcopy(metadata)
    columns = metadata["databases"]["computekb"]["tables"]["accelerators"]["columns"]
    assert copied["databases"]["computekb"]["tables"]["accelerators"]["columns"] is columns
    assert copied["plugins"] is metadata["plugins"]


async def test_shared_metadata_cannot_be_changed(ds, client):
    tables = ds._metadata_local["databases"]["computekb"]["tables"]
    with pytest.raises(TypeError):
        tables["accelerators"]["columns"]["memory_gb"] = "changed"
    with pytest.raises(TypeError):
        tables["accelerators"]["facets"].append("family")
    with pytest.raises(TypeError):
        ds._metadata_local["plugins"]["datasette-dashboards"].clear()


async def test_datasette_may_only_rewrite_what_is_there(ds, client):
    table = ds._metadata_local["databases"]["computekb"]["tables"]["accelerators"]
    table.update({"license": table["license"]})  # as Datasette does on each table page
    assert table["license"] == ds._metadata_local["license"]
    with pytest.raises(TypeError):
        table.update({"license": "another license"})


@pytest.mark.parametrize("key, database, table", [
    ("title", None, None), ("license", "computekb", "accelerators"), ("plugins", "computekb", "articles"),
    ("units", "computekb", "accelerators"), ("queries", "computekb", None), ("facets", "computekb", "nothing-here")])
async def test_remembered_lookups_answer_as_datasette_does(ds, client, key, database, table):
    assert ds.metadata(key, database=database, table=table) == Datasette.metadata(ds, key, database, table)
    assert ds.metadata(key, database=database, table=table) is ds.metadata(key, database=database, table=table)


def test_read_only_keeps_every_value():
    value = {"a": [1, {"b": "c"}], "d": {"e": [None, 2.5]}}
    shared = read_only(value)
    assert shared == value
    assert copy.deepcopy(shared) is shared


async def test_only_canned_queries_stay_mutable_in_the_served_metadata(ds, client):
    database = ds._metadata_local["databases"]["computekb"]
    assert database["queries"] and type(database["queries"]) is dict  # Datasette adds a `name` to each
    with pytest.raises(TypeError):
        read_only({"queries": [1]})["queries"].append(2)  # not for other read-only values


async def test_datasette_still_fills_in_inherited_metadata(client):
    # Datasette writes the license into the database and table metadata it renders.
    for path in ("/computekb", "/computekb/accelerators", "/computekb/accelerators/nvidia-h100-sxm"):
        response = await client.get(path)
        assert response.status_code == 200
        assert "CC BY 4.0" in response.text, path


# --- units ---------------------------------------------------------------------

@pytest.fixture(autouse=True, scope="module")
async def custom_units(client):
    """Datasette defines the metadata's custom units (FLOPS) in pint when it starts."""


def datasette_display(value, unit):
    """Datasette 0.65's own code for a cell with a unit (datasette/views/table.py)."""
    quantity = value * ureg(unit)
    quantity = round(quantity.to_compact(), 6)
    return f"{quantity:~P}".replace(" ", "&nbsp;")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(UNITS),
       st.one_of(st.integers(-10**9, 10**12), st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15)))
def test_unit_display_is_datasettes(unit, value):
    assert str(with_unit(value, unit)) == datasette_display(value, unit)


@pytest.mark.parametrize("value", [0, 0.0, -0.0, 1000, 1000.0, 999.9999999, 1e-9, math.inf])
@pytest.mark.parametrize("unit", UNITS)
def test_unit_display_is_datasettes_at_the_edges(unit, value):
    assert str(with_unit(value, unit)) == datasette_display(value, unit)


async def test_unit_cells_of_a_table_page_are_shown_with_their_unit(client, conn):
    row = conn.execute("select slug, tdp_w from accelerators where tdp_w >= 1000 order by slug limit 1").fetchone()
    html = (await client.get(f"/computekb/accelerators?slug={row['slug']}")).text
    assert datasette_display(row["tdp_w"], "W") in html


# --- tag facets ------------------------------------------------------------------

@pytest.mark.parametrize("column, link_table, tag", [("topic_tags", "article_topics", "topic"),
                                                     ("accelerator_tags", "article_accelerators", "accelerator")])
@pytest.mark.parametrize("language", ["en", "fr"])
async def test_tag_facet_counts_match_the_link_tables(client, conn, column, link_table, tag, language):
    data = (await client.get(f"/computekb/articles.json?language={language}&_facet_size=max")).json()
    counted = {r["value"]: r["count"] for r in data["facet_results"][column]["results"]}
    expected = dict(conn.execute(
        f"select l.{tag}, count(*) from {link_table} l join articles a on a.slug = l.article "
        f"where a.language = ? group by l.{tag}", (language,)).fetchall())
    assert counted == expected


async def test_a_tag_facet_value_filters_and_toggles(client, conn):
    topic = conn.execute("select topic from article_topics group by topic order by count(*) desc limit 1").fetchone()[0]
    data = (await client.get(f"/computekb/articles.json?topic_tags__arraycontains={topic}")).json()
    expected = conn.execute("select count(*) from article_topics where topic = ?", (topic,)).fetchone()[0]
    assert data["filtered_table_rows_count"] == expected
    chosen = next(r for r in data["facet_results"]["topic_tags"]["results"] if r["value"] == topic)
    assert chosen["selected"] and chosen["count"] == expected
    assert "topic_tags__arraycontains" not in chosen["toggle_url"]


def tag_facet_pages(conn):
    """(table, query string) of pages counted from the tag counts (equal values of other
    facet columns), then of pages that must count their rows (anything else)."""
    site, category = conn.execute("select site, category from articles group by 1, 2 order by count(*) desc").fetchone()
    topic = conn.execute("select topic from article_topics group by topic order by count(*) desc").fetchone()[0]
    word = conn.execute("select title from articles where title is not null").fetchone()[0].split()[0]
    counted = [("articles", ""), ("articles", "language=fr"), ("articles", f"site={site}&category={category}"),
               ("articles", "language__exact=en&_sort=slug"), ("articles", "language=fr&language=en"),
               ("articles", "language=xx"), ("articles", "language=en&_facet=author&_labels=on"),
               ("accelerators", "vendor=nvidia"), ("accelerators", "device_class=datacenter-gpu&status=shipping")]
    rows = [("articles", "published__gte=2025-06"), ("articles", f"_search={word}"),
            ("articles", f"topic_tags__arraycontains={topic}"), ("articles", "language__not=fr"),
            ("articles", "_where=reading_minutes > 5"), ("accelerators", "memory_gb__gt=100")]
    return counted, rows


async def traced(client, path):
    """The response to `path`, and the SQL of every query it ran."""
    traces = []
    with trace_child_tasks(), capture_traces(traces):
        response = await client.get(path)
    return response, [t["sql"] for t in traces]


async def test_tag_facets_count_the_rows_a_page_lists(client, conn):
    """Each tag facet's counts are those of the tags of the rows the page lists, on
    pages counted from the tag counts and on pages that count their rows alike."""
    counted, rows = tag_facet_pages(conn)
    for table, query in counted + rows:
        response, queries = await traced(client, f"/computekb/{table}.json?{query}&_facet_size=max")
        listed = (await client.get(f"/computekb/{table}.json?{query}&_shape=array&_size=max")).json()
        facets = {name: f for name, f in response.json()["facet_results"].items() if f["type"] == "tags"}
        assert facets, (table, query)
        for name, facet in facets.items():
            expected = Counter(tag for row in listed for tag in json.loads(row[name] or "[]"))
            shown = facet["results"]
            assert {r["value"]: r["count"] for r in shown} == expected, (table, query, name)
            assert [r["value"] for r in shown] == sorted(expected, key=lambda tag: (-expected[tag], tag))
        from_counts = any(f"{table}_tag_counts" in sql for sql in queries)
        assert from_counts == ((table, query) in counted), (table, query)
        assert from_counts != any("json_each" in sql for sql in queries), (table, query)


@pytest.mark.parametrize("pairs, expected", [
    ([], []),
    ([("language", "fr"), ("_facet", "site"), ("_facet_size", "5"), ("_sort_desc", "published")], [("language", "fr")]),
    ([("site", "a"), ("_extra", "count"), ("_nocount", "1")], [("site", "a")]),
    ([("site", "a"), ("category__exact", "b"), ("site", "c")], [("site", "a"), ("category", "b"), ("site", "c")]),
    ([("language", "fr"), ("_next", "x")], None),
    ([("_search", "memory")], None),
    ([("_where", "1")], None),
    ([("language__not", "fr")], None),
    ([("published", "2025-01-01")], None),  # not a dimension
    ([("_language__exact", "fr")], None),   # a filter on a column `_language`
])
def test_equality_filters(pairs, expected):
    assert equality_filters(pairs, ["site", "language", "category"]) == expected


# --- facet indexes -----------------------------------------------------------------

def test_facet_indexes_hold_every_facet_column():
    articles = TABLES_BY_NAME["articles"]
    facet_columns = {f.name for f in articles.columns if f.facet}
    assert {"site", "language", "category", "topic_tags"} <= facet_columns
    for name in facet_columns - {"accelerator_tags", "topic_tags"}:
        columns = index_columns(articles, articles.field(name))
        assert columns[0] == name and set(columns) == facet_columns
        assert columns[-2:] == ["accelerator_tags", "topic_tags"]


@pytest.mark.parametrize("facet", ["site", "category", "published"])
def test_a_facet_count_on_a_filtered_table_reads_an_index_only(conn, facet):
    sql = (f"select {facet} as value, count(*) as count from (select * from articles where language = 'fr') "
           f"where {facet} is not null group by {facet} order by count desc, value limit 16")
    assert_index_only(conn, sql)


def assert_index_only(conn, sql):
    reads = [row[-1] for row in conn.execute("explain query plan " + sql) if " articles " in row[-1] + " "]
    assert reads and all("COVERING INDEX" in read for read in reads), reads


@pytest.mark.parametrize("column", ["topic_tags", "accelerator_tags"])
def test_a_tag_facet_count_on_a_filtered_table_reads_an_index_only(conn, column):
    assert_index_only(conn, COUNT_SQL.format(column=column, sql="select * from articles where language = 'fr'", limit=16))


async def test_allow_rules_in_shared_metadata_still_apply(tmp_path, client):
    # `client` first: our plugins are loaded (and stay loaded) for every Datasette in the process.
    path = tmp_path / "private.db"
    sqlite3.connect(path).execute("create table secrets (id integer primary key)").connection.commit()
    private = Datasette([str(path)], metadata={"databases": {"private": {"tables": {"secrets": {"allow": {"id": "root"}}}}}})
    await private.invoke_startup()
    rules = private._metadata_local["databases"]["private"]["tables"]["secrets"]
    assert copy.deepcopy(rules) is rules  # shared
    for _ in range(2):  # the second answer comes from the cached rules
        assert (await private.client.get("/private/secrets")).status_code == 403
    cookies = {"ds_actor": private.sign({"a": {"id": "root"}}, "actor")}
    assert (await private.client.get("/private/secrets", cookies=cookies)).status_code == 200


# --- facets asked for twice ------------------------------------------------------------

@pytest.mark.parametrize("query, expected", [
    ("language=fr&_facet=category&_facet=site", "language=fr"),
    ("_facet=author&_facet=author&_facet_size=5", "_facet=author&_facet_size=5"),
    ("_facet_tags=topic_tags&_facet_array=topic_tags", "_facet_array=topic_tags"),
    ("_facet=author&q=a%20b", "_facet=author&q=a%20b"),  # nothing dropped: the query string as it came
])
def test_repeated_facets_are_dropped(query, expected):
    defaults = {("column", "category"), ("column", "site"), ("tags", "topic_tags")}
    assert without_repeated_facets(query, defaults) == expected


async def test_a_default_facet_asked_for_again_gives_the_same_page(client):
    plain = (await client.get("/computekb/articles.json?language=fr")).json()
    asked = (await client.get("/computekb/articles.json?language=fr&_facet=category&_facet=site&_facet=author")).json()
    assert set(asked["facet_results"]) == set(plain["facet_results"]) | {"author"}
    def counts(facet):
        return [(r["value"], r["count"]) for r in facet["results"]]
    for name, facet in plain["facet_results"].items():
        assert counts(asked["facet_results"][name]) == counts(facet), name


# --- the schema of an immutable database, read once --------------------------------------

DATABASE_WIDE = {"table_names", "view_names", "get_all_foreign_keys", "hidden_table_names"}


def schema_questions(conn, method):
    """Every question `method` can be asked of the database: each table and view, and one that is not there."""
    if method in DATABASE_WIDE:
        return [()]
    names = [name for (name,) in conn.execute("select name from sqlite_master where type in ('table', 'view')")]
    return [(name,) for name in names + ["no-such-table"]]


@pytest.mark.parametrize("method", SCHEMA_METHODS)
async def test_remembered_schema_answers_as_datasette_does(ds, client, conn, method):
    db = ds.get_database("computekb")
    for question in schema_questions(conn, method):
        answer = await getattr(db, method)(*question)
        assert answer == await getattr(Database, method)(db, *question), question
        assert await getattr(db, method)(*question) is answer, question


async def test_schema_sql_answers_as_datasette_does(ds, client):
    db = ds.get_database("computekb")
    for sql, params in ((SCHEMA_SQL[0], ("ACCELERATORS",)), (SCHEMA_SQL[0], ("nothing",)), (SCHEMA_SQL[1], None)):
        expected = await Database.execute(db, sql, params)
        assert [tuple(row) for row in await db.execute(sql, params)] == [tuple(row) for row in expected]


async def test_a_remembered_question_runs_no_query(ds, client, monkeypatch):
    db = ds.get_database("computekb")
    await db.primary_keys("accelerators")
    await db.execute(SCHEMA_SQL[0], ("Accelerators",))
    ran = []
    monkeypatch.setattr(db, "execute_fn", lambda fn: ran.append(fn))
    assert await db.primary_keys("accelerators") == ["slug"]
    assert (await db.execute(SCHEMA_SQL[0], ("Accelerators",))).first()[0] == "accelerators"
    assert ran == []


async def test_remembered_answers_are_read_only(ds, client):
    db = ds.get_database("computekb")
    with pytest.raises(TypeError):
        (await db.primary_keys("accelerators")).append("family")
    with pytest.raises(TypeError):
        (await db.get_all_foreign_keys())["accelerators"]["incoming"].clear()


async def test_remembered_answers_are_bounded():
    asked = []

    async def ask(question):
        asked.append(question)
        return question

    remembered_ask = remembered(ask, bound=2)
    for question in (1, 2, 1, 3, 1, 2):
        assert await remembered_ask(question) == question
    assert asked == [1, 2, 3, 2]  # 2 was the oldest when 3 came in


async def test_an_immutable_database_schema_is_refreshed_once(ds, client, monkeypatch):
    internal = ds.get_database("_internal")
    assert (await internal.execute("select count(*) from columns where table_name = 'accelerators'")).single_value() > 0
    asked = []
    execute = internal.execute
    monkeypatch.setattr(internal, "execute", lambda sql, *args, **kwargs: asked.append(sql) or execute(sql, *args, **kwargs))
    assert (await client.get("/computekb/accelerators")).status_code == 200
    assert not [sql for sql in asked if "schema_version" in sql]


async def test_a_mutable_database_schema_is_read_every_time(tmp_path, client):
    path = tmp_path / "mutable.db"
    sqlite3.connect(path).execute("create table notes (title text)").connection.close()
    mutable = Datasette([str(path)], plugins_dir=str(PLUGINS_DIR))
    await mutable.invoke_startup()
    db = mutable.get_database("mutable")
    assert await db.table_columns("notes") == ["title"]
    assert (await mutable.client.get("/mutable/notes.json")).status_code == 200
    await db.execute_write("alter table notes add column body text")
    assert await db.table_columns("notes") == ["title", "body"]
    assert (await mutable.client.get("/mutable/notes.json?_shape=objects")).json()["columns"] == ["rowid", "title", "body"]
    internal = mutable.get_database("_internal")
    columns = await internal.execute("select name from columns where database_name = 'mutable' and table_name = 'notes' order by cid")
    assert [row[0] for row in columns] == ["title", "body"]
