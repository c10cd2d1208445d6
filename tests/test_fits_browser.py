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


# The answer as a reader meets it: first, short, every number and every blank explained

SEVENTY_B = "/-/what-fits?model=llama-3-1-70b&weights=format%3Afp8&kv_format=fp8&context=32k"
SHORT_ANSWER = 12  # rows shown before "show all"
CAPS = {"consumer-gpu": 8, "workstation-gpu": 8, "unified-memory-system": 4, "edge-module": 2}


@pytest.mark.parametrize("width", WIDTHS)
def test_the_answer_comes_first_and_short(opened, width):
    page = opened("/-/what-fits?model=llama-3-1-70b&weights=format%3Afp8&kv_format=fp8", width)
    page.fill("input[name=context]", "32k")
    page.click("form.fits-form button[type=submit]")
    page.wait_for_url(re.compile(r"context=32k"))
    # The answer is on the screen after sizing, at the top, not below the form.
    top = page.evaluate("document.getElementById('answer').getBoundingClientRect().top")
    assert -2 <= top < 120, top
    rows = page.locator("#answer tr[data-accelerator]")
    assert rows.count() == SHORT_ANSWER
    show_all = page.locator("#answer a.show-all")
    assert re.fullmatch(r"Show all \d{3} accelerators", show_all.inner_text())
    show_all.click()
    page.wait_for_url(re.compile(r"all=1"))
    assert page.locator("#answer tr[data-accelerator]").count() > 100
    no_wider_than_the_screen(page, width)


def significant_digits(number):
    """Significant digits of a number as printed: 5,411,456.0 has 8, 1,040 has 3, 0.57 has 2."""
    digits = number.rstrip(".,").replace(",", "")
    return len(digits.replace(".", "").lstrip("0") if "." in digits else digits.strip("0"))


def cells(page, label):
    """{accelerator: text of its cell under `label`} of every row of the answer."""
    return dict(page.eval_on_selector_all(
        f"#answer tr[data-accelerator] td[data-label='{label}']",
        "tds => tds.map(td => [td.parentElement.dataset.accelerator, td.innerText.trim()])"))


@pytest.mark.parametrize("width", WIDTHS)
def test_every_figure_in_words_and_every_blank_with_its_reason(opened, width):
    page = opened(SEVENTY_B + "&all=1", width)
    memory = cells(page, "Memory per device")
    # 70B in FP8 on a measured H100 SXM: a share of what vLLM uses, in words; an unmeasured device says so.
    assert re.fullmatch(r"needs [\d.]+ GB of the [\d.]+ GB vLLM uses\s+of [\d.]+ GB on the device", memory["nvidia-h100-sxm"])
    assert "seen" not in " ".join(memory.values())
    assert memory["amd-mi455x"].endswith("on the device, estimated (not measured)")
    price = cells(page, "Cheapest per GPU-hour")
    assert price["aws-trainium2"] == "no rental price on record"
    assert not [p for p in price.values() if re.search(r"\b0\.00\b", p)]
    # No row fits on more devices than its class's cap (the cap the summary states).
    classes = dict(page.eval_on_selector_all("#answer tr[data-accelerator]",
                                              "trs => trs.map(tr => [tr.dataset.accelerator, tr.dataset.class])"))
    devices = cells(page, "Devices")
    for slug, text in devices.items():
        count = re.match(r"\d+", text)
        if count and classes[slug] in CAPS:
            assert int(count.group()) <= CAPS[classes[slug]], (slug, text)
    assert "more than the 2 edge modules" in page.locator("tr[data-accelerator=nvidia-jetson-orin-nano-8gb]").inner_text()
    # Times in sensible units, a few digits; every blank speed says why.
    first = cells(page, "First token")
    for text in [*first.values(), *cells(page, "Decode per sequence").values()]:
        assert text, "a blank cell gives its reason"
        ceiling = text.split("\n")[0]
        assert all(significant_digits(n) <= 3 for n in re.findall(r"\d[\d,.]*", ceiling)), ceiling
        assert not re.search(r"\d{4,} ms|[\d,]{5,} ms", ceiling), ceiling
    reasons = {"no dense matrix peak on record for these weights", "no memory bandwidth on record",
               "no speed beyond a sensible layout", "does not fit: no speed"}
    decode = cells(page, "Decode per sequence")
    blanks = [text for text in [*first.values(), *decode.values()] if not text.startswith("ceiling")]
    assert set(blanks) <= reasons
    assert "no dense matrix peak on record for these weights" in blanks, "the real data has such gaps"
    no_wider_than_the_screen(page, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_every_problem_at_once_in_plain_words_with_close_matches(opened, width):
    page = opened("/-/what-fits?model=llama-3-1-7b&weights=format%3Afp8&context=lots&batch=0&devices=0", width)
    alert = page.locator("[role=alert]").inner_text()
    for problem in ("Model 'llama-3-1-7b' is not one of the models here. Did you mean", "Llama 3.1 70B",
                    "Context must be", "Batch must be", "Devices (tensor parallel) must be"):
        assert problem in alert, (problem, alert)
    assert "slug" not in alert and "table" not in alert
    closest = page.locator("[role=alert] a", has_text=re.compile(r"^Llama 3\.1 70B$"))
    assert "model=llama-3-1-70b" in closest.get_attribute("href"), "a close match is one click away"
    top = page.evaluate("document.getElementById('answer').getBoundingClientRect().top")
    assert top < 400
    no_wider_than_the_screen(page, width)
    assert not own_errors(page)
