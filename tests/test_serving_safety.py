"""No query stalls the server, no request picks the host of a permalink, no
response echoes an unbounded part of the request, one release per server."""

import concurrent.futures
import json
import shutil
import time

import httpx
import pytest
from datasette.inspect import inspect_hash

from etl.build import build_database
from plugins.guard import MAX_TARGET_BYTES
from serving.headers import SECURITY_HEADERS
from serving.serve import SETTINGS, make_datasette, release_snapshot
from serving.site import DEFAULT_SITE_URL, query_path

from conftest import CLOSE, DATA, FIXTURE_DATA, SERVERS_OWN, assert_security_headers_once, raw_request, serving

LIMIT_S = SETTINGS["sql_time_limit_ms"] / 1000
HOSTILE = [
    query_path("json") + "?sql=select count(randomblob(1000000000)) from accelerators",
    "/computekb/accelerators.json?_where=randomblob(1000000000) is not null",
    "/computekb/accelerators.csv?_where=randomblob(1000000000) is not null&_stream=on",
    query_path("json") + "?sql=select length(zeroblob(2000000000))",
    query_path("json") + "?sql=select printf('%.*c', 1000000000, 'x')",
    query_path("json") + "?sql=select replace(printf('%.*c', 900000, 'a'), 'a', printf('%.*c', 900000, 'a'))",
    query_path("json") + "?sql=with recursive c(x) as (select 1 union all select x %2B 1 from c) select count(*) from c",
]


@pytest.mark.parametrize("path", HOSTILE)
async def test_a_hostile_query_ends_within_the_time_limit_with_a_4xx(client, path):
    started = time.perf_counter()
    response = await client.get(path)
    assert 400 <= response.status_code < 500, response.text[:300]
    assert time.perf_counter() - started < LIMIT_S + 1


@pytest.mark.parametrize("path", ["/computekb.csv", "/computekb.csv?_size=10"])
async def test_the_database_csv_without_a_query_is_a_400(client, path):
    response = await client.get(path)
    assert response.status_code == 400 and "?sql=" in response.text


async def test_the_database_csv_of_a_query_works(client):
    response = await client.get(query_path("csv") + "?sql=select 1 as one")
    assert response.status_code == 200 and response.text.splitlines() == ["one", "1"]


FORGED_HOSTS = ["127.0.0.1:8201@evil.example", "evil.example", "evil.example:443"]


@pytest.mark.parametrize("host", FORGED_HOSTS)
async def test_permalinks_and_link_headers_ignore_the_host_header(client, conn, host):
    slug = conn.execute("select slug from accelerators order by slug limit 1").fetchone()[0]
    for path in [f"/computekb/accelerators/{slug}", "/computekb/articles-feed.atom", "/computekb/accelerators"]:
        response = await client.get(path, headers={"host": host})
        assert response.status_code == 200, path
        assert "evil" not in response.text and "evil" not in str(response.headers), path
    page = await client.get(f"/computekb/accelerators/{slug}", headers={"host": host})
    assert f"{DEFAULT_SITE_URL}/computekb/accelerators/{slug}" in page.text


async def test_the_configured_site_url_is_used(db_path):
    ds = make_datasette(db_path, site_url="https://kb.example.org")
    await ds.invoke_startup()
    feed = await ds.client.get("/computekb/articles-feed.atom", headers={"host": "evil.example"})
    assert "https://kb.example.org/computekb/articles-feed.atom" in feed.text and "evil" not in feed.text


async def test_a_long_url_gets_a_414_and_no_header_echoes_it(client):
    response = await client.get("/computekb/accelerators?" + "x=" + "a" * 60_000)  # httpx sends at most 64 KB
    assert response.status_code == 414
    assert all(len(value) < MAX_TARGET_BYTES for value in response.headers.values())
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value


async def test_a_url_at_the_bound_is_answered_with_bounded_headers(client):
    query = "_where=1=1" + "+" * (MAX_TARGET_BYTES - 200)  # `+` is a space
    response = await client.get(f"/computekb/accelerators?{query}")
    assert response.status_code == 200
    # each URL within the bound: 1.0's Link header lists the next page's URL beside the JSON's
    assert all(len(url) <= MAX_TARGET_BYTES + 200 for value in response.headers.values() for url in value.split(", <"))


@pytest.mark.parametrize("name", SERVERS_OWN)
def test_the_servers_own_400s_carry_the_security_headers(server, name):
    """uvicorn answers a request it cannot parse itself, before any application
    code: a plain-text 400 that closes the connection, with the headers it is
    configured with (the httptools parser; h11's 400 carries none)."""
    head, _, body = raw_request(server, SERVERS_OWN[name]).partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 400") and "text/plain" in head and "<" not in body, head
    assert_security_headers_once(head)


def test_headers_within_the_bound_are_answered(server):
    head = raw_request(server, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 30_000 + b"\r\n" + CLOSE).partition("\r\n\r\n")[0]
    assert head.startswith("HTTP/1.1 200"), head


