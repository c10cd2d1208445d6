"""Request guard: a bad query string gets a 400 with a message, never a 500;
only GET and HEAD are answered; every response carries security headers; a
request URL is at most MAX_TARGET_BYTES, so no response header echoes more of
it; and every absolute URL the site builds (permalinks, feeds, `Link` headers)
names the configured site URL, never the request's `Host` header.

Datasette 0.65 answers some bad query strings with HTTP 500: `_through` and
`_timelimit` are parsed without a check. Those are checked here before
Datasette sees them (filters on a column with a unit are checked by
plugins/units.py). Any other 500 caused by the query string alone (the
same page without it works) becomes a 400 whose message names no internals,
logged in one line, and a row URL with too few keys a 404; any other 500 stays
a 500, because that is a real server bug. A path with a trailing slash
redirects to the same path without it, on this site whatever the path holds.
`/-/databases.json` names each database's file, not where the server keeps it.
"""

import json
import logging
import re
import urllib.parse
import weakref
from pathlib import Path

from datasette import hookimpl
from datasette.utils import await_me_maybe, tilde_decode, urlsafe_components
from datasette.utils.asgi import Request, Response

from serving.error_page import error_response
from serving.headers import encoded_security_headers
from serving.site import site_url

log = logging.getLogger("computekb.guard")

READ_METHODS = {"GET", "HEAD"}
MAX_TARGET_BYTES = 8192  # path and query string: a long SQL query fits, a header echoing it stays small

def through_error(value):
    try:
        through = json.loads(value)
    except ValueError:
        through = None
    if not (isinstance(through, dict) and isinstance(through.get("table"), str)
            and isinstance(through.get("column"), str) and isinstance(through.get("value"), (str, int, float))):
        return f"_through={value!r}: expected JSON like {{\"table\": ..., \"column\": ..., \"value\": ...}}"
    return None


def query_error(datasette, request):
    """Why this query string would make Datasette answer 500, or None."""
    args = request.args
    for key in args:
        for value in args.getlist(key):
            if key == "_through" and (message := through_error(value)):
                return message
            if key == "_timelimit" and not value.isdigit():
                return f"_timelimit={value!r}: expected a whole number of milliseconds"
    return None


def with_site_host(scope, origin):
    """The ASGI scope with the site's scheme and host in place of what the request said."""
    parts = urllib.parse.urlsplit(origin)
    headers = [(name, value) for name, value in scope.get("headers", []) if name.lower() != b"host"]
    return dict(scope, scheme=parts.scheme, headers=[*headers, (b"host", parts.netloc.encode("ascii"))])


def database_csv_error(datasette, request):
    """Datasette 0.65 answers 500 for a database's CSV without a query (`/computekb.csv`)."""
    name, _, extension = request.path.strip("/").partition(".")
    if extension == "csv" and "/" not in name and name in datasette.databases and not request.args.get("sql"):
        return f"/{name}.csv exports the result of a query: add ?sql=select ... (or use a table's .csv)"
    return None


def without_trailing_slash(scope):
    """Where a path with a trailing slash redirects (the same path without it), or None for other paths.

    Datasette's own redirect keeps the raw path: `/\\evil.example/` went to `/\\evil.example`, which
    browsers read as `//evil.example`, another site. The target here starts with one slash and no
    backslash, so it stays on this site."""
    raw = (scope.get("raw_path") or scope["path"].encode("utf-8")).partition(b"?")[0]
    if not raw.endswith(b"/") or raw == b"/":
        return None
    target = "/" + raw.decode("latin-1").strip("/").lstrip("/\\")
    query = scope.get("query_string", b"").decode("latin-1")
    return target + (f"?{query}" if query else "")


def with_security_headers(send):
    """`send` adding each security header the answer does not already carry."""
    async def wrapped(event):
        if event["type"] == "http.response.start":
            present = {name.lower() for name, _ in event.get("headers", [])}
            extra = [(name, value) for name, value in encoded_security_headers() if name not in present]
            event = dict(event, headers=list(event.get("headers", [])) + extra)
        await send(event)
    return wrapped


