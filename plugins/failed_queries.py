"""A query of the client's own that fails gets one error answer in every format, naming why.

Datasette 0.65 answers the CSV of a failed `?sql=` query (an unknown table or
function, an answer over the bound of plugins/limits.py, a function's refusal)
with `200 OK` and an empty body: the CSV of no columns. Its JSON and HTML give
a 400, but for a function's refusal only with SQLite's words for it, "user-defined
function raised exception". This wrapper turns the empty CSV into a 400 whose
plain-text body is the reason, and puts a function's own refusal in place of
SQLite's words in the JSON and HTML (serving/sql_functions.py keeps it on the
thread that ran it, so the query is asked once more, on an SQL thread, within
the time limit, to read it; only a failed query is). Datasette logs the failed
query in one line; nothing here logs again.
"""

import collections
import html
import json

from datasette import hookimpl
from datasette.utils.asgi import Request

from serving.metadata import DATABASE
from serving.site import query_path
from serving.sql_functions import refusal_of

FUNCTION_RAISED = "user-defined function raised exception"  # SQLite's text for any function's exception
EMPTY_CSV = (b"", b"\r\n")  # the CSV of no columns, with or without its header line


def is_own_query(request: Request) -> bool:
    return "sql" in request.args and request.path in {query_path(fmt) for fmt in (None, "json", "csv")}


async def reason(datasette, request: Request) -> str | None:
    """Why the request's query fails, asked of an SQL thread (None if it runs after all)."""
    sql = request.args.get("sql")
    # Datasette's parameters: every argument of the request, and each named parameter it lacks as ''
    params = collections.defaultdict(str, {name: request.args.get(name) for name in request.args})
    seconds = datasette.setting("sql_time_limit_ms") / 1000
    return await datasette.get_database(DATABASE).execute_fn(lambda conn: refusal_of(conn, sql, params, seconds))


def with_reason(body: bytes, content_type: str, message: str) -> bytes:
    """The error answer's body with `message` in place of SQLite's words for a function's exception."""
    if content_type.startswith("application/json"):
        answer = json.loads(body)
        answer["error"] = message
        if isinstance(answer.get("errors"), list):  # Datasette 1.0 lists them too
            answer["errors"] = [message if error == FUNCTION_RAISED else error for error in answer["errors"]]
        return json.dumps(answer).encode()
    return body.replace(FUNCTION_RAISED.encode(), html.escape(message).encode())


def headers_of(event) -> dict:
    return {name.lower(): value for name, value in event.get("headers", [])}


def without_length(headers, content_type=None):
    kept = [(n, v) for n, v in headers if n.lower() != b"content-length" and (not content_type or n.lower() != b"content-type")]
    return kept + ([(b"content-type", content_type)] if content_type else [])


@hookimpl
def asgi_wrapper(datasette):
    def wrap(app):
        async def answered(scope, receive, send):
            if scope["type"] != "http" or not is_own_query(request := Request(scope, receive)):
                return await app(scope, receive, send)
            start, body, passing = None, b"", False

            async def held(event):
                """The answer as it comes, held back while it may still be a failure to explain."""
                nonlocal start, body, passing
                if passing:
                    return await send(event)
                if event["type"] == "http.response.start":
                    start = event
                    return None
                body += event.get("body", b"")
                ends = not event.get("more_body", False)
                if not may_explain(start, body, ends, request.path.endswith(".csv"), is_html(start)):
                    passing = True
                    await send(start)
                    await send(dict(event, body=body))
                elif ends:
                    await explain(start, body)
                return None

            async def explain(start, body):
                content_type = headers_of(start).get(b"content-type", b"").decode("latin-1")
                message = await reason(datasette, request)
                if message and request.path.endswith(".csv"):
                    start = dict(start, status=400, headers=without_length(start["headers"], b"text/plain; charset=utf-8"))
                    body = (message + "\n").encode()
                elif message:
                    start = dict(start, headers=without_length(start["headers"]))
                    body = with_reason(body, content_type, message)
                await send(start)
                await send({"type": "http.response.body", "body": body})

            await app(scope, receive, held)
        return answered
    return wrap


def is_html(start) -> bool:
    return headers_of(start).get(b"content-type", b"").startswith(b"text/html")


def may_explain(start, body: bytes, ends: bool, as_csv: bool, as_html: bool) -> bool:
    """Whether the answer so far may be a failed query's: an empty CSV, or an error naming no reason. Datasette
    1.0 shows a failed query beside its editor in a 200 page: an HTML page is held to its end to be read."""
    raised = not ends or FUNCTION_RAISED.encode() in body
    if start["status"] == 200:
        if as_csv:
            return body in (EMPTY_CSV if ends else (b"", b"\r", b"\r\n"))
        return as_html and raised
    return start["status"] == 400 and raised
