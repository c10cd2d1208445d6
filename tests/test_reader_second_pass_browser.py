"""The reader pages' second pass in Chromium, at 1400 and 390 px: compare, the finder on a phone,
the dashboards and the smaller items. Each test shows one problem gone; screenshots in
test-artifacts/ (reader-<test>-<width>.png, by the `sized` fixture of test_reader_browser)."""

import re

import pytest

from tests import test_reader_browser
from tests.test_reader_browser import WIDTHS

pytestmark = pytest.mark.browser
# The reader pages' browser fixture: a page of a given width that leaves a screenshot (tests/test_reader_browser.py).
sized_page = test_reader_browser.sized


@pytest.fixture
def opened(request):
    return request.getfixturevalue("sized_page")

PICKED = "nvidia-h200-sxm,amd-mi300x,nvidia-b200,google-tpu-v5p"
COMPARE = f"/-/compare?ids={PICKED}"
LANDSCAPE = "/-/dashboards/accelerator-landscape"


# Charts drawn as SVG (vega-embed draws on a canvas by default) so their text can be read: this test
# script, not the site, wraps vega-embed as the page loads it.
SVG_CHARTS = """Object.defineProperty(window, 'vegaEmbed', {configurable: true,
    set(embed) { window.__embed = embed; },
    get() { const embed = window.__embed;
            return embed && ((el, spec, options) => embed(el, spec, {...options, renderer: 'svg'})); }});"""


@pytest.fixture
def charted(browser):
    """open(path, width) -> a page whose dashboard charts are SVG."""
    contexts = []

    def open_page(server, path, width):
        context = browser.new_context(viewport={"width": width, "height": 900})
        context.add_init_script(SVG_CHARTS)
        contexts.append(context)
        page = context.new_page()
        page.goto(server + path)
        return page
    yield open_page
    for context in contexts:
        context.close()


def chart_svg(page):
    """The SVG text of the chart of a chart's own page (/-/dashboards/<dashboard>/<chart>), once drawn."""
    page.wait_for_load_state("networkidle")
    selector = ".chart-container svg.marks"
    page.wait_for_selector(selector)
    page.wait_for_timeout(300)
    return page.locator(selector).evaluate("e => e.outerHTML")


# --- compare ---------------------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_compare_rows_are_named_in_words_with_units(server, opened, width):
    page = opened(COMPARE, width, server)
    label = page.locator("tr[data-field=memory_bandwidth_gbs] th[scope=row]")
    assert label.inner_text().strip() == "Memory bandwidth (GB/s)"
    assert page.locator("tr[data-field=bf16_matrix_tflops] th[scope=row]").inner_text().strip() == "BF16 matrix (TFLOPS)"
    raw = page.locator("table.compare-table th[scope=row]").all_inner_texts()
    assert not [t for t in raw if re.search(r"[a-z]+_[a-z]+", t)], "no raw column name as a row label"


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_folds_the_less_read_rows_and_is_short(server, opened, width):
    page = opened(COMPARE, width, server)
    assert page.locator("tr[data-field=memory_gb]").is_visible(), "key figures stay open"
    family = page.locator("tr[data-field=family]")
    assert not family.is_visible(), "identity rows are folded"
    page.locator("tbody[data-group=identity] .group-toggle").check()
    assert family.is_visible(), "and open on a click"
    page.locator("tbody[data-group=identity] .group-toggle").uncheck()
    height = page.evaluate("document.documentElement.scrollHeight")
    # 6,163 px at 1400 and 13,040 on a phone before the rows folded
    assert height < (4000 if width == 1400 else 8000), height


def test_compare_names_stay_in_view_while_scrolling_and_nothing_is_clipped(server, opened):
    page = opened(COMPARE, 1400, server)
    table = page.locator("table.compare-table.cards-on-phone")
    assert table.bounding_box()["x"] + table.bounding_box()["width"] <= 1400, "the last column is not clipped"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    page.locator("tr[data-field=memory_bandwidth_gbs_per_w]").scroll_into_view_if_needed()
    page.mouse.wheel(0, 600)
    page.wait_for_timeout(200)
    assert page.evaluate("scrollY") > 500
    head = page.locator("thead th[data-accelerator=nvidia-b200]")
    assert abs(head.bounding_box()["y"]) < 2, "the header row sticks to the top"
    assert head.is_visible()


