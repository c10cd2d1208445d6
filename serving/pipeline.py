"""The request pipeline: every wrapper a request passes through, outermost first, with what it guarantees.

Datasette builds its application and wraps it with each `asgi_wrapper` hook's
wrapper, the first wrapper the hook returns innermost. pluggy calls the hooks
of the plugins registered last first, `trylast` ones at the end: so the
installed plugins (registered from their entry points before the plugins
folder) wrap the plugins folder's, and datasette-gzip (`trylast`) wraps every
one. The plugins folder's modules are registered in the order the file system
lists the folder (Datasette globs it unsorted), which another checkout may
list otherwise: no guarantee below may rest on the order among them, and each
says what it assumes of the others. `computekb serve` adds one wrapper of its
own around the whole (`serving/serve.py`, as uvicorn's application).

tests/test_request_pipeline.py checks that the wrappers Datasette registers are
exactly those listed here, and that the outermost ones are in this order.
"""

from typing import NamedTuple


class Wrapper(NamedTuple):
    """One wrapper of every request: who registers it, and what it guarantees."""

    plugin: str      # the plugin's name as Datasette registers it (a plugins-folder module: its file name)
    guarantees: str


# Outermost first. The server's wrapper is not a Datasette plugin: `computekb serve` applies it.
SERVER = Wrapper("serving/serve.py without_security_headers",
                 "the security headers appear once: the application's copies are dropped, uvicorn sends its own, "
                 "on its own 400s too")
# Installed plugins, in the order they wrap the plugins folder's wrappers.
INSTALLED = (
    Wrapper("gzip", "every answer is compressed when the client accepts it (datasette-gzip, `trylast`); "
                    "every wrapper inside sees uncompressed bodies"),
)
# The plugins folder's wrappers, in no fixed order (see above).
PLUGINS_FOLDER = (
    Wrapper("guard.py", "a bad query string gets a 400, never a 500; only GET and HEAD; security headers on every "
                        "answer from inside it; URLs bounded; `Host` replaced by the configured site URL for "
                        "everything inside it (a wrapper outside it reads the request's own `Host`)"),
    Wrapper("sql_cap.py", "requests that run SQL of the client's choosing take one of a few slots; its own busy "
                          "answer carries the security headers itself, as the guard may be inside it"),
    Wrapper("units.py", "filter values written with a unit (`3TB/s`) reach Datasette in the column's unit; a value "
                        "it cannot read is left for Datasette's filter check (400)"),
    Wrapper("speed.py", "a facet the page shows by default is not counted twice (only with the speed-ups on)"),
    Wrapper("page_shell.py", "every HTML page has `lang`, a main landmark and a light head; hashed static files are "
                             "cached for a year"),
    Wrapper("reader_site.py", "a CSV answer downloads as computekb-<table>-<release>.csv, formula cells prefixed"),
    Wrapper("query_checks.py", "a refused canned query answers 400 in every format, its CSV with the message (Datasette "
                           "0.65 sends an empty 200, 1.0 a 200 page), from what its parameter check leaves in the scope"),
    Wrapper("failed_queries.py", "a query of the client's own that fails answers 400 in every format, its CSV with the "
                                 "reason, and a function's refusal in its own words rather than SQLite's"),
    Wrapper("download.py", "the database download is sent as a file with its size, read off the event loop, with the "
                           "security headers and no compression; every other request goes on inward"),
)
