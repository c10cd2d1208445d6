"""Charts, the compare page and "Cite this" in a real browser (Debian's chromium).

Screenshots of every test are kept in test-artifacts/ by the `page` fixture.
"""

import pytest

from serving.metadata import full_metadata
from serving.paths import METADATA_YML

pytestmark = pytest.mark.browser

DASHBOARDS = full_metadata(METADATA_YML)["plugins"]["datasette-dashboards"]


@pytest.fixture(scope="module")
def picked(conn):
    """Two accelerators with cited values, the first two in slug order."""
    return [r[0] for r in conn.execute("SELECT DISTINCT row_slug FROM citations "
                                       "WHERE table_name = 'accelerators' ORDER BY row_slug LIMIT 2")]


def drawn(chart, library):
    """What a drawn chart leaves in its card: vega-embed's canvas or SVG, or the table of a table chart."""
    tags = ("canvas", "svg") if library in ("vega", "vega-lite") else ("table",)
    return ", ".join(f"#chart-{chart} {tag}" for tag in tags)


@pytest.mark.parametrize("slug", sorted(DASHBOARDS))
def test_dashboard_draws_every_chart(server, page, slug):
    page.goto(f"{server}/-/dashboards/{slug}")
    for chart, config in DASHBOARDS[slug]["charts"].items():
        page.locator(drawn(chart, config["library"])).first.wait_for(timeout=15000)
    assert page.console_errors == []


def test_vega_chart_builder_draws_on_the_accelerators_table(server, page):
    page.goto(f"{server}/computekb/accelerators")
    page.get_by_role("button", name="Chart these rows").click()
    page.check("input[name=mark][value=circle]")
    page.select_option("select[name=x_column]", "memory_gb")
    page.select_option("select[name=y_column]", "memory_bandwidth_gbs")
    page.locator(".vega-embed canvas, .vega-embed svg").first.wait_for(timeout=15000)
    assert "g.x_column=memory_gb" in page.url, "the chart's settings are in the URL fragment"
    assert page.console_errors == []


@pytest.mark.parametrize("path", [
    "/computekb?sql=select+name,+memory_gb+from+accelerators",
    "/computekb/dense_throughput",
])
def test_a_chart_fragment_is_a_permalink_on_query_and_view_pages(server, page, path):
    column = "memory_gb" if "sql=" in path else "fp8_matrix_tflops"
    page.goto(f"{server}{path}#g.mark=bar&g.x_column=name&g.x_type=ordinal"
              f"&g.y_column={column}&g.y_type=quantitative")
    page.locator(".vega-embed canvas, .vega-embed svg").first.wait_for(timeout=15000)
    assert page.console_errors == []


def test_home_page_to_comparison_and_its_links(server, page, picked):
    page.goto(server)
    page.locator("details.nav-menu summary").click()
    page.locator("details.nav-menu").get_by_role("link", name="Compare accelerators").click()
    for slug in picked:
        page.check(f"input[name=ids][value='{slug}']")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url(f"**/-/compare?ids={','.join(picked)}")
    heads = page.locator("table.compare-table thead th[data-accelerator]")
    assert [heads.nth(i).get_attribute("data-accelerator") for i in range(heads.count())] == picked
    assert page.locator("figure.compare-chart svg rect").count() > 0
    csv = page.request.get(page.locator("a.compare-csv").evaluate("a => a.href"))
    assert csv.ok and csv.text().splitlines()[0] == ",".join(["field", "unit", *picked])
    page.locator("a.compare-markdown").click()
    page.wait_for_load_state()
    assert page.locator("textarea").input_value().startswith("| field")
    assert page.console_errors == []


def test_unknown_slug_page_offers_close_matches(server, page, picked):
    response = page.goto(f"{server}/-/compare?ids={picked[0][:-1]},{picked[1]}")
    assert response.status == 404
    page.locator(f".compare-suggestions a[href$='?ids={picked[0]},{picked[1]}']").click()
    page.wait_for_url(f"**/-/compare?ids={picked[0]},{picked[1]}")
    assert page.locator("table.compare-table").first.is_visible()


def test_accelerator_row_page_shows_sources_and_citation(server, page, picked):
    page.goto(f"{server}/computekb/accelerators/{picked[0]}")
    assert page.locator("#cite-this").is_visible()
    assert page.locator("textarea.cite-bibtex").input_value().startswith(f"@misc{{computekb-accelerators-{picked[0]},")
    assert page.locator("textarea.cite-markdown").input_value().startswith("[")
    assert page.locator("table.value-citations tbody tr").count() > 0
    assert page.console_errors == []
