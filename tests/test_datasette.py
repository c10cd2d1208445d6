"""The served knowledge base, through Datasette's own test client."""


import pytest

from domain.schema import TABLES
from serving.table_json import EXTRAS_QUERY, facet_results

from conftest import DASHBOARD_PAGES_FAIL_ON_1

# Pages the serving speed-ups change: CI runs these again with the speed-ups off.
pytestmark = pytest.mark.speedups


@pytest.mark.parametrize("path, shows", [
    ("/", 'action="/-/accelerators"'), ("/computekb", 'href="/computekb/accelerators"'),
    ("/computekb/accelerators", "H100 SXM"), ("/computekb/articles", "kv-cache"),
    ("/computekb/citations", "memory_bandwidth_gbs"), ("/computekb/release", "data_hash")])
async def test_pages_answer_with_their_content(client, path, shows):
    response = await client.get(path)
    assert response.status_code == 200 and shows in response.text, path


async def test_every_table_page_counts_its_rows(client, conn):
    for table in TABLES:
        data = (await client.get(f"/computekb/{table.name}.json?_size=0&_extra=count")).json()
        expected = conn.execute(f"select count(*) from [{table.name}]").fetchone()[0]
        assert data.get("filtered_table_rows_count", data.get("count")) == expected, table.name


async def test_row_pages_live_at_their_slug(client, conn):
    slug = conn.execute("select slug from accelerators order by slug limit 1").fetchone()[0]
    response = await client.get(f"/computekb/accelerators/{slug}")
    assert response.status_code == 200
    assert slug in response.text


async def test_units_are_shown_with_values(client, conn):
    row = conn.execute("select slug, memory_bandwidth_gbs from accelerators "
                       "where memory_bandwidth_gbs >= 1000 order by slug limit 1").fetchone()
    response = await client.get(f"/computekb/accelerators/{row['slug']}")
    tb_per_s = round(row["memory_bandwidth_gbs"] / 1000, 6)
    assert f"{tb_per_s:g}&nbsp;TB/s" in response.text


async def test_unit_aware_filters(client, conn):
    expected = {r[0] for r in conn.execute("select slug from accelerators where memory_bandwidth_gbs > 3000")}
    response = await client.get("/computekb/accelerators.json?memory_bandwidth_gbs__gt=3TB/s&_shape=array&_col=slug&_size=max")
    assert response.status_code == 200
    assert {r["slug"] for r in response.json()} == expected


async def test_default_facets_are_offered(client):
    data = (await client.get(f"/computekb/accelerators.json?{EXTRAS_QUERY}")).json()
    facets = set(facet_results(data))
    assert facets == {"vendor", "device_class", "memory_kind", "native_fp8", "native_fp4"}, \
        "the reader's five"
    other = (await client.get(f"/computekb/accelerators.json?{EXTRAS_QUERY}&_facet=status")).json()
    assert "status" in facet_results(other), "another facet column is one argument away"
    data = (await client.get(f"/computekb/articles.json?{EXTRAS_QUERY}")).json()
    assert {"site", "language", "category", "accelerator_tags", "topic_tags"} <= set(facet_results(data))


async def test_column_descriptions_come_from_the_schema(client):
    html = (await client.get("/computekb/accelerators")).text
    assert TABLES[[t.name for t in TABLES].index("accelerators")].field("interconnect_gbs").description in html


@pytest.mark.parametrize("query, expected", [("memoire", "mémoire"), ("bande passante", "bande passante")])
async def test_search_ignores_accents(client, conn, query, expected):
    response = await client.get(f"/computekb/articles.json?_search={query}&_shape=array&_col=summary&_col=title")
    rows = response.json()
    assert rows
    assert all(expected in ((r["summary"] or "") + (r["title"] or "")).lower() for r in rows)
    direct = conn.execute("select count(*) from articles where lower(summary || coalesce(title, '')) like ?",
                          (f"%{expected}%",)).fetchone()[0]
    assert len(rows) == direct


async def test_every_page_shows_the_data_release(client, conn):
    release = conn.execute("select data_release from release").fetchone()[0]
    for path in ("/", "/computekb", "/computekb/articles"):
        assert f"<code>{release}</code>" in (await client.get(path)).text, path


@pytest.mark.parametrize("column, link_table, link_column", [("accelerator_tags", "article_accelerators", "accelerator"),
                                                             ("topic_tags", "article_topics", "topic")])
async def test_tag_facets_count_the_link_tables(client, conn, column, link_table, link_column):
    data = (await client.get(f"/computekb/articles.json?{EXTRAS_QUERY}&_facet_size=max")).json()
    counted = {r["value"]: r["count"] for r in facet_results(data)[column]["results"]}
    expected = dict(conn.execute(f"select {link_column}, count(*) from {link_table} group by {link_column}").fetchall())
    assert counted == expected


async def test_tag_facet_selection_filters_rows(client, conn):
    accelerator, count = conn.execute("select accelerator, count(*) from article_accelerators "
                                      "group by accelerator order by 2 desc limit 1").fetchone()
    rows = (await client.get(f"/computekb/articles.json?accelerator_tags__arraycontains={accelerator}"
                             "&_shape=array&_size=max")).json()
    assert len(rows) == count


async def test_home_page_links_every_entry_point(client):
    html = (await client.get("/")).text
    for href in ("/computekb/accelerators?", "/-/compare", "/-/dashboards/accelerator-landscape",
                 "/-/dashboards/article-catalog", "/-/what-fits", "/computekb/articles",
                 "/-/search", "/computekb/citations"):
        assert f'href="{href}' in html, href
    # one "What fits" link, to the reader's page (not the raw SQL form of the canned query)
    content = html[html.index('<section class="content"'):]   # after the menu, which links every reader page
    assert content.count('href="/-/what-fits"') == 1 and 'href="/computekb/what-fits"' not in content
    for path in ("/-/compare", "/computekb/what-fits", "/computekb/search-articles"):
        assert (await client.get(path)).status_code == 200, path


@DASHBOARD_PAGES_FAIL_ON_1
async def test_home_page_dashboard_link_answers(client):
    assert (await client.get("/-/dashboards/accelerator-landscape")).status_code == 200
