"""axe-core in Chromium on every reader page, at a desktop and a phone width: no serious or critical
finding (missing language, unnamed controls, low contrast, links told apart by colour alone)."""

import pytest

from conftest import blocking_axe_findings

pytestmark = pytest.mark.browser

PAGES = {
    "home": "/",
    "finder": "/-/accelerators?memory_gb__gte=80",
    "spec-sheet": "/computekb/accelerators/nvidia-h100-sxm",
    "model": "/computekb/models/gpt-oss-120b",
    "compare": "/-/compare?ids=nvidia-h100-sxm,nvidia-h200-sxm,amd-mi300x",
    "what-fits": "/-/what-fits?model=llama-3-1-70b",
    "what-fits-answer": "/-/what-fits?model=llama-3-1-70b&weights=format%3Afp8&kv_format=fp8&context=32k",
    "what-fits-problems": "/-/what-fits?model=llama-3-1-7b&weights=format%3Afp8&context=lots&batch=0",
    "search": "/-/search?q=mémoire",
    "search-versus-and-formats": "/-/search?q=FP4 vs H200",
    "search-did-you-mean": "/-/search?q=blakwell",
    "cost-per-token": "/-/cost-per-token",
    "cost-per-token-problems": "/-/cost-per-token?model=lama&batch=0",
    "article": "/computekb/articles/gpu-cloud-france-europe-h100-h200-b300",
    "dashboard": "/-/dashboards/accelerator-landscape",
    "error": "/computekb/accelerators/nvidia-h200",
}


@pytest.mark.parametrize("width", (1400, 390))
@pytest.mark.parametrize("name", PAGES)
def test_no_serious_accessibility_finding(browser, server, name, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto(server + PAGES[name])
        page.wait_for_load_state("networkidle")
        assert blocking_axe_findings(page) == []
        assert page.evaluate("document.documentElement.lang") == "en"
        assert page.locator("[role=main], main").count() == 1
    finally:
        context.close()
