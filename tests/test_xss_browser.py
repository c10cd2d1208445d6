"""Data stays inert in a real browser: `<script>`, event handlers and
`javascript:` links written into the data show as text, never run.

The real data is copied and given one article, one source and one accelerator
whose text fields carry payloads; the database built from it is served by
`computekb serve` and its pages are opened in Chromium. A `javascript:` URL in
a source is refused by validation before any of that.
"""

import shutil

import pytest
import yaml

from etl.build import build_database, validate_data

from conftest import DATA, serving

SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=1">'
JS_LINK = '<a href="javascript:window.__xss=1">click</a>'
MD_LINK = "[click](javascript:window.__xss=1)"
WORD = "xsspayload"  # a search term only the payload article contains
SOURCE, ARTICLE, ACCELERATOR = "zz-xss-source", "zz-xss-article", "zz-xss-accelerator"


def first(path, table):
    return yaml.safe_load((DATA / path).read_text(encoding="utf-8"))[table][0]


def real_accelerator():
    """A real accelerator to compare the payload one with."""
    path = min((DATA / "specs/accelerators").glob("*.yml"))
    return first(path.relative_to(DATA), "accelerators")["slug"]


def payload_files(source_url):
    category, vendor = first("catalog/categories.yml", "categories"), first("specs/vendors.yml", "vendors")
    return {
        "sources/zz-xss.yml": {"sources": [{
            "slug": SOURCE, "url": source_url, "title": f"{SCRIPT} javascript:alert(1) {IMG}",
            "publisher": IMG, "kind": "vendor-page", "tier": "vendor-primary", "retrieved": "2026-12-01", "article": ARTICLE,
            "note": f"{JS_LINK} {MD_LINK}"}]},
        "articles/zz-xss.yml": {"articles": [{
            "slug": ARTICLE, "site": category["site"], "category": category["slug"], "language": "en",
            "title": f"{IMG}{SCRIPT}", "summary": f"{WORD} {SCRIPT} {JS_LINK}", "takeaways": [SCRIPT, MD_LINK],
            "accelerators": [ACCELERATOR], "note": JS_LINK}]},
        "specs/accelerators/zz-xss.yml": {"accelerators": [{
            "slug": ACCELERATOR, "vendor": vendor["slug"], "name": SCRIPT, "family": IMG,
            "device_class": "datacenter-gpu", "scope": "device", "status": "announced", "memory_gb": "1 GB",
            "source": SOURCE, "note": f"{JS_LINK} {MD_LINK}"}]},
    }


def write(data, files):
    for name, document in files.items():
        (data / name).write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")


@pytest.fixture(scope="module")
def payload_data(tmp_path_factory):
    data = tmp_path_factory.mktemp("xss") / "data"
    shutil.copytree(DATA, data)
    return data


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JavaScript:window.__xss=1",
                                 "data:text/html,<script>x</script>"])
def test_a_script_url_is_refused_by_validation(payload_data, url):
    write(payload_data, payload_files(url))
    problems = [p for p in validate_data(payload_data).problems if p.path.endswith("sources/zz-xss.yml")]
    assert [p.field for p in problems] == ["url"]


@pytest.fixture(scope="module")
def payload_server(payload_data):
    # A valid http URL can still try to break out of an attribute.
    write(payload_data, payload_files('https://example.com/"><script>window.__xss=1</script>'))
    db = payload_data.parent / "db" / "computekb.db"
    build_database(payload_data, db)
    with serving(db, payload_data) as url:
        yield url


PAGES = {  # path: whether the payload must show on it as text
    f"/computekb/articles/{ARTICLE}": True,
    f"/computekb/sources/{SOURCE}": True,
    f"/computekb/accelerators/{ACCELERATOR}": True,
    f"/computekb/articles?_search={WORD}": True,
    f"/computekb/sources?slug={SOURCE}": True,
    f"/computekb/accelerators?slug={ACCELERATOR}": True,
    f"/computekb/accelerators?slug={ACCELERATOR}&_view=full": True,
    f"/computekb/citations/accelerators-{ACCELERATOR}-memory-gb": True,
    f"/computekb/citations?row_slug={ACCELERATOR}": False,
    f"/computekb/article_accelerators?accelerator={ACCELERATOR}": True,
    f"/computekb/search-articles?q={WORD}": True,
    f"/computekb/articles-about?accelerator={ACCELERATOR}": True,
    f"/-/compare?ids={ACCELERATOR},{real_accelerator()}": True,
    "/-/dashboards/accelerator-landscape": False,
}

SCRIPT_URLS = """() => [...document.querySelectorAll('[href], [src], [action], [formaction]')]
    .flatMap(e => ['href', 'src', 'action', 'formaction'].map(a => e.getAttribute(a)))
    .filter(v => v && /^\\s*(javascript|data|vbscript):/i.test(v))"""


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGES)
def test_payloads_stay_inert_in_the_browser(payload_server, page, path):
    response = page.goto(payload_server + path)
    assert response.status < 400, path
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__xss") is None
    assert page.evaluate(SCRIPT_URLS) == []
    if PAGES[path]:
        assert SCRIPT in page.inner_text("body"), "the payload is shown, as text"


@pytest.mark.browser
def test_content_security_policy_blocks_other_hosts(payload_server, page):
    page.goto(f"{payload_server}/computekb/articles/{ARTICLE}")
    blocked = page.evaluate("""() => new Promise(resolve => {
        document.addEventListener('securitypolicyviolation', e => resolve(e.blockedURI));
        const script = document.createElement('script');
        script.src = 'http://127.0.0.2:9/x.js';
        document.body.appendChild(script);
        setTimeout(() => resolve(null), 5000);
    })""")
    assert blocked == "http://127.0.0.2:9/x.js"