@hookimpl
def asgi_wrapper(datasette):
    def wrap(app):
        async def guarded(scope, receive, send):
            if scope["type"] != "http":
                return await app(scope, receive, send)
            send = with_security_headers(send)
            scope = with_site_host(scope, site_url(datasette))
            request = Request(scope, receive)
            if len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string", b"")) > MAX_TARGET_BYTES:
                message = f"The URL is longer than {MAX_TARGET_BYTES:,} bytes."
                return await (await error_response(datasette, request, message, 414)).asgi_send(send)
            if request.method not in READ_METHODS:
                message = "This site is read-only: only GET and HEAD are answered."
                response = await error_response(datasette, request, message, 405)
                response.headers["Allow"] = "GET, HEAD"
                return await response.asgi_send(send)
            if message := query_error(datasette, request) or database_csv_error(datasette, request):
                return await (await error_response(datasette, request, message, 400)).asgi_send(send)
            if (location := without_trailing_slash(scope)) is not None:
                return await Response.redirect(location).asgi_send(send)
            await app(scope, receive, send)
        return guarded
    return wrap


def status_of(exception):
    """The HTTP status Datasette gives an exception: its own errors carry one, anything else is a 500."""
    status = getattr(exception, "status", 500)
    return status if isinstance(status, int) else 500


def client_message(exception):
    """What a client is told of an error its arguments caused: Datasette's own message, written for it, or a
    general one; never another exception's text, which can name internals (files, SQL, libraries)."""
    message = getattr(exception, "message", None)
    if isinstance(message, str):
        return message
    return "this page cannot be made with these arguments; check their names and values"


# Whether each page answers without a query string (< 500), remembered: the database is immutable, so
# a page that answered once answers again, and a bad query string does not render the page a second time.
BARE_PAGE_WORKS: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()
REMEMBERED_PAGES = 4096


async def bare_page_works(datasette, path):
    pages = BARE_PAGE_WORKS.setdefault(datasette, {})
    if path not in pages:
        if len(pages) >= REMEMBERED_PAGES:
            pages.pop(next(iter(pages)))
        pages[path] = (await datasette.client.get(path)).status_code < 500
    return pages[path]


async def row_key_error(datasette, path):
    """Why a row URL cannot name a row, or None. Datasette 0.65 answers 500 when
    it has fewer keys than the table's primary key (`/db/links/16` for a
    two-column key, or a full-text index table without rowid)."""
    parts = path.strip("/").split("/")
    if len(parts) != 3 or parts[0] not in datasette.databases:
        return None
    db, table = datasette.get_database(parts[0]), tilde_decode(parts[1])
    if not await db.table_exists(table):
        return None
    keys = await db.primary_keys(table) or ["rowid"]
    if len(urlsafe_components(re.sub(r"\.\w+$", "", parts[2]))) == len(keys):
        return None
    return f"a row of {table} is named by {len(keys)} comma-separated value(s): {', '.join(keys)}"


@hookimpl
def handle_exception(datasette, request, exception):
    if status_of(exception) < 500 or request.method not in READ_METHODS:
        return None

    async def inner():
        if message := await row_key_error(datasette, request.path):
            return await error_response(datasette, request, message, 404)
        if request.query_string and await bare_page_works(datasette, request.path):
            # one line, no traceback: the client's arguments, not the server, are at fault; and no
            # message of the exception in the answer, which can name internals (files, SQL, libraries)
            log.warning("400 for the query string of %s (%s)", request.path, type(exception).__name__)
            return await error_response(datasette, request, f"Invalid query string: {client_message(exception)}", 400)
        log.error("server error on %s", request.full_path, exc_info=exception)
        return None  # Datasette's own 500 page
    return inner


async def databases(request, datasette):
    """Datasette's list of databases with each file's name only: the full path would show where the
    server keeps its copy of the release (a temporary folder)."""
    listed = [{"name": db.name, "route": db.route, "path": Path(db.path).name if db.path else None,
               "size": db.size, "is_mutable": db.is_mutable, "is_memory": db.is_memory, "hash": db.hash}
              for db in datasette.databases.values() if db.name != "_internal"]  # as Datasette lists them
    return Response.json(listed)


@hookimpl
def register_routes():
    return [(r"^/-/databases(\.json)?$", databases)]


@hookimpl(hookwrapper=True, specname="handle_exception")
def first_answer_only(datasette, request, exception):
    """Datasette awaits every plugin's answer to an exception and uses the first: its own default one
    (the last) then prints a traceback and renders an error page for nothing, for every bad query string
    this guard answers with a 400. The answers are taken in their order here, and the first given ends it."""
    outcome = yield
    answers = outcome.get_result()

    async def first_answer():
        for answer in answers:
            response = await await_me_maybe(answer)
            if response is not None:
                return response
        return None
    outcome.force_result([first_answer])