def test_compare_on_a_phone_names_each_value_when_scrolled(server, opened):
    """On a phone the columns are cards: each value carries its accelerator's name wherever it is scrolled."""
    page = opened(COMPARE, 390, server)
    cell = page.locator("tr[data-field=bf16_matrix_tflops] td[data-accelerator=amd-mi300x]")
    cell.scroll_into_view_if_needed()
    assert cell.locator(".cell-label").inner_text().strip() == "Instinct MI300X:"
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_picker_filters_and_its_button_is_on_top(server, opened, width):
    page = opened("/-/compare", width, server)
    button = page.locator("form.compare-pick input[type=submit]")
    first = page.locator("form.compare-pick fieldset").first
    assert button.bounding_box()["y"] < first.bounding_box()["y"], "the button above the list"
    assert button.bounding_box()["y"] < 900, "in the first screen"
    page.fill("#compare-filter", "h200")
    shown = page.locator("form.compare-pick label[data-filter]:visible").all_inner_texts()
    assert {"H200 SXM", "H200 NVL"} <= {t.strip() for t in shown} and len(shown) <= 6, shown
    page.check("input[value=nvidia-h200-sxm]")
    page.fill("#compare-filter", "mi300x")
    page.check("input[value=amd-mi300x]")
    assert page.locator(".compare-pick-count").inner_text() == "2 picked (2 to 8)"
    button.click()
    page.wait_for_load_state()
    assert page.url.endswith("/-/compare?ids=amd-mi300x,nvidia-h200-sxm"), "in the list's order"


# --- the finder on a phone -------------------------------------------------------------------

FINDER = "/-/accelerators?memory_gb__gte=80&memory_bandwidth_gbs__gte=3+TB/s"


def test_finder_on_a_phone_shows_figures_and_keeps_the_name_in_view(server, opened):
    page = opened(FINDER, 390, server)
    first = page.locator(".finder-table tbody tr").first
    for column in ("memory_gb", "memory_type"):
        box = first.locator(f"td.col-{column}").bounding_box()
        assert box["x"] + box["width"] <= 390, f"{column} in the first screen"
    assert first.locator(".name-context").is_visible(), "vendor and class under the name"
    assert not first.locator("td.col-vendor").is_visible()
    frame = page.locator(".finder-results")
    frame.evaluate("e => e.scrollLeft = 400")
    page.wait_for_timeout(100)
    assert frame.evaluate("e => e.scrollLeft") > 300, "the table scrolls sideways"
    name = first.locator("th.col-name")
    assert name.bounding_box()["x"] >= 0 and name.bounding_box()["x"] < 30, "the name column stays in view"
    assert name.locator("a").is_visible()


def test_finder_at_desktop_width_keeps_its_columns(server, opened):
    page = opened(FINDER, 1400, server)
    first = page.locator(".finder-table tbody tr").first
    assert first.locator("td.col-vendor").is_visible() and not first.locator(".name-context").is_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_finder_summary_and_title_name_columns_as_the_page_does(server, opened, width):
    page = opened(FINDER + "&_sort_by=launch_price_usd", width, server)
    summary = page.locator(".finder-summary").inner_text()
    for text in (summary, page.title()):
        assert "Bandwidth ≥ 3,000 GB/s" in text and "Memory ≥ 80 GB" in text, text
        assert "sorted by list price, lowest first" in text
        assert "memory_bandwidth_gbs" not in text and "3000.0" not in text


# --- dashboards ------------------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_fp8_fp4_chart_is_on_a_log_axis(server, charted, width):
    page = charted(server, f"{LANDSCAPE}/dense-fp8-fp4", width)
    svg = chart_svg(page)
    assert "Dense TFLOPS (log scale)" in svg
    ticks = [float(t.replace(",", "")) for t in re.findall(r">([\d,]+)</text>", svg) if t.replace(",", "")]
    assert 100 in ticks and max(ticks) >= 10_000, ticks


@pytest.mark.parametrize("width", WIDTHS)
def test_axis_titles_are_whole(server, charted, width):
    page = charted(server, f"{LANDSCAPE}/memory-vs-bandwidth", width)
    svg = chart_svg(page)
    assert "Memory (GB, log scale)" in svg and "Memory bandwidth (GB/s, log scale)" in svg


