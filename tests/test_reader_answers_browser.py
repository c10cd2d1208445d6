"""Search, cost per token and the dashboard as a new reader meets them, in Chromium at 1400 and 390 px."""

import re

import pytest

from conftest import DASHBOARD_PAGES_FAIL_ON_1

pytestmark = pytest.mark.browser

WIDTHS = (1400, 390)


def opened(page, server, path, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(server + path)
    page.wait_for_load_state("networkidle")
    return page


@pytest.mark.parametrize("width", WIDTHS)
def test_search_suggests_splits_versus_lists_formats_and_prefers_the_querys_language(server, page, width):
    opened(page, server, "/-/search?q=blakwell", width)
    suggestion = page.locator(".did-you-mean a").first
    assert suggestion.inner_text() == "blackwell"
    suggestion.click()
    page.wait_for_load_state("networkidle")
    assert page.locator("#found-accelerators li").count() > 0, "the suggestion finds Blackwell cards"

    opened(page, server, "/-/search?q=FP4", width)
    native = page.locator("#found-native")
    assert native.locator("h2").inner_text().startswith("Accelerators with native FP4")
    assert "B200" in native.locator("li a").all_inner_texts()
    assert native.locator("a", has_text="All").get_attribute("href").endswith("/computekb/accelerators?native_fp4=yes")

    opened(page, server, "/-/search?q=H100 vs H200", width)
    compare = page.locator(".search-compare a")
    assert compare.is_visible() and compare.get_attribute("href").startswith("/-/compare?ids=nvidia-h100")
    assert ",nvidia-h200" in compare.get_attribute("href")
    labels = page.locator("#found-accelerators li a").all_inner_texts()
    assert any("H100" in label for label in labels) and any("H200" in label for label in labels)

    opened(page, server, "/-/search?q=mémoire", width)
    languages = page.locator("ol.search-results > li").evaluate_all("(items) => items.map((i) => i.lang)")
    french = languages.count("fr")
    assert french > 0 and languages[:french] == ["fr"] * french, "French articles first for a French query"

    opened(page, server, "/computekb/articles/tokens-per-second-long-context", width)
    summary = page.locator("p.summary").inner_text()
    assert page.locator("article.article-page").inner_text().count(summary) == 1, "the summary is printed once"


def significant_digits(figure):
    """Significant digits of a printed figure: '0.576' → 3, '12.9' → 3, '1,130' → 3 (trailing zeros of a whole number aside)."""
    digits = figure.replace(",", "").replace(".", "").lstrip("0")
    return len(digits.rstrip("0")) if "." not in figure else len(digits)


@pytest.mark.parametrize("width", WIDTHS)
def test_cost_per_token_answers_when_opened_cheapest_first_named_rounded_and_every_blank_explained(server, page, width):
    opened(page, server, "/-/cost-per-token", width)
    rows = page.locator("table.cost-table tbody tr")
    costs = page.locator("table.cost-table td.cost").all_inner_texts()
    assert len(costs) > 5, "opened bare, the page answers Llama 3.1 70B in FP8"
    figures = [c.split()[0] for c in costs]
    values = [float(f.replace(",", "")) for f in figures]
    assert values == sorted(values), "cheapest first"
    assert all(significant_digits(f) <= 3 for f in figures), figures
    text = page.locator("#answer").inner_text()
    assert "1.8214000000000001" not in text and not re.search(r"\d\.\d{7,}", text)
    blanks = page.locator("table.cost-table tr.no-cost td")
    assert blanks.count() > 0 and all(t.startswith("No cost: ") and len(t) > 30 for t in blanks.all_inner_texts())
    costed = rows.locator("th a").all_inner_texts()[:len(costs)]
    assert "H200 SXM" in costed
    assert page.locator(".cost-chart .cost-name").all_inner_texts() == costed, "the chart is labelled by name, in order"
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "no sideways scroll"
    # another model from the list answers too
    page.get_by_label("Model", exact=True).select_option("llama-3-1-8b")
    page.get_by_role("button", name="Cost it").click()
    page.wait_for_load_state("networkidle")
    assert page.locator("#answer-heading").inner_text().startswith("Llama 3.1 8B")
    assert page.locator("table.cost-table td.cost").count() > len(costs)


@DASHBOARD_PAGES_FAIL_ON_1
@pytest.mark.parametrize("width", WIDTHS)
def test_dashboard_grid_pairs_charts_of_one_height(server, browser, width):
    """Side by side, two charts differ in height by at most 100 px: no half-empty row beside a long list."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto(server + "/-/dashboards/accelerator-landscape")
        page.wait_for_load_state("networkidle")
        page.wait_for_function("""() => [...document.querySelectorAll('.dashboard-card')]
            .every((c) => c.querySelector('canvas, svg.marks, table, .chart-value'))""")
        cards = page.evaluate("""() => [...document.querySelectorAll('.dashboard-card')].map((c) => {
            const card = c.getBoundingClientRect();
            const drawn = c.querySelector('canvas, svg.marks, table, .chart-value').getBoundingClientRect();
            return {id: c.id, top: Math.round(card.top), right: card.right, height: drawn.height}; })""")
        rows = {}
        for card in cards:
            rows.setdefault(card["top"], []).append(card)
            assert card["right"] <= width, card["id"]
        holes = {tuple(c["id"] for c in row): max(c["height"] for c in row) - min(c["height"] for c in row)
                 for row in rows.values() if len(row) > 1}
        assert all(hole <= 100 for hole in holes.values()), holes
        if width == 1400:
            assert holes, "two charts side by side on a desktop"
    finally:
        context.close()
