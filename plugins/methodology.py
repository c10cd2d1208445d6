"""/-/methodology: the methodology section of docs/DATA.md, as a page the other pages link to.

The text is written once, in docs/DATA.md; this page renders its "Methodology"
section with Python-Markdown (headings get ids, so a page can link to
`#source-tiers`), read once per process.
"""

from functools import cache

import markdown
from datasette import hookimpl
from datasette.utils.asgi import Response
from markupsafe import Markup

from etl.paths import DATA_DOC

SECTION = "## Methodology"


@cache
def methodology_html():
    """The section from its heading to the next heading of the same level, as HTML."""
    text = DATA_DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:] if end == -1 else text[start:end]
    return Markup(markdown.markdown(section, extensions=["toc"]))


async def methodology(request, datasette):
    html = await datasette.render_template("methodology.html", {"methodology": methodology_html()}, request=request)
    return Response.html(html)


@hookimpl
def register_routes():
    return [(r"^/-/methodology$", methodology)]


@hookimpl
def menu_links(datasette):
    return [{"href": datasette.urls.path("/-/methodology"), "label": "Methodology: what the numbers mean"}]
