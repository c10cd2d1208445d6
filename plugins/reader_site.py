"""What every page of the site shares for readers: the menu of reader pages, and CSV files that
download under a name saying what they hold.

Datasette serves CSV inline as text/plain-like content with a name such as
`accelerators.csv`; a reader who saves it cannot tell later which data release
it came from. The ASGI wrapper adds `Content-Disposition: attachment` with
`computekb-<table>-<release>.csv` to every CSV answer of the knowledge base's database.

A spreadsheet opening a CSV file runs a cell that begins with `=`, `+`, `-` or
`@` as a formula (a query's `select '=HYPERLINK(...)'`, a note beginning with a
minus): every CSV answer has such cells prefixed with `'`, which spreadsheets
show as text, numbers (`-5`) excepted. The answer is rewritten record by record
as it streams. `_bom=1` puts UTF-8's byte-order mark first, for Excel on Windows.
"""

import codecs
import csv
import io
import re

from datasette import hookimpl

from serving.metadata import DATABASE

CSV_PATH = re.compile(rf"^/{DATABASE}/([^/]+)\.csv$")
SAFE = re.compile(r"[^a-z0-9-]+")
READER_PAGES = (("/-/accelerators", "Find an accelerator"), ("/-/what-fits", "What fits this model?"),
                ("/-/cost-per-token", "Cost per million tokens"), ("/-/search", "Search the articles"))


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


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")


def neutral(cell: str) -> str:
    """`cell` with a `'` before it when a spreadsheet would read it as a formula."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) and not NUMBER.match(cell) else cell


def complete_records_end(text: str) -> int:
    """Where the last complete record of CSV `text` ends: after its last line end outside quotes."""
    end, inside, position = 0, False, 0
    for line in text.split("\n")[:-1]:
        inside ^= line.count('"') % 2 == 1
        position += len(line) + 1
        if not inside:
            end = position
    return end


class NeutralCsv:
    """CSV text in as it streams, the same records out with formula cells neutralised.

    The same dialect as Datasette's writer (Python's csv defaults), so a cell left
    as it is comes out byte for byte as it went in."""

    def __init__(self):
        self.decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self.pending = ""

    def feed(self, data: bytes, final: bool) -> bytes:
        text = self.pending + self.decoder.decode(data, final)
        end = len(text) if final else complete_records_end(text)
        self.pending = text[end:]
        out = io.StringIO()
        writer = csv.writer(out)
        for record in csv.reader(io.StringIO(text[:end], newline="")):
            writer.writerow([neutral(cell) for cell in record])
        return out.getvalue().encode("utf-8", "surrogateescape")


def neutralising(send):
    """`send` for a CSV answer: its body's formula cells neutralised (its length then changes: none is sent)."""
    rewriter = None

    async def rewritten(message):
        nonlocal rewriter
        if message["type"] == "http.response.start" and message.get("status") == 200:
            rewriter = NeutralCsv()
            message = {**message, "headers": [(k, v) for k, v in message.get("headers", [])
                                              if k.lower() != b"content-length"]}
        elif message["type"] == "http.response.body" and rewriter is not None:
            final = not message.get("more_body", False)
            message = {**message, "body": rewriter.feed(message.get("body", b""), final)}
        await send(message)
    return rewritten


BOM = codecs.BOM_UTF8
BOM_ARGUMENT = re.compile(r"(?:^|&)_bom=(?:1|on)(?:&|$)")


def with_bom(send):
    """`send` for a CSV answer asked for with `_bom=1`: its body begins with UTF-8's byte-order mark, by which
    Excel on Windows reads the file as UTF-8 (without it, accents come out garbled)."""
    first = True

    async def marked(message):
        nonlocal first
        if message["type"] == "http.response.start":
            message = {**message, "headers": [(k, v) for k, v in message.get("headers", [])
                                              if k.lower() != b"content-length"]}
        elif message["type"] == "http.response.body" and first:
            first = False
            message = {**message, "body": BOM + message.get("body", b"")}
        await send(message)
    return marked


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
            if scope["type"] != "http" or not scope["path"].endswith(".csv"):
                await app(scope, receive, send)
                return
            send = neutralising(send)
            if BOM_ARGUMENT.search(scope.get("query_string", b"").decode("latin-1")):
                send = with_bom(send)
            if not CSV_PATH.match(scope["path"]):
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
