"""Search, cost per token and the dashboard as a new reader meets them, in Chromium at 1400 and 390 px."""

import pytest

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
