"""Permalinks of throughput rows from before engines were recorded keep working.

A throughput row was `accelerator-precision-sparsity`; it is now
`accelerator-precision-sparsity-engine`, as matrix and vector figures of one
precision are two rows. A row page or citation page asked for by its former
slug, and not found, redirects (301) to the row it named; where that slug now
names two rows (both engines are stated), to the list of those rows, never to
one of them chosen for the reader. Only pages that are not found are looked up,
so every other page costs nothing.
"""

import re
import urllib.parse
from typing import NamedTuple

from datasette import hookimpl
from datasette.utils import tilde_encode
from datasette.utils.asgi import NotFound, Response

from etl.metadata import DATABASE

LEGACY = re.compile(rf"^/{DATABASE}/(throughput|citations)/([a-z0-9-]+)(\.\w+)?$")
CITATION = re.compile(r"^throughput-(.+)-tflops$")  # a throughput citation's slug: table, row, field


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


@hookimpl
def handle_exception(datasette, request, exception):
    if not isinstance(exception, NotFound) or DATABASE not in datasette.databases:
        return None
    legacy = legacy_request(request.path)
    if legacy is None:
        return None

    async def inner():
        rows = await rows_named(datasette.get_database(DATABASE), legacy.throughput)
        return Response.redirect(target(datasette, legacy, rows), status=301) if rows else None
    return inner
