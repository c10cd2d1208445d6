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

from serving.paths import DATA_DOC, SIZING_DOC

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


PAGES = {  # route: (title, document, what it is, its HTML)
    "methodology": ("Methodology", "docs/DATA.md", "The rules every value of this knowledge base follows",
                    methodology_html),
    "sizing-formulas": ("LLM sizing: the formulas", "docs/LLM_MATH.md", "How the sizing pages and queries count",
                        sizing_html),
}


async def document_page(request, datasette):
    title, doc, intro, html_of = PAGES[request.url_vars["page"]]
    context = {"methodology": html_of(), "doc": doc, "title": title, "intro": intro}
    return Response.html(await datasette.render_template("methodology.html", context, request=request))


@hookimpl
def register_routes():
    return [(r"^/-/(?P<page>methodology|sizing-formulas)$", document_page)]


@hookimpl
def menu_links(datasette):
    return [{"href": datasette.urls.path("/-/methodology"), "label": "Methodology: what the numbers mean"}]
