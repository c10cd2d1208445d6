"""Nothing writable, nothing that crashes: plugins/guard.py and the serving settings.

Bad query strings get a 400 with a message; only GET and HEAD are answered;
the database is immutable, SQL is limited in time and rows; every page carries
security headers.
"""

import hashlib
import logging

import httpx
import pytest
from datasette import hookimpl
from datasette.plugins import pm
from datasette.utils.asgi import Response

from serving.serve import make_datasette
from serving.site import DATASETTE_MAJOR, query_path

from conftest import assert_refused, databases_listed

TABLE = "/computekb/accelerators"


@pytest.mark.parametrize("query, names", [
    ("_sort=no_such_column", "no_such_column"),
    ("_sort_desc=no_such_column", "no_such_column"),
    ("_sort=name&_sort_desc=name", "_sort_desc"),
    ("_col=no_such_column", "_col"),
    ("_nocol=slug", "_nocol"),
    ("_col=name&_nocol=no_such_column", "_nocol"),
    ("_facet=no_such_column", "no_such_column"),
    ("_facet_array=vendor", "JSON"),
    ("_through=not-json", "_through"),
    ("_through={}", "_through"),
    ('_through={"table": "no_such_table", "column": "x", "value": "y"}', "_through"),
    ("_size=99999999999", "_size"),
    ("_timelimit=abc", "_timelimit"),
])
async def test_bad_query_string_gets_400_with_a_message(client, query, names):
    if DATASETTE_MAJOR >= 1 and query in SQLITE_ERROR_ON_1:
        names = "check their names and values"  # the guard's general message: it never shows another error's text
    await assert_refused(client, TABLE, query, names, names)


# Datasette 1.0 lets sqlite's own error for these escape (a 500 the guard turns into a 400); 0.65 words its own message.
SQLITE_ERROR_ON_1 = {"_facet=no_such_column", "_facet_array=vendor"}


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", [
    "/", "/computekb", TABLE, f"{TABLE}/-/insert", f"{TABLE}/-/upsert", f"{TABLE}/-/drop", "/computekb/-/create",
    "/-/upload", "/-/messages", "/-/dashboards", "/computekb.db",
])
async def test_nothing_but_get_and_head_is_answered(client, method, path):
    response = await client.request(method, path, json={"row": {"slug": "x"}})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"


async def test_head_is_answered_with_the_get_headers_and_no_body(client):
    head, get = await client.request("HEAD", TABLE), await client.get(TABLE)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_database_is_immutable_and_refuses_writes(client, db_path):
    before = digest(db_path)
    databases = databases_listed((await client.get("/-/databases.json")).json())
    assert [d["is_mutable"] for d in databases if d["name"] == "computekb"] == [False]
    for sql in ("insert into vendors (slug, name) values ('x', 'x')", "delete from accelerators",
                "drop table accelerators", "update accelerators set name = 'x'",
                "attach database ':memory:' as other", "pragma writable_schema = 1"):
        response = await client.get(query_path("json"), params={"sql": sql})
        assert 400 <= response.status_code < 500, sql
    await client.post("/computekb", data={"sql": "delete from accelerators"})
    assert digest(db_path) == before


async def test_sql_time_and_row_limits_are_enforced(client):
    settings = (await client.get("/-/settings.json")).json()
    assert 0 < settings["sql_time_limit_ms"] <= 5000
    assert 0 < settings["max_returned_rows"] <= 5000
    endless = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
    response = await client.get(query_path("json"), params={"sql": endless})
    # 0.65 titles the error "SQL Interrupted"; 1.0 gives no title and says the query took too long
    assert response.status_code == 400 and ("SQL Interrupted" == response.json().get("title")
                                            or "took too long" in response.json()["error"])
    limit = settings["max_returned_rows"] * 3
    many = f"with recursive c(x) as (select 1 union all select x + 1 from c limit {limit}) select x from c"
    result = (await client.get(query_path("json"), params={"sql": many})).json()
    assert result["truncated"] and len(result["rows"]) == settings["max_returned_rows"]


def assert_security_headers(headers):
    policy = headers["content-security-policy"]
    for directive in ("default-src 'self'", "object-src 'none'", "base-uri 'self'", "frame-ancestors 'self'"):
        assert directive in policy
    assert "http" not in policy, "everything is served from this site: no CDN host is allowed"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] in ("no-referrer", "strict-origin-when-cross-origin", "same-origin")


async def test_html_pages_carry_security_headers(client, conn):
    (slug,) = conn.execute("select slug from accelerators order by slug limit 1").fetchone()
    for path in ("/", "/computekb", TABLE, f"{TABLE}/{slug}", query_path() + "?sql=select+1", "/no-such-page",
                 f"{TABLE}?memory_gb__gt=abc", "/-/dashboards"):
        response = await client.get(path)
        assert response.headers["content-type"].startswith("text/html"), path
        assert_security_headers(response.headers)


