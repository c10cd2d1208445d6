"""What fits, in a real browser (Debian's chromium) at a desktop width and a phone width.

A reader narrows the answer to one accelerator with the form's own button (or
Enter), changes a list without the page reloading, sees the weights of the
chosen model only, the memory split with the runtime's reserve named, the
shortfall of a device that does not fit, the window of the model and errors in
the words of the form; nothing is wider than a phone. Screenshots are kept in
test-artifacts/ (fits-<test>-<width>.png).
"""

import re

import pytest

from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

WIDTHS = (1400, 390)
ASKED = "/-/what-fits?model=llama-3-1-70b&weights=format%3Afp8&kv_format=fp8&context=32k"


@pytest.fixture
def opened(browser, server, request):
    """open(path, width) -> a page of that width that records console errors and leaves a screenshot."""
    pages = []

    def open_page(path, width):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.console_errors = []
        page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
        page.on("pageerror", lambda e: page.console_errors.append(str(e)))
        page.goto(server + path)
        pages.append((page, context, width))
        return page
    yield open_page
    ARTIFACTS.mkdir(exist_ok=True)
    name = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")
    for page, context, width in pages:
        page.screenshot(path=str(ARTIFACTS / f"fits-{name}-{width}.png"), full_page=True)
        context.close()


def no_wider_than_the_screen(page, width):
    if width == 390:
        assert page.evaluate("document.documentElement.scrollWidth") <= 390


def own_errors(page):
    """Console errors, without the browser's note of the page's own 400 status."""
    return [e for e in page.console_errors if "status of 400" not in e]


@pytest.mark.parametrize("width", WIDTHS)
def test_one_accelerator_by_its_button_and_nothing_reloads_on_a_choice(opened, width):
    page = opened(ASKED, width)
    page.select_option("select[name=accelerator]", "nvidia-h100-sxm")
    page.wait_for_timeout(300)
    assert "accelerator=" not in page.url, "a changed list does not send the form"
    page.click("form.fits-form button[type=submit]")
    page.wait_for_url(re.compile(r"accelerator=nvidia-h100-sxm"))
    rows = page.locator("tr[data-accelerator]")
    assert rows.count() == 1 and rows.first.get_attribute("data-accelerator") == "nvidia-h100-sxm"
    assert page.locator(".fits-summary").is_visible()
    summary = page.locator(".fits-summary").inner_text()
    assert re.search(r"\d+ of 1 accelerators hold it on one device, \d+ on up to 8, \d+ in any sensible layout", summary)
    assert "vLLM reserve" in page.locator(".legend").inner_text()
    assert page.locator(".split-bar .reserve").count() == 1 and page.locator(".split-bar .headroom").count() == 1
    assert page.locator('a[href="/-/sizing-formulas"]').is_visible()
    no_wider_than_the_screen(page, width)
    assert not page.console_errors


@pytest.mark.parametrize("width", WIDTHS)
def test_enter_in_the_context_box_sends_the_form(opened, width):
    page = opened(ASKED, width)
    page.fill("input[name=context]", "8k")
    page.press("input[name=context]", "Enter")
    page.wait_for_url(re.compile(r"context=8k"))
    assert "8,192 tokens of context" in page.locator(".fits-summary").inner_text()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_weights_list_follows_the_model(opened, width, conn):
    page = opened("/-/what-fits", width)
    page.select_option("select[name=model]", "gpt-oss-120b")
    offered = page.eval_on_selector_all("select[name=weights] option[value^='checkpoint:']", "os => os.map(o => o.value)")
    own = {f"checkpoint:{s}" for s, in conn.execute("select slug from checkpoints where model = 'gpt-oss-120b'")}
    assert offered and set(offered) == own
    assert "accelerator=" not in page.url and page.url.endswith("/-/what-fits")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_device_short_of_memory_says_by_how_much_and_shows_no_speed(opened, width):
    page = opened(ASKED + "&devices=1&accelerator=nvidia-h100-sxm", width)
    row = page.locator("tr[data-accelerator=nvidia-h100-sxm]")
    text = row.inner_text()
    assert "does not fit" in text and re.search(r"GB short per device; fits on 2", text)
    assert "ceiling" not in text
    no_wider_than_the_screen(page, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_window_and_the_errors_in_the_words_of_the_form(opened, width):
    page = opened(ASKED.replace("context=32k", "context=10M"), width)
    assert "Llama 3.1 70B reads at most 131,072 tokens" in page.locator(".fits-window").inner_text()
    no_wider_than_the_screen(page, width)
    page = opened(ASKED + "&devices=0", width)
    alert = page.locator("[role=alert]").inner_text()
    assert "Devices (tensor parallel) must be a whole number from 1 to 8" in alert and " tp" not in alert
    no_wider_than_the_screen(page, width)
    assert not own_errors(page)
