import contextlib
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from etl.build import build_database
from serving.headers import SECURITY_HEADERS
from serving.paths import ROOT
from serving.serve import free_port, make_datasette, wait_until_up
from serving.site import DATASETTE_MAJOR, query_path

DATA = ROOT / "data"
# A few made-up rows per table, for the tests of how things work: they hold the
# cases those tests need whatever the real data holds.
FIXTURE_DATA = Path(__file__).parent / "fixture" / "data"
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"


def databases_listed(answer):
    """The databases of `/-/databases.json`: 0.65 answers the list, 1.0 `{"ok": true, "databases": [...]}`."""
    return answer["databases"] if isinstance(answer, dict) else answer


# datasette-dashboards 0.8, its newest release, checks permissions with Datasette.permission_allowed, which
# Datasette 1.0 removed (https://github.com/simonw/datasette/issues/2528; a shim for plugins is proposed in
# https://github.com/simonw/datasette/pull/2656): there every dashboard page answers 500. Strict, so that a
# release that works shows as a test to unmark.
DASHBOARD_PAGES_FAIL_ON_1 = pytest.mark.xfail(
    DATASETTE_MAJOR >= 1, strict=True,
    reason="datasette-dashboards 0.8 calls Datasette.permission_allowed, removed in Datasette 1.0 (simonw/datasette#2528)")

# Datasette 1.0's query page shows the error of a query of the client's own beside its editor, with a 200
# (its JSON is a 400); 0.65 answers that page with a 400 too.
QUERY_ERROR_PAGE_STATUS = 200 if DATASETTE_MAJOR >= 1 else 400


async def assert_refused(client, path, query, in_error, in_page):
    """`path?query` is refused the same way as JSON and as HTML: a 400 whose JSON
    `error` holds `in_error`, and a 400 page whose text holds `in_page` (the page
    shows the message among its markup, so the test names what a reader must see)."""
    response = await client.get(f"{path}.json?{query}")
    assert response.status_code == 400, response.text
    assert in_error in response.json()["error"]
    page = await client.get(f"{path}?{query}")
    assert page.status_code == (QUERY_ERROR_PAGE_STATUS if path == query_path() else 400), page.text
    assert in_page in page.text


@pytest.fixture(scope="session")
def db_path(tmp_path_factory):
    """The real data, built once per test session."""
    path = tmp_path_factory.mktemp("db") / "computekb.db"
    build_database(DATA, path)
    return path


@pytest.fixture(scope="session")
def fixture_db(tmp_path_factory):
    """The fixture data (tests/fixture/data), built once per test session."""
    path = tmp_path_factory.mktemp("fixture") / "computekb.db"
    build_database(FIXTURE_DATA, path)
    return path


@pytest.fixture(scope="session")
async def fixture_client(fixture_db):
    """A client of Datasette serving the fixture database as `computekb serve` would."""
    datasette = make_datasette(fixture_db)
    await datasette.invoke_startup()
    return datasette.client


@pytest.fixture(scope="session")
def conn(db_path):
    """A read-only connection to the built database, rows addressable by column name."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    yield conn
    conn.close()


@pytest.fixture(scope="session")
def ds(db_path):
    """Datasette configured exactly as `computekb serve` runs it."""
    return make_datasette(db_path)


@pytest.fixture(scope="session")
async def client(ds):
    await ds.invoke_startup()
    return ds.client


@contextlib.contextmanager
def serving(db_path, data_dir=DATA, temp_dir=None):
    """`computekb serve` of `db_path` on a free loopback port; yields its URL.
    `temp_dir`: the folder the server makes its temporary files in (TMPDIR).

    The installed `computekb` command, run from the database's folder: as a
    user runs it, with nothing of the checkout on the import path but what
    the installation puts there."""
    port = free_port()
    command = shutil.which("computekb", path=os.path.dirname(sys.executable)) or shutil.which("computekb")
    assert command, "the `computekb` command is not installed: pip install -e ."
    # The server's log goes to a file: a pipe nobody reads fills up after some hundred
    # requests, and the server then blocks on its next log line.
    log = Path(db_path).with_name(f"serve-{port}.log")
    with log.open("wb") as output:
        process = subprocess.Popen(
            [command, "serve", "--db", str(db_path), "--data", str(data_dir), "--port", str(port)],
            stdout=output, stderr=subprocess.STDOUT, cwd=Path(db_path).parent,
            env={**os.environ, "TMPDIR": str(temp_dir)} if temp_dir else None)
    url = f"http://127.0.0.1:{port}"
    if not wait_until_up(url, process):
        process.kill()
        process.wait(10)
        raise RuntimeError("server did not start: " + log.read_text(errors="replace"))
    try:
        yield url
    finally:
        process.terminate()
        process.wait(10)


def raw_request(url, data):
    """The bytes the server answers to `data` sent as is (empty if it closed the connection first)."""
    parts = urllib.parse.urlsplit(url)
    answer = b""
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        try:
            sock.sendall(data)
            while chunk := sock.recv(65536):
                answer += chunk
        except (BrokenPipeError, ConnectionResetError):  # answered and closed while the request was still sent
            pass
    return answer.decode("latin-1")


def head_fields(head):
    """The header fields of a raw response head, names lower-cased, in order (repeats kept)."""
    return [(name.strip().lower(), value.strip()) for name, _, value in
            (line.partition(":") for line in head.split("\r\n")[1:])]


def assert_security_headers_once(head):
    fields = head_fields(head)
    for name, value in SECURITY_HEADERS.items():
        assert [v for n, v in fields if n == name] == [value], (name, head)


CLOSE = b"Connection: close\r\n\r\n"
# Requests uvicorn answers itself with a 400, before any application code runs.
SERVERS_OWN = {
    "malformed request line": b"NOT HTTP\r\n\r\n",
    "bad header line": b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n" + CLOSE,
    "oversized path": b"GET /" + b"a" * 500_000 + b" HTTP/1.1\r\nHost: x\r\n" + CLOSE,
    "oversized header": b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n" + CLOSE,
    "many headers": b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Big: a\r\n" * 20_000 + CLOSE,
}


@pytest.fixture(scope="session")
def server(db_path):
    """`computekb serve` running on a free loopback port."""
    with serving(db_path) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser, request):
    """A fresh page that records console errors and keeps a screenshot as an artifact."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


AXE_BLOCKING = ("serious", "critical")


def blocking_axe_findings(page):
    """axe-core's serious and critical findings on `page`, as `rule (impact): [targets]`.

    Datasette 1.0's `<navigation-search>` element has a `matches` property that hides Element.matches, which
    axe-core calls on every element: the audit throws. The element (Datasette's search dialog, hidden until its
    shortcut opens it) is taken out of the page before the audit; 0.65 has none."""
    from axe_playwright_python.sync_playwright import Axe
    page.evaluate("document.querySelectorAll('navigation-search').forEach((e) => e.remove())")
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:3]]}"
            for v in Axe().run(page).response["violations"] if v["impact"] in AXE_BLOCKING]


def pytest_collection_modifyitems(items):
    """Browser tests last: sync Playwright keeps an event loop running in this thread
    for the rest of the session, and async tests cannot start theirs after it."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
