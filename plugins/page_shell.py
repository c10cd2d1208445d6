"""What every HTML page gets around Datasette's own markup: a language, a main landmark, light heads,
and static files cached for a year.

Datasette 0.65's base template has no `lang` on `<html>` and no main landmark,
and datasette-vega puts its 944 KB chart library in the head of every page,
render-blocking, though only table and query pages draw its charts. This
wrapper edits the finished page (so no Datasette template is copied):
`lang="en"` where the page has none (French content carries its own `lang`),
`role="main"` on the content section, the chart library dropped from pages
that are not table or query pages and, on those that are, named in a `<meta>`
for static/reader.js to load when a reader asks for a chart. Static
files whose URL carries their content hash (datasette-vega's hashed names,
Datasette's `app.css?<hash>`, the project's `/assets/...?v=<hash>`) are sent
with a year's `Cache-Control`; datasette-gzip compresses every answer.
"""

import re

from datasette import hookimpl

CHART_LIBRARY = re.compile(r'\s*<script src="[^"]*/datasette_vega/[^"]+\.js"></script>'
                           r'|\s*<link rel="stylesheet" href="[^"]*/datasette_vega/[^"]+\.css">')
CHART_SCRIPT = re.compile(r'<script src="([^"]*/datasette_vega/[^"]+\.js)"></script>')
CHART_STYLE = re.compile(r'<link rel="stylesheet" href="([^"]*/datasette_vega/[^"]+\.css)">')
BODY_CLASS = re.compile(r'<body class="([^"]*)"')
CHART_PAGES = ("table", "query")  # the first body class of the pages datasette-vega draws on
HASHED_STATIC = re.compile(r"^/-/static-plugins/[^/]+/[^/]+\.[0-9a-f]{8,}\.(?:js|css)$")
HASHED_QUERY = re.compile(r"^(?:v=)?[0-9a-f]{6,}$")
YEAR = "public, max-age=31536000, immutable"


def draws_charts(html: str) -> bool:
    match = BODY_CLASS.search(html)
    return bool(match) and match.group(1).split(" ")[0] in CHART_PAGES


def shell(html: str) -> str:
    """The page with a language, a main landmark, and the chart library only where a chart is asked for."""
    html = html.replace("<html>", '<html lang="en">', 1)
    html = html.replace('<section class="content">', '<section class="content" role="main">', 1)
    # The library's tags are in the head: searched there only (a whole page, 185 KB for a spec sheet,
    # took the regex 10 ms a request).
    head, end_of_head, body = html.partition("</head>")
    if draws_charts(html):
        # named for static/reader.js, which loads it when a chart is asked for
        library = [CHART_SCRIPT.search(head), *CHART_STYLE.finditer(head)]
        if library[0]:
            meta = f'<meta name="chart-library" content="{" ".join(m.group(1) for m in library)}">'
            return CHART_LIBRARY.sub("", head) + meta + end_of_head + body
    return CHART_LIBRARY.sub("", head) + end_of_head + body


def cached_for_a_year(path: str, query_string: str) -> bool:
    """Whether the URL names one version of a static file: a hash in its name or its query string."""
    if HASHED_STATIC.match(path):
        return True
    static = path.startswith("/-/static/") or path.startswith("/-/static-plugins/") or path.startswith("/assets/")
    return static and bool(HASHED_QUERY.match(query_string))


def header_value(headers, name: bytes):
    return next((value for key, value in headers if key.lower() == name), b"")


def html_shell(app):
    async def shelled(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        query_string = scope.get("query_string", b"").decode("latin-1")
        year = cached_for_a_year(scope["path"], query_string)
        start, body = None, []

        async def edited(message):
            nonlocal start
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if year and message.get("status") == 200:
                    headers = [(k, v) for k, v in headers if k.lower() != b"cache-control"] + [(b"cache-control", YEAR.encode())]
                if header_value(headers, b"content-type").startswith(b"text/html"):
                    start = {**message, "headers": headers}  # held until the whole page is in
                    return
                await send({**message, "headers": headers})
                return
            if start is None:
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page = shell(b"".join(body).decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})
        await app(scope, receive, edited)
    return shelled


@hookimpl
def asgi_wrapper():
    return html_shell