@pytest.mark.parametrize("path", ["/computekb/accelerators?x=" + "a" * 12_000, "/computekb/accelerators?x=" + "a" * 60_000],
                         ids=["12 KB", "60 KB"])
def test_a_long_url_gets_a_414_from_the_server_with_each_security_header_once(server, path):
    head = raw_request(server, f"GET {path} HTTP/1.1\r\nHost: x\r\n".encode() + CLOSE).partition("\r\n\r\n")[0]
    assert head.startswith("HTTP/1.1 414"), head
    assert_security_headers_once(head)


@pytest.mark.parametrize("path", ["/", "/computekb/accelerators", query_path("json") + "?sql=select+1", "/-/accelerators",
                                  "/assets/reader.css", "/nowhere"])
def test_each_security_header_is_sent_once(server, path):
    """The server sends the headers; the application's copies (the guard's, Datasette's `Referrer-Policy`) are dropped."""
    head = raw_request(server, f"GET {path} HTTP/1.1\r\nHost: x\r\n".encode() + CLOSE).partition("\r\n\r\n")[0]
    assert_security_headers_once(head)


def test_a_snapshot_is_the_database_with_an_inspect_file_made_from_it(db_path):
    with release_snapshot(db_path) as copy:
        assert copy.read_bytes() == db_path.read_bytes()
        inspected = json.loads(copy.with_suffix(".inspect.json").read_text())["computekb"]
        assert inspected["hash"] == inspect_hash(db_path) and inspected["tables"]["release"] == {"count": 1}
    assert not copy.exists()


def test_a_snapshot_refuses_a_file_that_is_not_a_release(tmp_path):
    (tmp_path / "computekb.db").write_bytes(b"not a database")
    with pytest.raises(RuntimeError, match="not a database built by computekb build"), \
            release_snapshot(tmp_path / "computekb.db"):
        pass


def table_count(url, table):
    """The row count the database page gives (from the inspect file of an immutable database)."""
    tables = httpx.get(url + "/computekb.json", timeout=30).json()["tables"]
    return next(t["count"] for t in tables if t["name"] == table)


def test_a_rebuild_under_a_live_server_changes_nothing_it_answers(tmp_path):
    """The database is rebuilt with one more vendor while the server has opened
    only some of its connections, then clients ask concurrently: every answer
    is of the release the server started with, none is a 500; the next start
    serves the new release."""
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    db = tmp_path / "computekb.db"
    build_database(data, db)
    with serving(db, data) as url:
        vendors = len(httpx.get(url + "/computekb/vendors.json?_shape=array&_size=max").json())
        accelerator = httpx.get(url + "/computekb/accelerators.json?_shape=array&_size=1&_col=slug").json()[0]["slug"]
        (data / "specs" / "zz-new-vendor.yml").write_text("vendors:\n  - {slug: zz-new-vendor, name: ZZ, country: US}\n")
        build_database(data, db)
        paths = ["/computekb/vendors.json?_shape=array&_size=max", "/computekb/vendors/zz-new-vendor.json",
                 f"/computekb/accelerators/{accelerator}", "/computekb.json"]

        def ask(i):
            return httpx.get(url + paths[i % len(paths)], timeout=30)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(ask, range(240)))
        assert not [str(a.url) for a in answers if a.status_code >= 500]
        for answer in answers:
            if answer.url.path == "/computekb/vendors.json":
                assert len(answer.json()) == vendors
            elif answer.url.path == "/computekb/vendors/zz-new-vendor.json":
                assert answer.status_code == 404
        assert table_count(url, "vendors") == vendors
    with serving(db, data) as url:
        assert table_count(url, "vendors") == vendors + 1
        assert httpx.get(url + "/computekb/vendors/zz-new-vendor.json").status_code == 200


def test_a_stopped_server_leaves_no_copy_of_its_release_behind(fixture_db, tmp_path):
    """The server answers from a copy of the database; stopped as a service manager stops it
    (SIGTERM), it removes the copy, else every restart would leave a database's worth of disk."""
    db = tmp_path / "computekb.db"
    shutil.copyfile(fixture_db, db)
    temp = tmp_path / "tmp"
    temp.mkdir()
    with serving(db, data_dir=FIXTURE_DATA, temp_dir=temp) as url:
        assert httpx.get(url + "/").status_code == 200
        assert any(temp.iterdir()), "the release is served from a copy in the temporary folder"
    assert list(temp.iterdir()) == []


async def test_without_cors_no_other_site_may_read_the_json(fixture_client):
    """`computekb serve` sends CORS headers only when asked (`--cors`, as the deployment image does)."""
    response = await fixture_client.get("/computekb/accelerators.json", headers={"origin": "https://other.example"})
    assert response.status_code == 200 and "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize("target_bytes, status", [(8192, 200), (8193, 414)])
async def test_the_url_bound_is_8192_bytes_of_path_and_query(client, target_bytes, status):
    path, query = "/computekb/accelerators", "_where=1=1"  # the `?` between them is not counted
    response = await client.get(f"{path}?{query}" + "+" * (target_bytes - len(path) - len(query)))
    assert response.status_code == status
