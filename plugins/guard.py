"""Request guard: a bad query string gets a 400 with a message, never a 500;
only GET and HEAD are answered; every response carries security headers.

Datasette 0.65 answers some bad query strings with HTTP 500: `_through` and
`_timelimit` are parsed without a check. Those are checked here before
Datasette sees them (filters on a column with a unit are checked by
plugins/units.py). Any other 500 caused by the query string alone (the
same page without it works) becomes a 400 and is logged, and a row URL with too
few keys a 404; any other 500 stays a 500, because that is a real server bug.
"""

import json
import logging
import re

from datasette import hookimpl
from datasette.handle_exception import handle_exception as default_error_page
from datasette.utils import tilde_decode, urlsafe_components
from datasette.utils.asgi import Base400, Request
from datasette.views.base import DatasetteError

log = logging.getLogger("computekb.guard")

READ_METHODS = {"GET", "HEAD"}

# Datasette's own templates use inline scripts and styles, so 'unsafe-inline'
# stays; data is kept inert by escaping (tests/test_xss_browser.py). vega (charts
# of datasette-vega and datasette-dashboards) compiles its expressions with
# `new Function`, hence 'unsafe-eval'. Everything loads from this site: no CDN.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
])
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",  # what Datasette sets on its data pages: the same everywhere
    "x-frame-options": "SAMEORIGIN",
}


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


async def error_response(datasette, request, message, status):
    """Datasette's own error page (HTML or JSON, as the path asks)."""
    return await default_error_page(datasette, request, DatasetteError(message, status=status))()


def with_security_headers(send):
    async def wrapped(event):
        if event["type"] == "http.response.start":
            present = {name.lower() for name, _ in event.get("headers", [])}
            extra = [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items()
                     if name.encode() not in present]
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
            request = Request(scope, receive)
            if request.method not in READ_METHODS:
                message = "This site is read-only: only GET and HEAD are answered."
                response = await error_response(datasette, request, message, 405)
                response.headers["Allow"] = "GET, HEAD"
                return await response.asgi_send(send)
            if message := query_error(datasette, request):
                return await (await error_response(datasette, request, message, 400)).asgi_send(send)
            await app(scope, receive, send)
        return guarded
    return wrap


def status_of(exception):
    return exception.status if isinstance(exception, (Base400, DatasetteError)) else 500


def describe(exception):
    """The message of the innermost exception: Datasette's tracer can wrap the
    real error (a pint error, say) in an unrelated one."""
    if isinstance(exception, DatasetteError):
        return exception.message
    while exception.__context__ is not None:
        exception = exception.__context__
    return str(exception) or type(exception).__name__


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
        if request.query_string and (await datasette.client.get(request.path)).status_code < 500:
            log.warning("query string caused a server error on %s", request.full_path, exc_info=exception)
            return await error_response(datasette, request, f"Invalid query string: {describe(exception)}", 400)
        log.error("server error on %s", request.full_path, exc_info=exception)
        return None  # Datasette's own 500 page
    return inner
