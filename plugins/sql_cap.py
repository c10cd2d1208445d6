"""Requests that can run arbitrary SQL share a cap, so a slow query holds at most one SQL thread.

Datasette runs every query on one of `num_sql_threads` threads (3 here), each
for up to `sql_time_limit_ms`. Three clients sending queries that each compute
for the whole limit keep all three busy, and every other page, whatever it
asks, queues behind them. The requests that let a client choose what is
computed therefore take a slot first, and at most `expensive_requests_at_once`
run at a time (default: the SQL threads less two, at least one; one with 3
threads), so two threads always stay free for every other page:

- `?sql=` (a query of the client's own, on the database page in any format),
  unless it is the query of one of the dashboards' charts, which their page
  sends as `?sql=` with the filter values as bound parameters,
- `?_where=` (an SQL expression of the client's own on a table page),
- `?_stream=` (a streamed CSV runs one query after another until the table ends).

Not capped: table, row and reader pages, column filters, facets, `_search`
and the canned queries. Their SQL is Datasette's or the project's, the client
supplies only bound values, and their cost is bounded by the size of the data
(an index lookup or one scan of a table, milliseconds here), so no client can
make them compute for the whole limit. The search page is a reader page: it
must not queue behind someone's SQL.

A request beyond the cap waits for a slot up to `expensive_request_wait_ms`
(default: `sql_time_limit_ms`, the longest a slot stays taken by one query),
then gets a 503 with `Retry-After`. Both are keys of the `computekb` plugin's
configuration in the metadata.
"""

import asyncio
import math
import re
import weakref
from dataclasses import dataclass

from datasette import hookimpl
from datasette.utils.asgi import Request

from serving.error_page import error_response
from serving.headers import SECURITY_HEADERS
from serving.site import PLUGIN

FREE_THREADS = 2  # SQL threads kept for pages that are not capped


@dataclass(frozen=True)
class Cap:
    """How many capped requests run at once, and how long one more waits for a slot."""
    at_once: int
    wait_s: float


def cap_of(datasette) -> Cap:
    """The cap configured in the metadata (`plugins: computekb:`), or its default from Datasette's settings."""
    config = datasette.plugin_config(PLUGIN) or {}
    at_once = config.get("expensive_requests_at_once", max(1, datasette.setting("num_sql_threads") - FREE_THREADS))
    wait_ms = config.get("expensive_request_wait_ms", datasette.setting("sql_time_limit_ms"))
    if not (isinstance(at_once, int) and at_once >= 1) or not (isinstance(wait_ms, (int, float)) and wait_ms >= 0):
        raise ValueError(f"plugins: {PLUGIN}: expensive_requests_at_once must be a whole number of at least 1 "
                         f"({at_once!r}) and expensive_request_wait_ms a number of milliseconds ({wait_ms!r})")
    return Cap(at_once=at_once, wait_s=wait_ms / 1000)


@hookimpl
def startup(datasette):
    cap_of(datasette)  # a mistyped setting stops the server at start, not every capped request with a 500


OPTIONAL_PART = re.compile(r"\[\[.*?\]\]")
PARAMETER = re.compile(r":([a-zA-Z0-9_]+)")


def with_filters(query: str, filters: dict) -> str:
    """A chart query as its dashboard page sends it, by the syntax datasette-dashboards documents: each
    optional part `[[ AND col = :name ]]` is kept, without its brackets, when the filter `name` has a
    value, and left out otherwise. (The plugin's own function for it is not part of its public API;
    tests/test_sql_cap.py holds the two to the same answers.)"""
    def fill(part):
        name = PARAMETER.search(part.group(0))
        return part.group(0).strip("[]") if name and filters.get(name.group(1)) else ""
    return OPTIONAL_PART.sub(fill, query)


def is_chart_query(datasette, request: Request) -> bool:
    """Whether `?sql=` is a dashboard chart's own query, with the filter values the request sends."""
    options = {name: request.args.get(name) for name in request.args}
    return any(with_filters(chart["query"], options) == request.args.get("sql")
               for dashboard in (datasette.plugin_config("datasette-dashboards") or {}).values()
               for chart in (dashboard.get("charts") or {}).values() if "query" in chart)


def of_a_database(datasette, path: str) -> bool:
    """Whether `path` is one of Datasette's pages of a database (`/computekb.json`, `/computekb/accelerators`).

    A reader page (`/-/accelerators?_where=...`) is not: it asks the table for its answer, and that
    request takes the slot; taking one for the page too would wait for itself until the wait ends."""
    first = path.strip("/").split("/", 1)[0]
    return first.rsplit(".", 1)[0] in datasette.databases or first in datasette.databases


def is_expensive(datasette, request: Request) -> bool:
    """Whether the client chooses the SQL this request computes (see the module docstring)."""
    if not of_a_database(datasette, request.path):
        return False
    if "_where" in request.args or "_stream" in request.args:
        return True
    return "sql" in request.args and not is_chart_query(datasette, request)


# One set of slots per Datasette instance: its test client and the server it runs share them.
slots_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def slots(datasette, cap: Cap) -> asyncio.Semaphore:
    if datasette not in slots_of:
        slots_of[datasette] = asyncio.Semaphore(cap.at_once)
    return slots_of[datasette]


async def took_slot(semaphore: asyncio.Semaphore, seconds: float) -> bool:
    """Take a slot, waiting at most `seconds`: False if none came free in time."""
    try:
        async with asyncio.timeout(seconds):
            await semaphore.acquire()
    except TimeoutError:
        return False
    return True


async def busy_response(datasette, request: Request, cap: Cap):
    """The 503 of a capped request that found no slot: when to retry, and what was refused."""
    message = (f"The server is running another query of this kind ({cap.at_once} at a time): try again in a moment. "
               "Tables, rows and the reader pages answer meanwhile.")
    response = await error_response(datasette, request, message, 503)
    response.headers.update({**SECURITY_HEADERS, "Retry-After": str(max(1, math.ceil(cap.wait_s)))})
    return response


@hookimpl
def asgi_wrapper(datasette):
    def wrap(app):
        async def capped(scope, receive, send):
            if scope["type"] != "http" or not is_expensive(datasette, request := Request(scope, receive)):
                return await app(scope, receive, send)
            cap = cap_of(datasette)
            semaphore = slots(datasette, cap)
            if not await took_slot(semaphore, cap.wait_s):
                return await (await busy_response(datasette, request, cap)).asgi_send(send)
            try:
                await app(scope, receive, send)  # a streamed CSV keeps its slot until its last row is sent
            finally:
                semaphore.release()
        return capped
    return wrap
