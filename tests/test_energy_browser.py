"""The spec sheet's Energy table of B200, H200 and MI300X in Debian's Chromium at a desktop and a phone width:
measured whole-system power beside the datasheet's, tokens per joule, the cost of a million tokens, citations."""

import pytest

from tests.test_measured_browser import fits_the_phone
from tests.test_reader_browser import sized  # noqa: F401 (a fixture)

pytestmark = pytest.mark.browser

WIDTHS = (1400, 390)
# Llama 2 70B Offline (99%), from the spl.txt averages: Lenovo's 8 × B200 (v5.1) 10,401 W, 1,300 W each,
# 102,909 tokens/s ÷ 10,401 W = 9.89 tokens per joule, at $0.0895/kWh 10⁶ ÷ 9.894 ÷ 3.6 × 10⁶ × 0.0895 = $0.0025
# a million tokens; NVIDIA's 8 × H200 MaxQ (v4.1) 6,153 W, 769 W each, 4.11 tokens per joule, $0.0061.
SHEETS = {"nvidia-b200": ("v5.1", "10,401", "1,300", "9.89", "$0.0025", "1,000"),
          "nvidia-h200-sxm": ("v4.1", "6,153", "769", "4.11", "$0.0061", "700")}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("slug", sorted(SHEETS))
def test_energy_beside_the_datasheet_power(server, sized, slug, width):  # noqa: F811
    round_, watts, per_accelerator, per_joule, electricity, datasheet = SHEETS[slug]
    page = sized(f"/computekb/accelerators/{slug}#energy", width, server)
    heading = page.locator("h3#energy")
    heading.scroll_into_view_if_needed()
    assert heading.is_visible()
    assert page.get_by_text("whole-system wall power, not the chip's").is_visible()
    assert datasheet in page.locator("p.energy-datasheet").inner_text()
    row = page.locator(f'table.measured-energy tr[data-benchmark="llama2-70b"][data-scenario="Offline"]'
                       f'[data-round="{round_}"]').first
    assert row.is_visible()
    text = row.inner_text()
    assert all(figure in text for figure in (watts, per_accelerator, per_joule, electricity)), text
    link = row.locator("a.citation-link")
    assert link.get_attribute("href").startswith("/computekb/citations/power-results-mlperf-")
    assert page.locator("form.energy-price input[name=kwh_usd]").input_value() == "0.0895"
    fits_the_phone(page, width)
    link.click()
    page.wait_for_load_state()
    assert "power_results" in page.title() and "/performance" in page.content()
    assert page.console_errors == []


@pytest.mark.parametrize("width", WIDTHS)
def test_no_power_result_said_in_words(server, sized, width):  # noqa: F811
    """No MI300X result of the three rounds was submitted with power: the sheet says so."""
    page = sized("/computekb/accelerators/amd-mi300x#energy", width, server)
    said = page.get_by_text("No MLPerf result submitted with power names this accelerator.")
    said.scroll_into_view_if_needed()
    assert said.is_visible()
    fits_the_phone(page, width)
    assert page.console_errors == []


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_energy_rows(server, sized, width):  # noqa: F811
    """Llama 2 70B Offline (99%): H200 4.11 (v4.1), B200 9.89 (v5.1), MI300X none."""
    page = sized("/-/compare?ids=nvidia-h200-sxm,amd-mi300x,nvidia-b200", width, server)
    page.locator("details.energy-fold > summary").click()                    # folded, one click away
    row = page.locator('table.compare-energy tr[data-energy="llama2-70b (99%) Offline"]')
    row.scroll_into_view_if_needed()
    assert row.is_visible()
    cells = row.locator("td[data-energy-column]")
    assert "4.11" in cells.nth(0).inner_text() and "v4.1" in cells.nth(0).inner_text()
    assert "no power result" in cells.nth(1).inner_text()
    assert "9.89" in cells.nth(2).inner_text() and "v5.1" in cells.nth(2).inner_text()
    fits_the_phone(page, width)
    assert page.console_errors == []
