"""Datasette's own pages, one click from the reader pages, held to the same standard in Chromium at a desktop
and a phone width: axe-core finds nothing serious or critical (named filter controls and SQL editor, contrast),
the chart library loads only when a chart is asked for, the home page lists the knowledge base alone, and a
CSV for Excel is one link away."""

import pytest

from conftest import blocking_axe_findings

pytestmark = pytest.mark.browser

PAGES = {
    "table": "/computekb/cloud_offers?accelerator=nvidia-h100-sxm",
    "row": "/computekb/vendors/nvidia",
    "query": "/computekb/cost-per-million-tokens",
    "sql": "/computekb?sql=select+slug%2C+name+from+accelerators+limit+5",
    "home": "/",
}
CHART_LIBRARY = "/datasette_vega/"


@pytest.mark.parametrize("width", (1400, 390))
@pytest.mark.parametrize("name", PAGES)
def test_datasettes_own_pages_pass_axe_and_load_no_chart_library_unasked(browser, server, name, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    try:
        page.goto(server + PAGES[name])
        page.wait_for_load_state("networkidle")
        assert blocking_axe_findings(page) == []
        assert [u for u in requested if CHART_LIBRARY in u] == [], "the chart library waits for a chart"
        if name == "home":
            assert "_memory" not in page.locator("main, [role=main]").inner_text()
        if name in ("table", "query", "sql"):
            assert "_bom=1" in page.get_by_role("link", name="CSV for Excel").get_attribute("href")
        if name == "table":
            page.get_by_role("button", name="Chart these rows").click()
            page.locator("form.datasette-vega").wait_for()
            assert [u for u in requested if CHART_LIBRARY in u and u.endswith(".js")], "asked for: loaded"
    finally:
        context.close()
