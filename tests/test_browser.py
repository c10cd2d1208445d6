"""What a person sees, in a real browser (Debian's chromium driven by Playwright)."""

import sqlite3

import pytest

pytestmark = pytest.mark.browser


def test_accelerator_table_shows_units_facets_and_release(server, page, db_path):
    with sqlite3.connect(db_path) as conn:
        count = conn.execute("select count(*) from accelerators").fetchone()[0]
        release = conn.execute("select data_release from release").fetchone()[0]
    page.goto(f"{server}/computekb/accelerators?_view=full")  # Datasette's own table of every column
    assert page.locator("h1").inner_text().strip().lower().startswith("accelerators")
    assert f"{count} row" in page.locator(".count-sql, h3").first.inner_text().replace(",", "")
    assert page.locator("table.rows-and-columns tbody tr").count() == min(count, 50)
    assert page.locator(".facet-info[data-column=vendor]").is_visible()
    assert page.get_by_text("TB/s").first.is_visible()
    assert release in page.locator("footer").inner_text()
    assert page.console_errors == []


def test_search_box_finds_french_article_without_accents(server, page):
    page.goto(f"{server}/computekb/articles")
    page.fill("input#_search", "memoire")
    page.press("input#_search", "Enter")
    page.wait_for_load_state()
    assert "_search=memoire" in page.url
    rows = page.locator("table.rows-and-columns tbody tr")
    assert rows.count() > 0
    assert "mémoire" in rows.first.inner_text().lower() or "mémoire" in page.content()
