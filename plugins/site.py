"""What every template is given: the name of the knowledge base's database, the site's metadata
(`kb_metadata`: license and source for the footer), and links to the page itself.

Templates link to its tables (`urls.table(kb_database, "accelerators")`); the
name is the one constant of serving/metadata.py, so templates never spell it.
`page_with(changes)` is the current page with some query-string arguments set
or removed (sort links, "All columns"): made here from the request, since the
helpers for it in Datasette 0.65's table context are not in 1.0's.
"""

import urllib.parse

from datasette import hookimpl

from serving.metadata import DATABASE
from serving.site import site_metadata_keys


def page_with(datasette, request, changes):
    """`request`'s page with each argument of `changes` set to its value, or removed where the value is None;
    the other arguments keep their order."""
    kept = [(k, v) for k, v in urllib.parse.parse_qsl(request.query_string, keep_blank_values=True) if k not in changes]
    added = [(k, v) for k, v in changes.items() if v is not None]
    query = urllib.parse.urlencode(kept + added)
    return datasette.urls.path(request.path) + (f"?{query}" if query else "")


def no_rows_message(request):
    """The `no_rows` message of the canned query a page shows (metadata.yml), or None.

    Read from the project's metadata: Datasette 1.0 leaves out of a query page's
    context the keys of a query it does not know itself."""
    name = request.url_vars.get("table") if request else None
    queries = site_metadata_keys()["databases"][DATABASE].get("queries") or {}
    return (queries.get(name) or {}).get("no_rows")


@hookimpl
def extra_template_vars(datasette, request):
    return {"kb_database": DATABASE, "kb_metadata": site_metadata_keys(), "kb_no_rows": no_rows_message(request),
            "page_with": (lambda changes: page_with(datasette, request, changes)) if request else None}
