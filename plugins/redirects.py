"""Permalinks of throughput rows from before engines were recorded keep working.

A throughput row was `accelerator-precision-sparsity`; it is now
`accelerator-precision-sparsity-engine`, as matrix and vector figures of one
precision are two rows. A row page or citation page asked for by its former
slug, and not found, redirects (301) to the row it named; where that slug now
names two rows (both engines are stated), to the list of those rows, never to
one of them chosen for the reader. A citation published before a slug rule
changed (a field whose name ends with another field's name now has two
hyphens before it, domain/schema.py `citation_slug`) redirects to the slug it
has now, unless another citation has that slug. Any other row address that names no row
gets its 404 page with the closest slugs of that table as links, so
`/computekb/accelerators/nvidia-h200` offers the H200 SXM and H200 NVL spec
sheets. Only pages that are not found are looked up, so every other page
costs nothing.
"""

import re
import urllib.parse
from typing import NamedTuple

from datasette import hookimpl
from datasette.utils import tilde_decode, tilde_encode
from datasette.utils.asgi import NotFound, Response

from domain.matching import closest
from domain.schema import COLUMNS, SUFFIXED_FIELDS, dashed
from serving.metadata import DATABASE

LEGACY = re.compile(rf"^/{DATABASE}/(throughput|citations)/([a-z0-9-]+)(\.\w+)?$")
CITATION = re.compile(r"^throughput-(.+)-tflops$")  # a throughput citation's slug: table, row, field
ROW = re.compile(rf"^/{DATABASE}/([a-z_]+)/([^/.]+)$")
CITATION_PAGE = re.compile(rf"^/{DATABASE}/citations/(?P<slug>[a-z0-9-]+)(?P<format>\.\w+)?$")
SLUGS_READ = 20_000  # a 404 reads a bounded number of slugs, whatever the table's size


class CloseMatch(NamedTuple):
    slug: str
    href: str


class Legacy(NamedTuple):
    """A request for a former slug: which table, which former throughput slug, which format."""

    table: str
    throughput: str
    suffix: str


def legacy_request(path):
    match = LEGACY.match(path)
    if match is None:
        return None
    table, slug, suffix = match.groups()
    if table == "citations":
        citation = CITATION.match(slug)
        if citation is None:
            return None
        slug = citation.group(1)
    return Legacy(table, slug, suffix or "")


async def rows_named(db, former):
    """The throughput rows whose former slug is `former`."""
    result = await db.execute(
        "SELECT slug, accelerator, precision, sparsity FROM throughput "
        "WHERE accelerator || '-' || precision || '-' || sparsity = ? ORDER BY slug", [former])
    return [dict(row) for row in result.rows]


def target(datasette, legacy, rows):
    """Where the former slug leads: its one row, or the list of the rows it now names."""
    if len(rows) == 1:
        slug = rows[0]["slug"] if legacy.table == "throughput" else f"throughput-{rows[0]['slug']}-tflops"
        return datasette.urls.row(DATABASE, legacy.table, tilde_encode(slug)) + legacy.suffix
    first = rows[0]
    if legacy.table == "throughput":
        query = {key: first[key] for key in ("accelerator", "precision", "sparsity")}
    else:
        query = {"table_name": "throughput", "field": "tflops", "row_slug__in": ",".join(r["slug"] for r in rows)}
    return datasette.urls.table(DATABASE, legacy.table) + legacy.suffix + "?" + urllib.parse.urlencode(query)


async def close_matches(datasette, path):
    """Rows of the table a row address names whose slugs are closest to the one asked for."""
    match = ROW.match(path)
    if not match or "slug" not in COLUMNS.get(match.group(1), ()):
        return []
    table, wanted = match.group(1), urllib.parse.unquote(match.group(2))
    rows = await datasette.get_database(DATABASE).execute(f"select slug from {table} limit {SLUGS_READ}")
    return [CloseMatch(slug, datasette.urls.row(DATABASE, table, slug)) for slug in closest(wanted, [r[0] for r in rows])]


def renamed_slugs(slug):
    """The current slugs a former citation slug may stand for."""
    for table, fields in SUFFIXED_FIELDS.items():
        for field in fields:
            prefix, suffix = f"{dashed(table)}-", f"-{dashed(field)}"
            if slug.startswith(prefix) and slug.endswith(suffix) and len(slug) > len(prefix) + len(suffix):
                yield slug[: -len(suffix)] + "-" + suffix


async def renamed_citation(datasette, request):
    """The redirect of a former citation slug to its current one, or None."""
    match = CITATION_PAGE.match(request.path)
    candidates = list(renamed_slugs(tilde_decode(match["slug"]))) if match else []
    if not candidates:
        return None
    placeholders = ", ".join("?" * len(candidates))
    found = (await datasette.get_database(DATABASE).execute(
        f"SELECT slug FROM citations WHERE slug IN ({placeholders})", candidates)).first()
    if found is None:
        return None
    target = datasette.urls.row(DATABASE, "citations", tilde_encode(found["slug"])) + (match["format"] or "")
    return Response.redirect(target + (f"?{request.query_string}" if request.query_string else ""), status=301)


async def not_found_page(datasette, request, exception, matches):
    info = {"ok": False, "error": str(exception), "status": 404, "title": None, "close_matches": matches}
    return Response.html(await datasette.render_template("error.html", info, request=request), status=404)


@hookimpl
def handle_exception(datasette, request, exception):
    if not isinstance(exception, NotFound) or DATABASE not in datasette.databases:
        return None
    legacy = legacy_request(request.path)

    async def inner():
        if legacy is not None:
            rows = await rows_named(datasette.get_database(DATABASE), legacy.throughput)
            if rows:
                return Response.redirect(target(datasette, legacy, rows), status=301)
        if redirect := await renamed_citation(datasette, request):
            return redirect
        if request.path.endswith(".json"):
            return None  # Datasette's JSON error
        # Every HTML 404 rendered here: Datasette's own error page skips the extra CSS and scripts
        # (render_async without them), so it would lack the site's styles.
        return await not_found_page(datasette, request, exception, await close_matches(datasette, request.path))
    return inner
