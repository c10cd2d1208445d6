"""What every page of the site shares for readers: the menu of reader pages, and CSV files that
download under a name saying what they hold.

Datasette serves CSV inline as text/plain-like content with a name such as
`accelerators.csv`; a reader who saves it cannot tell later which data release
it came from. The ASGI wrapper adds `Content-Disposition: attachment` with
`computekb-<table>-<release>.csv` to every CSV answer of the knowledge base's database.
"""

import re

from datasette import hookimpl

DATABASE = "computekb"
CSV_PATH = re.compile(rf"^/{DATABASE}/([^/]+)\.csv$")
SAFE = re.compile(r"[^a-z0-9-]+")
READER_PAGES = (("/-/accelerators", "Find an accelerator"), ("/-/what-fits", "What fits this model?"),
                ("/-/search", "Search the articles"))


def download_name(path, release):
    """`computekb-accelerators-53e3834fb9f7.csv` for /computekb/accelerators.csv; None for other paths."""
    match = CSV_PATH.match(path)
    if not match:
        return None
    name = SAFE.sub("-", match.group(1).lower()).strip("-") or "query"
    return f"{DATABASE}-{name}-{release or 'unreleased'}.csv"


def with_disposition(headers, filename):
    """Response headers with the attachment disposition in place of any other."""
    kept = [(k, v) for k, v in headers if k.lower() != b"content-disposition"]
    return [*kept, (b"content-disposition", f'attachment; filename="{filename}"'.encode())]


@hookimpl
def asgi_wrapper(datasette):
    release = {}

    async def data_release():
        if "value" not in release and DATABASE in datasette.databases:
            row = (await datasette.get_database(DATABASE).execute("select data_release from release limit 1")).first()
            release["value"] = row[0] if row else None
        return release.get("value")

    def wrap(app):
        async def csv_as_download(scope, receive, send):
            if scope["type"] != "http" or not CSV_PATH.match(scope["path"]):
                await app(scope, receive, send)
                return
            filename = download_name(scope["path"], await data_release())

            async def named(message):
                if message["type"] == "http.response.start" and message.get("status") == 200:
                    message = {**message, "headers": with_disposition(message.get("headers", []), filename)}
                await send(message)
            await app(scope, receive, named)
        return csv_as_download
    return wrap


@hookimpl
def menu_links(datasette):
    return [{"href": datasette.urls.path(path), "label": label} for path, label in READER_PAGES]
