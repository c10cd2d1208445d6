"""Requests that can run arbitrary SQL share a cap, so a slow query holds at most one SQL thread.

Datasette runs every query on one of `num_sql_threads` threads (3 here), each
for up to `sql_time_limit_ms`. Three clients sending queries that each compute
for the whole limit keep all three busy, and every other page, whatever it
asks, queues behind them. The requests that let a client choose what is
computed therefore take a slot first, and at most `expensive_requests_at_once`
run at a time (default: the SQL threads less two, at least one; one with 3
threads), so two threads always stay free for every other page:

- `?sql=` (a query of the client's own, on the database page in any format;
  the dashboards' charts run their configured queries on the server, in
  plugins/dashboard_charts.py),
- `?_where=` (an SQL expression of the client's own on a table page),
- `?_stream=` (a streamed CSV runs one query after another until the table ends).

- a page of a large table (over LARGE_TABLE_ROWS rows) asking for more than a
  page of the default size: `_size` over `default_page_size`, `_facet_size` over
  `default_facet_size`, more than LIGHT_FACETS facets (`_facet`, `_facet_array`,
  `_facet_date`); and a large table's CSV. Their SQL is Datasette's, but their
  cost grows with what is asked: each row and facet value is rendered, encoded
  and compressed on the one event loop (`benchmark_results?_size=max` with a
  facet on every column took 8.6 s alone). A small table answers any of them in
  milliseconds, and the reader pages ask them of `accelerators` for their own.

Such a page of a large table is bounded too (`bound_problem`, a 400 naming the bound): no
streamed CSV (the whole table, one page after another: the citations took 3 s alone,
9 s under load; the database download or the CSV a page at a time give it), at most
MAX_FACETS facets and MAX_HTML_ROWS rows on an HTML page (JSON and CSV give up
to `max_returned_rows`); `_facet_size` above MAX_FACET_SIZE (Datasette's own
"…" link asks `max`) is read as MAX_FACET_SIZE.

Not capped: table, row and reader pages of the default size, column filters, a
few facets, `_search` and the canned queries. Their SQL is Datasette's or the
project's, the client supplies only bound values, and their cost is bounded by
the size of the data (an index lookup or one scan of a table, milliseconds
here), so no client can make them compute for the whole limit. The search page
is a reader page: it must not queue behind someone's SQL. The database download
is served as a file (plugins/download.py).

A request beyond the cap waits for a slot up to `expensive_request_wait_ms`
(default: `sql_time_limit_ms`, the longest a slot stays taken by one query),
then gets a 503 with `Retry-After`. Both are keys of the `computekb` plugin's
configuration in the metadata.
"""

import asyncio
import math
import urllib.parse
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


LARGE_TABLE_ROWS = 1000  # a table with more rows gives a page of max_returned_rows that costs seconds
# The large tables of each Datasette instance's database, counted at its start (the database is immutable).
large_tables_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@hookimpl
def startup(datasette):
    cap_of(datasette)  # a mistyped setting stops the server at start, not every capped request with a 500

    async def count_tables():
        large = set()
        for name, database in datasette.databases.items():
            if name != "_internal":
                counts = await database.table_counts(limit=datasette.setting("sql_time_limit_ms"))
                large |= {(name, table) for table, rows in counts.items() if rows is None or rows > LARGE_TABLE_ROWS}
        large_tables_of[datasette] = large
    return count_tables


def of_a_database(datasette, path: str) -> bool:
    """Whether `path` is one of Datasette's pages of a database (`/computekb.json`, `/computekb/accelerators`).

    A reader page (`/-/accelerators?_where=...`) is not: it asks the table for its answer, and that
    request takes the slot; taking one for the page too would wait for itself until the wait ends."""
    first = path.strip("/").split("/", 1)[0]
    return first.rsplit(".", 1)[0] in datasette.databases or first in datasette.databases


