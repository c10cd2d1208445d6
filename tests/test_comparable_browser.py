"""Comparable rows in a real browser, at a desktop and a phone width: racks left out of the finder
until asked for and marked when shown, memory kind beside memory, power with its kind."""

import re

import pytest

from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", (1400, 390))
def test_the_finder_compares_single_devices_and_says_what_each_figure_is(server, browser, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/-/accelerators?_sort_by=memory_gb")
    rows = page.locator("table.finder-table tbody tr")
    names = rows.locator("th.col-name a").all_inner_texts()
    assert "GB200 NVL72" not in names and "GB300 NVL72" not in names, "a rack is not one device"
    note = page.locator("p.finder-systems")
    assert note.is_visible() and "left out" in note.inner_text()
    rtx4090 = page.locator("tr", has=page.locator("th.col-name a", has_text="GeForce RTX 4090"))
    assert rtx4090.locator("td.col-tdp_w").inner_text().strip() == "TBP 450"
    assert rtx4090.locator("td.col-memory_kind").inner_text().strip() == "gddr"
    tiers = page.locator("aside.finder-facets section", has=page.locator("h2", has_text="Weakest source tier"))
    # no row rests on a quoted vendor figure now; the reference dataset is named as the methodology names it
    assert "reference dataset" in tiers.inner_text() and "reference-dataset" not in tiers.inner_text(), \
        "the tier filter names the tiers as the methodology does"
    family = page.locator("aside.finder-facets section", has=page.locator("h2", has_text="Architecture family"))
    family.get_by_role("link", name="Blackwell", exact=True).click()
    page.wait_for_load_state()
    blackwell = page.locator("table.finder-table th.col-name a").all_inner_texts()
    assert {"GeForce RTX 5090", "GB10 Grace Blackwell Superchip", "Jetson AGX Thor (T5000)"} <= set(blackwell)
    page.goto(server + "/-/accelerators?_sort_by=memory_gb")
    note = page.locator("p.finder-systems")
    note.get_by_role("link", name="Include systems").click()
    page.wait_for_load_state()
    rack = page.locator("th.col-name", has=page.locator("a", has_text="GB200 NVL72"))
    assert rack.locator(".label-system").inner_text() == "system"
    assert page.locator('input[name="_systems"]').is_checked(), "the control shows the state it is in"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"comparable-finder-{width}.png"), full_page=False)
    page.goto(server + "/computekb/accelerators/amd-mi250x")
    head = page.locator("body").inner_text()
    assert "TDP 560 W" in head and "hbm" in head
    assert re.search(r"dies per package\s*2\b", head, re.IGNORECASE), "two GCDs in one package"
    assert errors == []
    context.close()
