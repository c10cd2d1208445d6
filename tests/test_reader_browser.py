"""The reader pages in a real browser (Debian's chromium) at a desktop width and a phone width.

What a person sees: a title that says what the page shows, labels next to values, no sideways
scroll on a phone, links and copy buttons that work, no console error. Screenshots of every test
are kept in test-artifacts/ (reader-<page>-<width>.png).
"""

import re

import pytest

from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

H200 = "nvidia-h200-sxm"
WIDTHS = (1400, 390)
PAGES = {
    "home": ("/", r"accelerators, what fits, articles"),
    "finder": ("/-/accelerators?memory_gb__gte=80&memory_bandwidth_gbs__gte=3+TB/s&native_fp4=yes",
               r"^Accelerators: \d+ found"),
    "spec-sheet": (f"/computekb/accelerators/{H200}", r"^H200 SXM: spec sheet$"),
    "what-fits": ("/-/what-fits?model=llama-3-1-70b&weights=format%3Afp8&kv_format=fp8&context=32k",
                  r"^What fits: Llama 3\.1 70B"),
    "search": ("/-/search?q=memoire&language=fr", r"^“memoire”: accelerators, models and articles$"),
    "compare": ("/-/compare?ids=nvidia-h200-sxm,amd-mi300x,nvidia-b200", r"^Compare H200 SXM"),
    "dashboard": ("/-/dashboards/accelerator-landscape", r"^Accelerator landscape"),
    "not-found": ("/computekb/accelerators/no-such-accelerator", r"^Not found"),
    "table": ("/computekb/accelerators", r"^computekb: accelerators: \d+ rows"),
    "citation": (f"/computekb/citations/accelerators-{H200}-memory-bandwidth-gbs",
                 rf"^Citation: memory_bandwidth_gbs of {H200}$"),
}


@pytest.fixture
def sized(browser, request):
    """open(path, width) -> a page of that width that records console errors and leaves a screenshot."""
    opened = []

    def open_page(path, width, server, height=900):
        context = browser.new_context(viewport={"width": width, "height": height})
        context.grant_permissions(["clipboard-read", "clipboard-write"])
        page = context.new_page()
        page.console_errors = []
        page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
        page.on("pageerror", lambda e: page.console_errors.append(str(e)))
        page.goto(server + path)
        opened.append((page, context, width))
        return page
    yield open_page
    ARTIFACTS.mkdir(exist_ok=True)
    name = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")
    for page, context, width in opened:
        page.screenshot(path=str(ARTIFACTS / f"reader-{name}-{width}.png"), full_page=True)
        context.close()