@pytest.mark.parametrize("width", WIDTHS)
def test_an_emptied_chart_says_so(server, charted, width):
    page = charted(server, f"{LANDSCAPE}/bandwidth-per-watt?min_memory=100000000", width)
    assert "No data for these filters" in chart_svg(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_legend_lists_the_vendors_shown_in_their_colours(server, charted, width):
    page = charted(server, f"{LANDSCAPE}/bandwidth-per-watt?vendor=amd", width)
    svg = chart_svg(page)
    legend = svg[svg.index("Vendor"):]
    assert "AMD" in legend and "NVIDIA" not in legend and "Google" not in legend
    assert "#d62728" in svg, "AMD keeps its colour"
    other = charted(server, f"{LANDSCAPE}/bandwidth-per-watt?vendor=nvidia", width)
    assert "#76b900" in chart_svg(other) and "AMD" not in chart_svg(other)


def test_the_scatter_fits_a_phone(server, charted):
    page = charted(server, f"{LANDSCAPE}/memory-vs-bandwidth", 390)
    chart_svg(page)
    box = page.locator(".chart-container").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    plot = page.locator(".chart-container svg.marks").bounding_box()
    assert plot["width"] <= 390 and plot["height"] > 250, "the plot keeps the width; the legends go under it"


# --- smaller items ---------------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_home_page_has_one_what_fits_link_to_its_page(server, opened, width):
    page = opened("/", width, server)
    links = page.locator("section.content a", has_text=re.compile("what fits", re.I))
    assert [links.nth(i).get_attribute("href") for i in range(links.count())] == ["/-/what-fits"]
    assert page.locator("section.content a[href*='/computekb/what-fits']").count() == 0


@pytest.mark.parametrize("width", WIDTHS)
def test_error_page_has_the_same_chrome(server, opened, width):
    error = opened("/computekb/accelerators/no-such-accelerator", width, server)
    finder = opened("/-/accelerators", width, server)
    for part in (".not-footer > header", "header .site-search", "p.crumbs", "footer .kb-footer"):
        assert error.locator(part).count() == 1 and finder.locator(part).count() == 1, part
    assert error.locator("p.crumbs a").inner_text() == "home"
    styles = "[...document.styleSheets].map(s => s.href && new URL(s.href).pathname).filter(Boolean)"
    assert set(error.evaluate(styles)) == set(finder.evaluate(styles)), "the same style sheets"
    assert error.locator("header").evaluate("e => getComputedStyle(e).backgroundColor") == \
        finder.locator("header").evaluate("e => getComputedStyle(e).backgroundColor")


@pytest.mark.parametrize("width", WIDTHS)
def test_search_snippets_read_as_text_and_chips_are_not_repeated(server, opened, width):
    page = opened("/-/search?q=costs", width, server)
    snippets = page.locator(".search-results .snippet").all_inner_texts()
    assert snippets and not [s for s in snippets if s.lstrip("…").startswith('["') or '", "' in s]
    for meta in page.locator(".search-results .result-meta").all():
        chips = [c.strip() for c in meta.locator(".label").all_inner_texts()]
        assert len(chips) == len(set(chips)), chips


@pytest.mark.parametrize("width", WIDTHS)
def test_cite_button_returns_from_copied(server, opened, width):
    page = opened("/computekb/accelerators/nvidia-h200-sxm", width, server)
    button = page.locator("#memory_gb button.cite-one-click")
    label = button.inner_text()
    button.click()
    # the copy is asynchronous: "copied" once the clipboard has the text, then the label again
    page.wait_for_function("b => b.dataset.copied && b.textContent === 'copied'", arg=button.element_handle())
    page.wait_for_function("b => !b.dataset.copied", arg=button.element_handle(), timeout=5000)
    assert button.inner_text() == label


@pytest.mark.parametrize("width", WIDTHS)
def test_footer_reads_as_a_sentence(server, opened, width):
    page = opened("/", width, server)
    footer = page.locator("footer .kb-footer").inner_text()
    assert "Numbers from The" not in footer and "Sources: The pages cited per value" in footer
