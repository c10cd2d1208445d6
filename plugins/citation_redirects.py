"""Citation permalinks published before a slug rule changed keep working: a 301 to the slug they now have.

Citations of a field whose name ends with another field's name now put two
hyphens before the field (domain/schema.py, `citation_slug`), so that no two
citations can share a slug. Their former one-hyphen slugs are redirected,
unless another citation has that slug now: then it is that citation's page.
"""

import re

from datasette import hookimpl
from datasette.utils import tilde_decode, tilde_encode
from datasette.utils.asgi import Response

from domain.schema import SUFFIXED_FIELDS, dashed
from serving.metadata import DATABASE

CITATION_PAGE = re.compile(rf"^/{DATABASE}/citations/(?P<slug>[a-z0-9-]+)(?P<format>\.\w+)?$")


def renamed_slugs(slug):
    """The current slugs a former citation slug may stand for."""
    for table, fields in SUFFIXED_FIELDS.items():
        for field in fields:
            prefix, suffix = f"{dashed(table)}-", f"-{dashed(field)}"
            if slug.startswith(prefix) and slug.endswith(suffix) and len(slug) > len(prefix) + len(suffix):
                yield slug[: -len(suffix)] + "-" + suffix


@hookimpl
def handle_exception(datasette, request, exception):
    match = CITATION_PAGE.match(request.path)
    if getattr(exception, "status", None) != 404 or match is None or DATABASE not in datasette.databases:
        return None

    async def inner():
        candidates = list(renamed_slugs(tilde_decode(match["slug"])))
        if not candidates:
            return None
        placeholders = ", ".join("?" * len(candidates))
        found = (await datasette.get_database(DATABASE).execute(
            f"SELECT slug FROM citations WHERE slug IN ({placeholders})", candidates)).first()
        if found is None:
            return None
        target = datasette.urls.row(DATABASE, "citations", tilde_encode(found["slug"])) + (match["format"] or "")
        return Response.redirect(target + (f"?{request.query_string}" if request.query_string else ""), status=301)
    return inner
