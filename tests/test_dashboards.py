"""The datasette-dashboards configuration in metadata.yml, through Datasette's test client.

A chart's data is fetched the way the plugin's JavaScript fetches it: the chart
query, its [[ ]] filter clauses kept or dropped by the plugin's own function,
run as /computekb.json?sql=...&<filters>. Expected rows come from the database.
"""

import html
import re
from collections import Counter

import pytest
from datasette_dashboards import replace_opts_in_query

from serving.site import query_path

from conftest import DASHBOARD_PAGES_FAIL_ON_1

LANDSCAPE, CATALOG = "accelerator-landscape", "article-catalog"


@pytest.fixture(scope="module")
def dashboards(ds):
    return ds.plugin_config("datasette-dashboards")


async def chart_rows(client, dashboards, dashboard, chart, filters=None):
    filters = filters or {}
    sql = replace_opts_in_query(dashboards[dashboard]["charts"][chart]["query"], filters)
    response = await client.get(query_path("json"), params={"sql": sql, **filters, "_shape": "objects"})
    assert response.status_code == 200, response.text
    return response.json()["rows"]


def test_both_dashboards_are_configured(dashboards):
    assert {LANDSCAPE, CATALOG} <= set(dashboards)
    for dashboard in dashboards.values():
        placed = {cell for row in dashboard["layout"] for cell in row} - {"."}
        assert placed == set(dashboard["charts"]), "every chart is placed, and only charts"


@DASHBOARD_PAGES_FAIL_ON_1
async def test_dashboard_index_and_pages_answer(client, dashboards):
    index = await client.get("/-/dashboards")
    assert index.status_code == 200
    for slug, dashboard in dashboards.items():
        assert dashboard["title"] in index.text
        page = await client.get(f"/-/dashboards/{slug}")
        assert page.status_code == 200
        for chart in dashboard["charts"]:
            assert f'id="chart-{chart}"' in page.text
            assert (await client.get(f"/-/dashboards/{slug}/{chart}")).status_code == 200, chart


async def test_every_chart_query_runs_with_and_without_filters(client, conn, dashboards):
    some = {"vendor": conn.execute("SELECT vendor FROM accelerators LIMIT 1").fetchone()[0],
            "device_class": "datacenter-gpu", "fp4": "yes", "min_memory": "1",
            "site": conn.execute("SELECT slug FROM sites LIMIT 1").fetchone()[0], "language": "en",
            "since": "2000-01-01", "memory_kind": "hbm"}
    for slug, dashboard in dashboards.items():
        filters = {key: some[key] for key in dashboard["filters"] if key in some}
        for chart, config in dashboard["charts"].items():
            if "query" in config:
                await chart_rows(client, dashboards, slug, chart)
                await chart_rows(client, dashboards, slug, chart, filters)


@DASHBOARD_PAGES_FAIL_ON_1
async def test_filter_state_lives_in_the_url(client, conn):
    vendor = conn.execute("SELECT vendor FROM accelerators ORDER BY vendor LIMIT 1").fetchone()[0]
    page = await client.get(f"/-/dashboards/{LANDSCAPE}?vendor={vendor}&min_memory=16")
    assert f'<option value="{vendor}" selected>' in page.text
    assert 'name="min_memory" type="number" min="0" step="1" value="16"' in page.text
    chart = await client.get(f"/-/dashboards/{LANDSCAPE}/memory-vs-bandwidth?vendor={vendor}")
    assert chart.status_code == 200
    assert f"vendor={vendor}" in html.unescape(chart.text), "the chart's own page keeps the filter"