LIGHT_FACETS = 2       # facets a table page asks without taking a slot (the finder's vendor and class)
MAX_FACETS = 5         # facets one table page may ask
MAX_FACET_SIZE = 100   # values shown per facet
MAX_HTML_ROWS = 100    # rows of one HTML table page: rendering 1,000 took 3.7 s
FACET_ARGS = ("_facet", "_facet_array", "_facet_date")


def facets_asked(request: Request) -> int:
    return sum(len(request.args.getlist(name)) for name in FACET_ARGS)


def asked_size(value: str | None, maximum: int) -> int:
    """A `_size` or `_facet_size` as a count: `max` is `maximum`, anything not a count 0 (Datasette refuses it)."""
    if value == "max":
        return maximum
    return int(value) if value and value.isdigit() else 0


def is_large_table(datasette, path: str) -> bool:
    parts = path.strip("/").split("/")
    return len(parts) == 2 and (parts[0], parts[1].rsplit(".", 1)[0]) in large_tables_of.get(datasette, ())


def is_heavy_table_request(datasette, request: Request) -> bool:
    """Whether a request of a large table asks for more than a page of the default size, or is its CSV."""
    if not is_large_table(datasette, request.path):
        return False
    maximum = datasette.setting("max_returned_rows")
    return (request.path.endswith(".csv") or facets_asked(request) > LIGHT_FACETS
            or asked_size(request.args.get("_size"), maximum) > datasette.setting("default_page_size")
            or asked_size(request.args.get("_facet_size"), maximum) > datasette.setting("default_facet_size"))


def bound_problem(datasette, request: Request) -> str | None:
    """Why a request of a large table asks more than one page may give, or None."""
    if not is_large_table(datasette, request.path):
        return None
    if request.args.get("_stream"):
        return (f"a table of over {LARGE_TABLE_ROWS:,} rows is not streamed as one CSV (it would run for seconds): "
                f"download the whole database (/{request.path.strip('/').split('/')[0]}.db), or take the CSV a page "
                f"of {datasette.setting('max_returned_rows'):,} rows at a time (_size=max, then _next= as the JSON's "
                "`next` gives it)")
    if facets_asked(request) > MAX_FACETS:
        return f"at most {MAX_FACETS} facets per page ({facets_asked(request)} asked): ask the others on another page"
    html = "." not in request.path.rsplit("/", 1)[-1]
    size = asked_size(request.args.get("_size"), datasette.setting("max_returned_rows"))
    if html and size > MAX_HTML_ROWS:
        return (f"_size={request.args.get('_size')}: an HTML page shows at most {MAX_HTML_ROWS} rows; "
                f"the .json and .csv forms give up to {datasette.setting('max_returned_rows'):,}")
    return None


def with_facet_size_bounded(scope, request: Request):
    """The scope with `_facet_size` over MAX_FACET_SIZE (`max` included) read as MAX_FACET_SIZE."""
    if asked_size(request.args.get("_facet_size"), MAX_FACET_SIZE + 1) <= MAX_FACET_SIZE:
        return scope
    pairs = [(name, str(MAX_FACET_SIZE) if name == "_facet_size" else value)
             for name, value in urllib.parse.parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                                                       keep_blank_values=True)]
    return dict(scope, query_string=urllib.parse.urlencode(pairs).encode("latin-1"))


def is_expensive(datasette, request: Request) -> bool:
    """Whether the client chooses the SQL this request computes, or how much of it (see the module docstring)."""
    if not of_a_database(datasette, request.path):
        return False
    if "_where" in request.args or "_stream" in request.args or is_heavy_table_request(datasette, request):
        return True
    return "sql" in request.args


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
            if scope["type"] != "http":
                return await app(scope, receive, send)
            request = Request(scope, receive)
            if problem := bound_problem(datasette, request):
                return await (await error_response(datasette, request, problem, 400)).asgi_send(send)
            if is_large_table(datasette, request.path):
                scope = with_facet_size_bounded(scope, request)
            if not is_expensive(datasette, request):
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
