"""The finder's own capped request, another file name, the trailing-slash redirect, CSV formula cells and
where the server keeps its copy: each fixed where a reader or a client met it."""

import csv
import io
import shutil
from urllib.parse import urlencode

import pytest

from serving.serve import make_datasette
from serving.site import query_path

from conftest import databases_listed


@pytest.mark.parametrize("query", ["_where=1", "sql=1", "_stream=1"])
async def test_the_finder_with_an_argument_of_a_capped_request_does_not_wait_for_itself(fixture_client, query):
    response = await fixture_client.get(f"/-/accelerators?{query}")
    assert response.status_code != 503, response.text[:200]


async def test_the_finder_passes_where_to_the_table(fixture_client):
    response = await fixture_client.get("/-/accelerators?" + urlencode({"_where": "memory_gb > 100"}))
    assert response.status_code == 200 and "acme-x2" in response.text and "acme-x1" not in response.text


@pytest.fixture
async def other_name_client(fixture_db, tmp_path):
    db = tmp_path / "kb.db"
    shutil.copyfile(fixture_db, db)
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    return datasette.client


@pytest.mark.parametrize("path, shows", [("/", 'action="/-/accelerators"'), ("/-/accelerators", "acme-x1"),
                                         ("/-/search?q=memory", "search-results"),
                                         ("/computekb/accelerators/acme-x1", "96.0")])
async def test_a_database_file_of_another_name_is_served_as_the_knowledge_base(other_name_client, path, shows):
    response = await other_name_client.get(path)
    assert response.status_code == 200 and shows in response.text


async def raw_get(datasette, raw_path):
    """The status and headers of a request whose path is sent as the bytes given (no client normalises it)."""
    await datasette.invoke_startup()
    started = {}
    scope = {"type": "http", "http_version": "1.1", "method": "GET", "scheme": "http", "root_path": "",
             "path": raw_path.decode("latin-1"), "raw_path": raw_path, "query_string": b"",
             "headers": [(b"host", b"127.0.0.1")]}

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            started.update(status=message["status"], headers={k.lower(): v for k, v in message["headers"]})
    await datasette.app()(scope, receive, send)
    return started["status"], started["headers"]


@pytest.mark.parametrize("raw_path, location", [(b"/\\evil.example/", b"/evil.example"),
                                                (b"//evil.example/", b"/evil.example"),
                                                (b"/\\/evil.example//", b"/evil.example"),
                                                (b"/computekb/accelerators/", b"/computekb/accelerators")])
async def test_the_trailing_slash_redirect_stays_on_the_site(fixture_db, raw_path, location):
    status, headers = await raw_get(make_datasette(fixture_db), raw_path)
    assert status == 302 and headers[b"location"] == location


def csv_rows(text):
    return list(csv.reader(io.StringIO(text, newline="")))


async def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(fixture_client):
    sql = ("select '=1+2' as \"=head\", '-5' as minus_five, '@SUM(A1)' as at, '+cmd' as plus, '-x' as minus, "
           "'ok' as plain, 'a,\"b\"' || char(10) || '=c' as quoted, 2.5 as number")
    response = await fixture_client.get(query_path("csv") + "?" + urlencode({"sql": sql}))
    assert response.status_code == 200
    assert csv_rows(response.text) == [
        ["'=head", "minus_five", "at", "plus", "minus", "plain", "quoted", "number"],
        ["'=1+2", "-5", "'@SUM(A1)", "'+cmd", "'-x", "ok", 'a,"b"\n=c', "2.5"]]


async def test_a_streamed_table_csv_is_neutralised_and_complete(fixture_client):
    streamed = await fixture_client.get("/computekb/accelerators.csv?_stream=on&_size=1")
    whole = await fixture_client.get("/computekb/accelerators.csv?_size=max")
    assert streamed.status_code == whole.status_code == 200
    assert csv_rows(streamed.text) == csv_rows(whole.text) and len(csv_rows(whole.text)) == 4


async def test_the_databases_list_names_files_not_where_the_server_keeps_them(fixture_client, fixture_db):
    listed = databases_listed((await fixture_client.get("/-/databases.json")).json())
    assert [(db["name"], db["path"]) for db in listed if db["path"]] == [("computekb", "computekb.db")]
    assert str(fixture_db.parent) not in (await fixture_client.get("/-/databases")).text
