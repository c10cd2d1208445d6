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


@hookimpl
def extra_template_vars(datasette, request):
    return {"kb_database": DATABASE, "kb_metadata": site_metadata_keys(),
            "page_with": (lambda changes: page_with(datasette, request, changes)) if request else None}