def wider_than_the_screen(page):
    """The innermost elements that make a phone page scroll sideways, to say what to fix."""
    return page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > innerWidth
                     || (e.scrollWidth > innerWidth && getComputedStyle(e).overflowX === 'visible'))
        .slice(-4).map(e => `${e.tagName}.${e.className}: ${e.scrollWidth}px, right ${e.getBoundingClientRect().right}`)""")


def own_errors(page, status_page=False):
    """Console errors, without the browser's note of the page's own 4xx status on an error page."""
    return [e for e in page.console_errors if not (status_page and "the server responded with a status of 4" in e)]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_title_fits_the_screen_and_has_no_console_error(server, sized, name, width):
    path, title = PAGES[name]
    page = sized(path, width, server)
    page.wait_for_load_state("networkidle")
    assert re.search(title, page.title()), page.title()
    assert page.locator(".not-footer > header").is_visible(), "the site's header"
    if width == 390:
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, wider_than_the_screen(page)
    assert own_errors(page, status_page=name == "not-found") == []


def test_home_to_the_answer_in_four_actions_first_result_in_view(server, sized):
    page = sized("/", 1400, server)
    form = page.locator("#task-filter form")
    form.get_by_label("Memory at least").fill("80 GB")               # 1
    form.get_by_label("Bandwidth at least").fill("3 tb/s")            # 2
    form.get_by_label("Native FP4").check()                           # 3
    form.get_by_role("button", name="Find accelerators").click()     # 4 (sorted by bandwidth by default)
    page.wait_for_url("**/-/accelerators?**")
    first = page.locator("table.finder-table tbody tr").first
    assert first.is_visible() and first.bounding_box()["y"] + first.bounding_box()["height"] <= 900
    assert "Bandwidth (GB/s)" in page.locator("table.finder-table thead").inner_text()
    assert page.console_errors == []


def test_a_wrong_unit_is_explained_with_the_way_back(server, sized):
    page = sized("/-/accelerators?memory_bandwidth_gbs__gte=3+parsecs", 1400, server)
    assert "not understood" in page.locator("h2, h1").all_inner_texts()[-1].lower() or \
        page.get_by_text("This filter was not understood").is_visible()
    assert page.get_by_text("parsecs").first.is_visible()
    page.get_by_role("link", name="Start again").click()
    page.wait_for_url("**/-/accelerators")


def test_bandwidth_is_cited_in_one_click(server, sized, conn):
    page = sized(f"/computekb/accelerators/{H200}#memory_bandwidth_gbs", 1400, server)
    value = page.locator("#memory_bandwidth_gbs")
    assert value.locator("dt").inner_text().strip().lower() == "memory bandwidth"
    shown = value.locator(".value").inner_text().strip()
    assert "GB/s" in shown
    source = conn.execute("select s.title, s.url from citations c join sources s on s.slug = c.source "
                          "where c.table_name = 'accelerators' and c.row_slug = ? and c.field = 'memory_bandwidth_gbs'",
                          (H200,)).fetchone()
    release = conn.execute("select data_release from release").fetchone()[0]
    value.get_by_role("button", name="cite", exact=True).click()                      # the one click
    copied = page.evaluate("navigator.clipboard.readText()")
    for part in (shown, "memory_bandwidth_gbs", source["title"], source["url"], f"{H200}#memory_bandwidth_gbs",
                 f"data release {release}"):
        assert part in copied, (part, copied)
    assert value.locator("button.cite-one-click[data-copied]").is_visible()
    formats = page.locator("#section-memory details.cite-formats")                    # the group's other formats
    formats.locator("summary").click()
    formats.get_by_role("button", name="Copy as Markdown").click()
    assert source["url"] in page.evaluate("navigator.clipboard.readText()")
    formats.get_by_role("button", name="Copy as BibTeX").click()
    assert page.evaluate("navigator.clipboard.readText()").startswith("@misc{")
    assert page.console_errors == []


def test_compact_table_first_row_in_view_and_all_columns_one_click_away(server, sized):
    page = sized("/computekb/accelerators", 1400, server)
    first = page.locator("table.compact-accelerators tbody tr").first.bounding_box()
    assert first["y"] + first["height"] <= 900, f"first row at {first['y']:.0f} px"
    headers = page.locator("table.compact-accelerators thead").inner_text()
    assert "Bandwidth (GB/s)" in headers and "Memory (GB)" in headers and "memory_bandwidth_gbs" not in headers
    assert not page.locator("dl.column-descriptions").is_visible(), "the glossary is folded"
    page.locator("details.column-glossary summary").click()
    assert page.locator("details.column-glossary dl").is_visible()
    page.get_by_role("link", name="All columns").click()
    page.wait_for_url("**_view=full**")
    assert page.locator("table.rows-and-columns th[data-column=interconnect_gbs]").is_visible()
    assert page.console_errors == []


def test_compact_table_on_a_phone_scrolls_inside_its_frame(server, sized):
    page = sized("/computekb/accelerators", 390, server)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, wider_than_the_screen(page)
    frame = page.locator(".compact-table-frame")
    assert frame.evaluate("f => f.scrollWidth > f.clientWidth"), "the table scrolls in its own frame"
    assert page.locator("table.compact-accelerators tbody tr").count() > 0


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", ["/computekb/accelerators", f"/computekb/accelerators/{H200}"])
def test_the_header_search_box_searches(server, sized, path, width):
    page = sized(path, width, server)
    box = page.locator("header .site-search input[type=search]")
    assert box.is_visible()
    box.fill("kv cache")
    box.press("Enter")
    page.wait_for_url("**/-/search?q=kv**")
    assert page.locator("ol.search-results li").count() > 0
    if width == 390:
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, wider_than_the_screen(page)


def test_a_citation_page_links_its_source_and_its_value(server, sized, conn):
    url = conn.execute("select s.url from citations c join sources s on s.slug = c.source "
                       "where c.slug = ?", (f"accelerators-{H200}-memory-bandwidth-gbs",)).fetchone()[0]
    page = sized(PAGES["citation"][0], 1400, server)
    source = page.locator("a.citation-source")
    assert source.is_visible() and source.get_attribute("href") == url
    page.locator("a.cited-value").click()
    page.wait_for_url(f"**/{H200}#memory_bandwidth_gbs")
    assert page.locator("#memory_bandwidth_gbs:target").is_visible()


def test_an_untitled_article_is_cited_without_a_placeholder(server, sized, conn):
    slug = conn.execute("select slug from articles where title is null order by slug limit 1").fetchone()[0]
    page = sized(f"/computekb/articles/{slug}", 390, server)
    bibtex = page.locator("textarea#cite-bibtex").input_value()
    markdown = page.locator("textarea#cite-markdown").input_value()
    assert bibtex.startswith("@misc{") and "title =" not in bibtex
    for text in (bibtex, markdown):
        assert not re.search(r"\[[^\]]*(derived|not known)[^\]]*\]", text), text
    assert page.locator("#cite-this .untitled").is_visible()


def test_spec_sheet_links_lead_to_the_citation(server, sized):
    page = sized(f"/computekb/accelerators/{H200}", 1400, server)
    page.locator("#memory_gb a.citation-link").click()
    page.wait_for_url("**/computekb/citations/**")
    assert "memory_gb" in page.content()


def test_spec_sheet_on_a_phone_reads_top_to_bottom(server, sized):
    page = sized(f"/computekb/accelerators/{H200}", 390, server)
    boxes = [page.locator(f"#section-{s}").bounding_box() for s in ("memory", "compute", "interconnect", "power")]
    assert [b["y"] for b in boxes] == sorted(b["y"] for b in boxes)
    assert all(b["x"] + b["width"] <= 390 for b in boxes)
    memory = page.locator("#memory_gb").bounding_box()
    bandwidth = page.locator("#memory_bandwidth_gbs").bounding_box()
    assert bandwidth["y"] > memory["y"], "one value under the other, not side by side"
    # the what-fits question reads on one line, its list of models wide enough to read a name
    question = page.locator(".sheet-fits strong").bounding_box()
    models = page.locator(".sheet-fits select[name=model]").bounding_box()
    assert question["height"] < 30 and models["y"] > question["y"] and models["width"] >= 150


def test_compare_on_a_phone_names_the_accelerator_of_every_value(server, sized):
    page = sized("/-/compare?ids=nvidia-h200-sxm,amd-mi300x", 390, server)
    cells = page.locator("tr[data-field=memory_gb] td[data-accelerator]")
    assert cells.count() == 2
    names = page.locator("table.compare-table thead th[data-accelerator] a").all_inner_texts()
    for i, name in enumerate(names):
        label = cells.nth(i).locator(".cell-label")
        assert label.is_visible() and label.inner_text().strip() == f"{name}:"
        assert label.bounding_box()["x"] >= 0 and cells.nth(i).bounding_box()["x"] + cells.nth(i).bounding_box()["width"] <= 390


def test_calculator_answers_from_lists_without_typing_a_slug(server, sized):
    page = sized("/-/what-fits", 1400, server)
    page.select_option("select[name=model]", label="Llama 3.1 70B")
    page.select_option("select[name=weights]", label="FP8 (8-bit floating point, either encoding)")
    page.select_option("select[name=kv_format]", label="FP8 (8-bit floating point, either encoding)")
    page.fill("input[name=context]", "32k")
    page.get_by_role("button", name="Size it").click()  # the form answers on its button, not on each choice
    page.wait_for_url("**context=32k**")
    assert page.locator("table.fits-table tbody tr").count() > 0
    assert page.locator(".split-bar").first.is_visible()
    assert "model=llama-3-1-70b" in page.url, "the state is the permalink"
    assert page.console_errors == []


def test_calculator_on_a_phone_reads_as_labelled_cards(server, sized):
    page = sized(PAGES["what-fits"][0], 390, server)
    cell = page.locator("table.fits-table tbody tr").first.locator("td[data-label]").first
    assert "Fits" in cell.evaluate("td => getComputedStyle(td, '::before').content")


def test_search_for_memoire_in_french_lists_links(server, sized):
    page = sized("/", 1400, server)
    box = page.locator("#site-search-q-home")
    box.fill("memoire")
    box.press("Enter")
    page.wait_for_url("**/-/search?**")
    page.select_option("select[name=language]", "fr")
    page.locator("form.search-form").get_by_role("button", name="Search").click()
    page.wait_for_url("**language=fr**")
    results = page.locator("ol.search-results li")
    assert results.count() >= 10
    assert page.locator("ol.search-results mark").count() > 0
    assert page.locator("ol.search-results .untitled").first.is_visible()
    results.first.locator("a.result-title").click()
    page.wait_for_url("**/computekb/articles/**")


def test_dashboard_filters_start_at_all(server, sized):
    page = sized("/-/dashboards/accelerator-landscape", 1400, server)
    assert page.locator("select#vendor option").first.inner_text() == "All"


@pytest.mark.parametrize("width", WIDTHS)
def test_finder_sorted_by_cloud_price(server, sized, width):
    page = sized("/-/accelerators?_sort_by=cheapest_gpu_hour_usd", width, server)
    page.wait_for_load_state("networkidle")
    prices = page.locator("tbody td.col-cheapest_gpu_hour_usd").all_inner_texts()
    shown = [float(p.replace(",", "")) for p in prices if p != "no current USD offer"]
    assert shown and shown == sorted(shown), "lowest first"
    assert set(prices[len(shown):]) == {"no current USD offer"}, "rows without a price come last, saying why"
    assert page.locator(".finder-unpriced").is_visible()
    assert page.locator("select[name=_sort_by]").input_value() == "cheapest_gpu_hour_usd"
    assert not own_errors(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_spec_sheet_price_section(server, sized, width):
    page = sized("/computekb/accelerators/nvidia-h100-sxm#section-price", width, server)
    page.wait_for_load_state("networkidle")
    offers = page.locator(".offers-table tbody tr")
    assert offers.count() >= 3, "the cheapest offer of several providers"
    first = offers.first.inner_text()
    assert "USD" in first and re.search(r"20\d\d-\d\d-\d\d", first), "a price and its date"
    assert offers.first.locator("a").is_visible()
    if width == 390:
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, wider_than_the_screen(page)
    assert not own_errors(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_price_charts_draw(server, sized, width):
    page = sized("/-/dashboards/accelerator-landscape", width, server, height=1200)
    page.wait_for_load_state("networkidle")
    for chart in ("memory-per-dollar", "memory-per-hourly-dollar", "price-over-time"):
        box = page.locator(f"#chart-{chart} svg, #chart-{chart} canvas").first
        box.wait_for(state="visible", timeout=15000)
        box.scroll_into_view_if_needed()
    assert not own_errors(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_spec_sheet_decode_section(server, sized, width):
    """Three models' ceiling and expected speed, each with its basis, readable at both widths."""
    page = sized("/computekb/accelerators/nvidia-rtx-4090#section-decode", width, server)
    rows = page.locator(".decode-table tbody tr")
    assert rows.count() == 3
    first = rows.first.inner_text()
    assert "Llama 3.1 8B" in first and "tokens/s" in first and "typical error" in first
    assert rows.first.locator("a").is_visible()
    box = page.locator("#section-decode").bounding_box()
    assert box["x"] + box["width"] <= width
    if width == 390:
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, wider_than_the_screen(page)
    assert not own_errors(page)