async def test_vendor_and_memory_filters_select_the_right_accelerators(client, conn, dashboards):
    vendor = conn.execute("SELECT vendor FROM accelerators GROUP BY vendor ORDER BY count(*) DESC").fetchone()[0]
    rows = await chart_rows(client, dashboards, LANDSCAPE, "memory-vs-bandwidth", {"vendor": vendor})
    assert {r["slug"] for r in rows} == {r[0] for r in conn.execute(
        "SELECT slug FROM accelerators WHERE vendor = ? AND scope <> 'system'", (vendor,))}
    memories = sorted(r[0] for r in conn.execute("SELECT memory_gb FROM accelerators WHERE memory_gb IS NOT NULL "
                                                 "AND scope <> 'system'"))
    floor = memories[len(memories) // 2]
    rows = await chart_rows(client, dashboards, LANDSCAPE, "memory-vs-bandwidth", {"min_memory": str(floor)})
    assert sorted(r["memory_gb"] for r in rows) == [m for m in memories if m >= floor]


@pytest.mark.parametrize("answer", ["yes", "no", "unknown"])
async def test_fp4_filter_follows_native_fp4(client, conn, dashboards, answer):
    expected = {r["slug"] for r in conn.execute("SELECT slug, native_fp4 FROM accelerators WHERE scope <> 'system'")
                if r["native_fp4"] == answer}
    rows = await chart_rows(client, dashboards, LANDSCAPE, "memory-vs-bandwidth", {"fp4": answer})
    assert {r["slug"] for r in rows} == expected


async def test_systems_and_sram_are_charted_only_when_asked_for(client, dashboards):
    """Racks are not single devices, and on-chip SRAM is not DRAM: both stay out until a filter asks."""
    rows = {r["slug"]: r for r in await chart_rows(client, dashboards, LANDSCAPE, "memory-vs-bandwidth")}
    assert "nvidia-gb200-nvl72" not in rows and "nvidia-gb200" in rows
    assert rows["cerebras-wse-3"]["sram_left_out"] == 1 and rows["nvidia-b200"]["sram_left_out"] == 0
    systems = {r["slug"] for r in await chart_rows(client, dashboards, LANDSCAPE, "memory-vs-bandwidth",
                                                    {"scope": "system"})}
    assert {"nvidia-gb200-nvl72", "nvidia-gb300-nvl72"} <= systems and "nvidia-gb200" not in systems
    sram = {r["slug"]: r for r in await chart_rows(client, dashboards, LANDSCAPE, "memory-vs-bandwidth",
                                                   {"memory_kind": "on-chip-sram"})}
    assert set(sram) == {"cerebras-wse-3", "groq-lpu"} and sram["groq-lpu"]["sram_left_out"] == 0


async def test_throughput_chart_gets_dense_matrix_fp8_and_fp4_only(client, conn, dashboards):
    rows = {r["slug"]: r for r in await chart_rows(client, dashboards, LANDSCAPE, "dense-fp8-fp4")}
    charted = {(slug, p) for slug, row in rows.items() for p in ("fp8", "fp4") if row[f"{p}_matrix_tflops"] is not None}
    stored = set()
    for slug, precision, tflops in conn.execute(
            "SELECT t.accelerator, t.precision, t.tflops FROM throughput t JOIN accelerators a ON a.slug = t.accelerator "
            "WHERE t.sparsity = 'dense' AND t.engine = 'matrix' AND t.precision IN ('fp8', 'fp4') "
            "AND a.scope <> 'system'"):
        assert rows[slug][f"{precision}_matrix_tflops"] == tflops
        stored.add((slug, precision))
    assert charted == stored, "no sparse or vector figure is charted"


async def test_every_accelerator_is_in_the_dense_view(conn):
    """One with sparse figures only shows nulls rather than vanishing from dense comparisons."""
    view = {r[0] for r in conn.execute("SELECT accelerator FROM dense_throughput")}
    assert view == {r[0] for r in conn.execute("SELECT slug FROM accelerators")}
    sparse_only = conn.execute("SELECT accelerator FROM throughput GROUP BY accelerator "
                               "HAVING sum(sparsity = 'dense') = 0").fetchall()
    assert sparse_only, "the data has accelerators quoted with sparsity only"


async def test_compare_link_leads_to_a_comparison_of_the_filtered_set(client, conn, dashboards):
    device_class = conn.execute("SELECT device_class FROM accelerators GROUP BY device_class "
                                "ORDER BY count(*) DESC").fetchone()[0]
    [row] = await chart_rows(client, dashboards, LANDSCAPE, "compare", {"device_class": device_class})
    matching = {r[0] for r in conn.execute("SELECT slug FROM accelerators WHERE device_class = ?", (device_class,))}
    if len(matching) < 2:
        assert "Fewer than two" in row["compare"]
        return
    href = row["compare"].split('href="')[1].split('"')[0]
    ids = href.split("ids=")[1].split(",")
    assert set(ids) <= matching and len(ids) == min(8, len(matching))
    assert (await client.get(href)).status_code == 200


async def test_most_discussed_counts_articles_per_accelerator(client, conn, dashboards):
    counts = Counter(r[0] for r in conn.execute("SELECT accelerator FROM article_accelerators"))
    rows = await chart_rows(client, dashboards, CATALOG, "most-discussed")
    assert rows, "some article discusses some accelerator"
    for row in rows:
        assert row["articles"] == counts[row["slug"]]
    assert [r["articles"] for r in rows] == sorted(counts.values(), reverse=True)[:len(rows)]


async def test_article_filters_narrow_the_catalog(client, conn, dashboards):
    site, language = conn.execute("SELECT site, language FROM articles GROUP BY 1, 2 "
                                  "ORDER BY count(*) DESC").fetchone()
    rows = await chart_rows(client, dashboards, CATALOG, "per-category", {"site": site, "language": language})
    expected = conn.execute("SELECT count(*) FROM articles WHERE site = ? AND language = ?",
                            (site, language)).fetchone()[0]
    assert len(rows) == expected
    assert {(r["site"], r["language"]) for r in rows} == {(site, language)}


async def test_the_dense_view_describes_each_column_as_one_measure(client):
    page = (await client.get("/computekb/dense_throughput")).text
    described = dict(re.findall(r"<dt>([a-z0-9_]+)</dt>\s*<dd>(.*?)</dd>", page, re.DOTALL))
    assert "matrix" in described["fp64_matrix_tflops"] and "vector" in described["fp64_vector_tflops"]
    assert "TOPS" in described["int8_matrix_tops"]
