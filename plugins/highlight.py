"""Show the <mark> highlights of full-text search snippets, and nothing else, as HTML.

SQLite's snippet() and highlight() wrap matches in <mark>; Datasette escapes cell
values, so the tags would show as text. The value is escaped first and only the
exact <mark> / </mark> pairs are put back, so a summary can never inject markup.
"""

from datasette import hookimpl
from markupsafe import Markup, escape

# Columns of the search-articles query. render_cell is not told which query a
# cell belongs to, so any query's column of that name gets the same treatment:
# harmless, since only literal <mark> pairs are restored.
HIGHLIGHT_COLUMNS = {"snippet", "title"}


def with_marks(value):
    escaped = str(escape(value))
    return Markup(escaped.replace("&lt;mark&gt;", "<mark>").replace("&lt;/mark&gt;", "</mark>"))


@hookimpl
def render_cell(value, column, table):
    if table is not None or column not in HIGHLIGHT_COLUMNS or not isinstance(value, str):
        return None
    if "<mark>" not in value:
        return None
    return with_marks(value)
