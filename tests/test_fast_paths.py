"""The serving speed-ups (plugins/speed.py) give what Datasette itself would give, only sooner.

The counts are checked against the database itself (link tables, listed rows),
so the same assertions hold with the speed-ups off (COMPUTEKB_SPEEDUPS=off):
only the tests of how a count is made ask for them on.
"""

import json
from collections import Counter

import pytest
from datasette.tracer import capture_traces, trace_child_tasks

from domain.schema import TABLES_BY_NAME
from etl.load import index_columns
from plugins.speed import COUNT_SQL, equality_filters, without_repeated_facets
from serving import speedups
from serving.hooked_metadata import by_hook, hooked_metadata
from serving.metadata import DATABASE
from serving.serve import served_metadata
from serving.site import DATASETTE_MAJOR, DEFAULT_SITE_URL
from serving.table_json import EXTRAS_QUERY, facet_results, row_count

# Pages the serving speed-ups change: CI runs these again with the speed-ups off.
pytestmark = pytest.mark.speedups

# --- tag facets ------------------------------------------------------------------

@pytest.mark.parametrize("column, link_table, tag", [("topic_tags", "article_topics", "topic"),
                                                     ("accelerator_tags", "article_accelerators", "accelerator")])
@pytest.mark.parametrize("language", ["en", "fr"])
async def test_tag_facet_counts_match_the_link_tables(client, conn, column, link_table, tag, language):
    data = (await client.get(f"/computekb/articles.json?language={language}&_facet_size=max&{EXTRAS_QUERY}")).json()
    counted = {r["value"]: r["count"] for r in facet_results(data)[column]["results"]}
    expected = dict(conn.execute(
        f"select l.{tag}, count(*) from {link_table} l join articles a on a.slug = l.article "
        f"where a.language = ? group by l.{tag}", (language,)).fetchall())
    assert counted == expected


async def test_a_tag_facet_value_filters_and_toggles(client, conn):
    topic = conn.execute("select topic from article_topics group by topic order by count(*) desc limit 1").fetchone()[0]
    data = (await client.get(f"/computekb/articles.json?topic_tags__arraycontains={topic}&{EXTRAS_QUERY}")).json()
    expected = conn.execute("select count(*) from article_topics where topic = ?", (topic,)).fetchone()[0]
    assert row_count(data) == expected
    chosen = next(r for r in facet_results(data)["topic_tags"]["results"] if r["value"] == topic)
    assert chosen["selected"] and chosen["count"] == expected
    assert "topic_tags__arraycontains" not in chosen["toggle_url"]


# The accelerators page shows the reader's facets, no tag facet: its FP4 formats tag facet is asked for.
FP4_FORMATS = "_facet_tags=fp4_formats"


def tag_facet_pages(conn):
    """(table, query string) of pages counted from the tag counts (equal values of other
    facet columns), then of pages that must count their rows (anything else)."""
    site, category = conn.execute("select site, category from articles group by 1, 2 order by count(*) desc").fetchone()
    topic = conn.execute("select topic from article_topics group by topic order by count(*) desc").fetchone()[0]
    word = conn.execute("select title from articles where title is not null").fetchone()[0].split()[0]
    counted = [("articles", ""), ("articles", "language=fr"), ("articles", f"site={site}&category={category}"),
               ("articles", "language__exact=en&_sort=slug"), ("articles", "language=fr&language=en"),
               ("articles", "language=xx"), ("articles", "language=en&_facet=author&_labels=on"),
               ("accelerators", f"vendor=nvidia&{FP4_FORMATS}"),
               ("accelerators", f"device_class=datacenter-gpu&status=shipping&{FP4_FORMATS}")]
    rows = [("articles", "published__gte=2025-06"), ("articles", f"_search={word}"),
            ("articles", f"topic_tags__arraycontains={topic}"), ("articles", "language__not=fr"),
            ("articles", "_where=reading_minutes > 5"), ("accelerators", f"memory_gb__gt=100&{FP4_FORMATS}")]
    return counted, rows


async def traced(client, path):
    """The response to `path`, and the SQL of every query it ran on the knowledge base
    (not Datasette's own on its internal database: 1.0's permission checks use json_each)."""
    traces = []
    with trace_child_tasks(), capture_traces(traces):
        response = await client.get(path)
    return response, [t["sql"] for t in traces if t.get("database") == DATABASE]


async def test_tag_facets_count_the_rows_a_page_lists(client, conn):
    """Each tag facet's counts are those of the tags of the rows the page lists, on
    pages counted from the tag counts and on pages that count their rows alike."""
    counted, rows = tag_facet_pages(conn)
    for table, query in counted + rows:
        response, queries = await traced(client, f"/computekb/{table}.json?{query}&_facet_size=max&{EXTRAS_QUERY}")
        listed = (await client.get(f"/computekb/{table}.json?{query}&_shape=array&_size=max")).json()
        facets = {name: f for name, f in facet_results(response.json()).items() if f["type"] == "tags"}
        assert facets, (table, query)
        for name, facet in facets.items():
            expected = Counter(tag for row in listed for tag in json.loads(row[name] or "[]"))
            shown = facet["results"]
            assert {r["value"]: r["count"] for r in shown} == expected, (table, query, name)
            assert [r["value"] for r in shown] == sorted(expected, key=lambda tag: (-expected[tag], tag))
        from_counts = any(f"{table}_tag_counts" in sql for sql in queries)
        assert from_counts == (speedups.enabled() and (table, query) in counted), (table, query)
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


@pytest.mark.skipif(not speedups.enabled(), reason="Datasette alone shows such a facet twice (category_2)")
async def test_a_default_facet_asked_for_again_gives_the_same_page(client):
    plain = (await client.get(f"/computekb/articles.json?language=fr&{EXTRAS_QUERY}")).json()
    asked = (await client.get(f"/computekb/articles.json?language=fr&_facet=category&_facet=site&_facet=author&{EXTRAS_QUERY}")).json()
    assert set(facet_results(asked)) == set(facet_results(plain)) | {"author"}
    def counts(facet):
        return [(r["value"], r["count"]) for r in facet["results"]]
    for name, facet in facet_results(plain).items():
        assert counts(facet_results(asked)[name]) == counts(facet), name


# --- the dashboards' configuration by a hook --------------------------------------

def test_the_dashboards_configuration_reaches_its_plugin_either_way(ds):
    """With the speed-ups on (Datasette 0.65) it is not in the metadata a permission check copies; off, it is."""
    configuration = ds.plugin_config("datasette-dashboards")
    assert configuration["accelerator-landscape"]["title"] == "Accelerator landscape"
    served = served_metadata(DEFAULT_SITE_URL)
    assert ("datasette-dashboards" in served.get("plugins", {})) is not (speedups.enabled() and DATASETTE_MAJOR < 1)


def test_only_lookups_of_plugin_settings_get_the_dashboards_configuration():
    if not by_hook():
        pytest.skip("the configuration is in the metadata: speed-ups off or Datasette 1.0")
    assert hooked_metadata("tables") == {} and hooked_metadata("queries") == {}
    for key in ("plugins", None):
        assert hooked_metadata(key)["plugins"]["datasette-dashboards"]["accelerator-landscape"]["title"] == \
            "Accelerator landscape"
