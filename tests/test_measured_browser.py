"""The Measured section of the spec sheet and the compare page, and the two measured charts of the
landscape dashboard, in Debian's Chromium at a desktop and a phone width (screenshots in test-artifacts/)."""

import pytest

from tests.test_reader_browser import sized, wider_than_the_screen  # noqa: F401 (a fixture)

pytestmark = pytest.mark.browser

WIDTHS = (1400, 390)
CHARTS = ("llama2-70b-by-round", "measured-vs-bandwidth", "measured-per-hourly-dollar", "tokens-per-joule")


def fits_the_phone(page, width):
    if width == 390:
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, wider_than_the_screen(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_spec_sheet_measured_section(server, sized, width):  # noqa: F811
    page = sized("/computekb/accelerators/nvidia-h200-sxm", width, server)
    section = page.locator("#section-measured")
    section.scroll_into_view_if_needed()
    assert section.locator("h2").inner_text() == "Measured"
    row = section.locator('tr[data-benchmark="llama2-70b"][data-scenario="Offline"]').first
    assert row.is_visible()
    # every value links to its citation, every result ID to its results at MLCommons
    assert row.locator("a.citation-link").get_attribute("href").startswith("/computekb/citations/benchmark-results-")
    assert row.locator("a.result-link").get_attribute("href").startswith(
        "https://github.com/mlcommons/inference_results_v")
    assert "%" in row.locator("td").last.inner_text()
    rates = section.locator("table.achieved-rates tr[data-measure='memory-bandwidth']")
    assert rates.count() == 3 and "%" in rates.first.inner_text()
    # NVIDIA's 8 × H200 MaxQ system, Llama 2 70B Offline in v4.1: 6,153 W, 769 W each, 4.11 tokens per joule
    energy = section.locator('table.measured-energy tr[data-benchmark="llama2-70b"][data-scenario="Offline"]').first
    assert energy.is_visible()
    assert "6,153" in energy.inner_text() and "769" in energy.inner_text() and "4.11" in energy.inner_text()
    assert energy.locator("a.citation-link").get_attribute("href").endswith("-average-w")
    page.locator("#section-measured a.citation-link").first.click()
    page.wait_for_load_state()
    assert page.title().startswith("Citation: result of benchmark_results mlperf-")
    page.go_back()
    fits_the_phone(page, width)
    assert page.console_errors == []


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_measured_rows(server, sized, width):  # noqa: F811
    page = sized("/-/compare?ids=nvidia-h200-sxm,amd-mi325x,nvidia-b200", width, server)
    # the rows all three share come first, in the first of the measured tables
    row = page.locator("table.compare-measured").first.locator('tr[data-measure="llama2-70b (99%) Offline, v5.1"]')
    row.scroll_into_view_if_needed()
    assert row.is_visible()
    cells = row.locator("td[data-measured-column]")
    assert cells.count() == 3
    for i in range(3):
        assert cells.nth(i).locator("a.result-link").count() == 1
    fits_the_phone(page, width)
    assert page.console_errors == []


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chart", CHARTS)
def test_measured_chart_is_drawn(server, sized, chart, width):  # noqa: F811
    page = sized(f"/-/dashboards/accelerator-landscape/{chart}", width, server)
    page.locator("canvas, svg.marks").first.wait_for(timeout=15000)
    fits_the_phone(page, width)
    assert page.console_errors == []


def test_measured_charts_on_the_dashboard(server, sized):  # noqa: F811
    page = sized("/-/dashboards/accelerator-landscape", 1400, server, height=2400)
    for chart in CHARTS:
        page.locator(f"#chart-{chart} canvas, #chart-{chart} svg").first.wait_for(timeout=15000)
    assert page.console_errors == []