def test_served_database_is_immutable_limited_and_guarded(server):
    """`computekb serve` (the command line, not make_datasette) applies the same."""
    databases = databases_listed(httpx.get(f"{server}/-/databases.json").json())
    assert [d["is_mutable"] for d in databases if d["name"] == "computekb"] == [False]
    settings = httpx.get(f"{server}/-/settings.json").json()
    assert 0 < settings["sql_time_limit_ms"] <= 5000 and 0 < settings["max_returned_rows"] <= 5000
    assert_security_headers(httpx.get(f"{server}{TABLE}").headers)
    assert httpx.post(f"{server}{TABLE}", data={"x": "1"}).status_code == 405
    assert httpx.get(f"{server}{TABLE}?memory_gb__gt=abc").status_code == 400


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # sqlite callback tracebacks
def test_served_canned_query_refuses_a_bad_parameter_in_every_format(server):
    """Through `computekb serve`: a bad canned-query parameter is a 400 with its
    message as JSON, on the query page and as CSV; the blank form is a 200."""
    query = "/computekb/what-fits{}?model=llama-3-1-70b&weight_format=fp16&kv_format=fp16&context=128q"
    message = ("context must be a whole number of tokens from 1 to 16,777,216 (16M), such as 32768, 32k or 128K; "
               "got '128q'")
    as_json = httpx.get(server + query.format(".json"))
    assert as_json.status_code == 400 and as_json.json()["error"] == message
    page = httpx.get(server + query.format(""))
    assert page.status_code == 400 and message.replace("'", "&#39;") in page.text and 'value="128q"' in page.text
    assert_security_headers(page.headers)
    as_csv = httpx.get(server + query.format(".csv"))
    assert (as_csv.status_code, as_csv.text) == (400, message + "\n")
    assert as_csv.headers["x-content-type-options"] == "nosniff"
    assert httpx.get(f"{server}/computekb/what-fits").status_code == 200


class Broken:
    """Test routes: one fails whatever the query string, one only because of it."""

    __name__ = "test-broken-routes"  # Datasette lists plugins by module name

    @staticmethod
    async def always(request):
        raise RuntimeError("a bug in the server")

    calls = []

    @staticmethod
    async def on_query(request):
        Broken.calls.append(request.query_string)
        return Response.text(str(int(request.args.get("n", "0"))))

    @hookimpl
    def register_routes(self):
        return [(r"^/-/always-broken$", self.always), (r"^/-/broken-by-query$", self.on_query)]


@pytest.fixture
async def broken_client(db_path):
    plugin = Broken()
    pm.register(plugin, name=plugin.__name__)
    try:
        ds = make_datasette(db_path)
        await ds.invoke_startup()
        yield ds.client
    finally:
        pm.unregister(plugin)


async def test_server_bugs_stay_500_and_query_errors_become_400(broken_client, caplog):
    with caplog.at_level(logging.WARNING, logger="computekb.guard"):
        real_bug = await broken_client.get("/-/always-broken?x=1")
        bad_query = await broken_client.get("/-/broken-by-query?n=abc")
    assert real_bug.status_code == 500
    assert bad_query.status_code == 400 and "cannot be made with these arguments" in bad_query.text
    assert "invalid literal" not in bad_query.text, "no internal exception message"
    levels = {record.levelname for record in caplog.records if record.name == "computekb.guard"}
    assert levels == {"ERROR", "WARNING"}, "both are logged"
    warning = next(record for record in caplog.records if record.levelname == "WARNING")
    assert warning.exc_info is None, "a 400 is logged in one line, without a traceback"


async def test_row_url_with_too_few_keys_is_404(client, conn):
    """Datasette 0.65 answered 500 for a one-key URL on a two-column primary key; the guard makes it a 404.
    1.0 refuses it itself: a 4xx with a message too."""
    tables = [name for (name,) in conn.execute("select name from sqlite_master where type = 'table'")]
    compound = [t for t in tables if sum(1 for row in conn.execute(f"pragma table_info([{t}])") if row[5]) == 2]
    assert compound
    for table in compound:
        response = await client.get(f"/computekb/{table}/1.json")
        error = response.json()["error"]
        if DATASETTE_MAJOR >= 1:  # a 400 naming the mismatch, a 403 for a full-text index's own tables
            assert response.status_code in (400, 403) and error, table
        else:
            assert response.status_code == 404 and "comma-separated" in error, table


async def test_the_page_is_not_rendered_again_for_each_bad_query_string(broken_client):
    Broken.calls.clear()
    for n in ("abc", "xyz", "q"):
        assert (await broken_client.get(f"/-/broken-by-query?n={n}")).status_code == 400
    assert Broken.calls == ["n=abc", "", "n=xyz", "n=q"], "the page without arguments is rendered once"


async def test_a_400_for_a_query_string_prints_no_traceback(client, capfd):
    capfd.readouterr()
    response = await client.get("/computekb/accelerators.json?_where=randomblob(1000000000) is not null")
    assert response.status_code == 400
    assert "Traceback" not in capfd.readouterr().err
