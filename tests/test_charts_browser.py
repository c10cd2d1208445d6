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
    """What a drawn chart leaves in its card: its SVG, or a table chart's table (or its one value's line)."""
    tags = ("canvas", "svg") if library in ("vega", "vega-lite") else ("table", ".chart-value")
    return ", ".join(f"#chart-{chart} {tag}" for tag in tags)


@pytest.mark.parametrize("slug", sorted(DASHBOARDS))
def test_dashboard_draws_every_chart(server, page, slug):
    busy = []  # "try again in a moment" from the server drawing other charts: the page asks again
    page.on("response", lambda r: r.status == 503 and "/-/charts/" in r.url and busy.append(r.url))
    page.goto(f"{server}/-/dashboards/{slug}")
    for chart, config in DASHBOARDS[slug]["charts"].items():
        page.locator(drawn(chart, config["library"])).first.wait_for(timeout=15000)
    assert [e for e in page.console_errors if "status of 503" not in e] == []
    assert len(page.console_errors) == len(busy), "the only errors are the answers asked again"


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


VEGA_LITE_CHARTS = sorted(chart for chart, config in DASHBOARDS["accelerator-landscape"]["charts"].items()
                          if config["library"] == "vega-lite")


@pytest.mark.parametrize("width", [1400, 390])
def test_the_dashboard_draws_each_chart_as_svg_from_the_server_and_loads_no_chart_library(server, browser, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    asked, in_flight, most_in_flight = [], set(), [0]

    def sent(request):
        asked.append(request.url)
        if "/-/charts/" in request.url:
            in_flight.add(request.url)
            most_in_flight[0] = max(most_in_flight[0], len(in_flight))
    page.on("request", sent)
    page.on("requestfinished", lambda r: in_flight.discard(r.url))
    page.goto(f"{server}/-/dashboards/accelerator-landscape")
    page.wait_for_load_state("networkidle")
    drawn_charts = sorted(box.get_attribute("id").removeprefix("chart-")
                          for box in page.locator(".dashboard-card-chart:has(.chart-picture svg)").all())
    assert drawn_charts == VEGA_LITE_CHARTS
    pictures = [url for url in asked if "/-/charts/accelerator-landscape/" in url]
    assert len(pictures) == len(VEGA_LITE_CHARTS), "one request a chart"
    assert most_in_flight[0] == 3, "three at a time: the server draws one at a time"
    assert not [url for url in asked if "vega" in url], "no chart library"
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "every chart fits the screen"
    cards = page.locator(".dashboard-card").evaluate_all("cards => cards.map((c) => c.id.replace('card-', ''))")
    assert cards[:3] == ["compare", "memory-vs-bandwidth", "measured-vs-bandwidth"], "read in the layout's order"
    if width == 390:
        side_by_side = page.locator("#card-compare").bounding_box()["y"]
        assert side_by_side < page.locator("#card-memory-vs-bandwidth").bounding_box()["y"], "the phone's order too"
        widths = page.locator(".chart-picture > svg").evaluate_all("svgs => svgs.map((s) => s.getAttribute('width'))")
        assert set(widths) == {"320"}, "drawn at a phone's width, its text at its size"
    point = page.locator("#chart-memory-vs-bandwidth svg a").first
    assert point.locator("path title").text_content().startswith("Accelerator: ")
    href = point.get_attribute("xlink:href")
    assert href.startswith("/computekb/accelerators/")
    download = page.locator("#chart-memory-vs-bandwidth .chart-download a")
    assert download.get_attribute("download") == "memory-vs-bandwidth.svg"
    assert page.request.get(server + download.get_attribute("href")).text().startswith("<svg")
    point.locator("path").dispatch_event("click")
    page.wait_for_url(f"**{href}")
    context.close()


def test_a_chart_the_server_is_too_busy_to_draw_is_asked_again(server, page):
    refused = []

    def busy_once(route):
        if not refused:
            refused.append(route.request.url)
            return route.fulfill(status=503, headers={"Retry-After": "1"}, body="busy")
        return route.continue_()
    page.route("**/-/charts/accelerator-landscape/tokens-per-joule.svg*", busy_once)
    page.goto(f"{server}/-/dashboards/accelerator-landscape")
    page.locator("#chart-tokens-per-joule .chart-picture svg").wait_for(timeout=15000)
    assert len(refused) == 1
    assert page.locator("#chart-tokens-per-joule .chart-note").count() == 0


def test_a_chart_that_cannot_be_drawn_says_so_with_a_link_to_the_reason(server, page):
    page.route("**/-/charts/accelerator-landscape/tokens-per-joule.svg*",
               lambda route: route.fulfill(status=400, body="width must be a whole number"))
    page.goto(f"{server}/-/dashboards/accelerator-landscape")
    note = page.locator("#chart-tokens-per-joule .chart-note")
    note.wait_for(timeout=15000)
    assert note.inner_text() == "The chart could not be drawn (HTTP 400). Why"
    assert "/-/charts/accelerator-landscape/tokens-per-joule.svg?" in note.locator("a").get_attribute("href")
