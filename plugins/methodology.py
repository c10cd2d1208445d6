"""/-/methodology: the methodology section of docs/DATA.md, and /-/sizing-formulas:
docs/LLM_MATH.md, as pages the other pages link to.

The text is written once, in docs/; these pages render it with Python-Markdown
(headings get ids, so a page can link to `#source-tiers`), read once per process.
"""

from functools import cache

import markdown
from datasette import hookimpl
from datasette.utils.asgi import Response
from markupsafe import Markup

from etl.paths import DATA_DOC, SIZING_DOC

SECTION = "## Methodology"


@cache
def methodology_html():
    """The section from its heading to the next heading of the same level, as HTML."""
    text = DATA_DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:] if end == -1 else text[start:end]
    return Markup(markdown.markdown(section, extensions=["toc"]))


@cache
def sizing_html():
    return Markup(markdown.markdown(SIZING_DOC.read_text(encoding="utf-8"), extensions=["toc", "tables"]))


async def methodology(request, datasette):
    html = await datasette.render_template("methodology.html", {"methodology": methodology_html(), "doc": "docs/DATA.md",
                                                                "title": "Methodology"}, request=request)
    return Response.html(html)


async def sizing_formulas(request, datasette):
    html = await datasette.render_template("methodology.html", {"methodology": sizing_html(), "doc": "docs/LLM_MATH.md",
                                                                "title": "LLM sizing: the formulas"}, request=request)
    return Response.html(html)


@hookimpl
def register_routes():
    return [(r"^/-/methodology$", methodology), (r"^/-/sizing-formulas$", sizing_formulas)]


@hookimpl
def menu_links(datasette):
    return [{"href": datasette.urls.path("/-/methodology"), "label": "Methodology: what the numbers mean"}]
