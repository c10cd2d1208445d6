"""What the reader pages' `extra_template_vars` hooks share: which row page a request is, and its row read once."""

from datasette.utils import urlsafe_components

from serving.metadata import DATABASE


def is_row_page(view_name: str, database: str, table: str | None, wanted: str) -> bool:
    """Whether the page is the row page of the table `wanted` of this knowledge base."""
    return view_name == "row" and database == DATABASE and table == wanted


def row_slug(request) -> str:
    return urlsafe_components(request.url_vars["pks"])[0]


def row_page_vars(datasette, request, read, make):
    """An `extra_template_vars` hook's answer for a row page: `read(conn, slug)` runs in Datasette's query
    thread, then `make(slug, data)` gives the template's variables (awaited when it is a coroutine)."""
    async def inner():
        slug = row_slug(request)
        data = await datasette.get_database(DATABASE).execute_fn(lambda conn: read(conn, slug))
        made = make(slug, data)
        return await made if hasattr(made, "__await__") else made
    return inner
