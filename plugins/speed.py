"""The tag facet (tag columns are JSON arrays of slugs), and the serving speed-ups, switched by serving/speedups.py.

With the speed-ups off, the tag facet is Datasette's own array facet under the
name `tags` (the metadata's facets ask for it by that name), and the rest of
this module is left out.

Datasette 0.65's array facet counts `distinct j.value, inner.*` over whole rows,
so that a row listing a tag twice counts once; the de-duplication is most of
the cost of an articles page. Our
tag columns hold distinct sorted slugs (etl/transform.py), so each (row, tag)
pair occurs once: counting the pairs gives the same result with no
de-duplication, and reads only the tag column.

A page filtered only on equal values of the table's other facet columns (the
links of its facets: `?language=fr`, `?site=x&category=y`) counts its tags in
the table's tag counts (domain/schema.py, TAG_COUNTS) instead, without reading
its rows. Any other argument that
changes which rows are counted (search, other filters, the next page) counts
the rows.

Datasette also counts a facet twice when a link asks for one the table shows by
default (`?_facet=category` where category is a default facet), and shows it
twice (`category_2`); such arguments are dropped before Datasette sees them.
"""

import asyncio
from urllib.parse import parse_qsl, urlencode

from datasette import hookimpl, hookspecs
from datasette.database import QueryInterrupted
from datasette.facets import ArrayFacet
from datasette.utils import escape_sqlite, path_with_added_args, path_with_removed_args, tilde_encode

from domain.schema import TAG_COUNTS
from serving import speedups
from serving.hooked_metadata import hooked_metadata
from serving.metadata import DATABASE, generated_metadata
from serving.query_args import as_filter

COUNT_SQL = """
select j.value as value, count(*) as count
from (select {column} from ({sql})) t, json_each(t.{column}) j
group by j.value order by count desc, value limit {limit}
"""
TAG_COUNTS_SQL = """
select tag as value, sum(rows) as count from {table} where tag_column = :tag_column{where}
group by tag order by count desc, value limit {limit}
"""
# Datasette's own arguments that leave the counted rows as they are.
SAME_ROWS_ARGS = {"_sort", "_sort_desc", "_size", "_col", "_nocol", "_labels", "_nolabels", "_nocount", "_extra",
                  "_nosuggest", "_shape", "_json", "_nl", "_trace"}


def equality_filters(pairs, dimensions):
    """The (column, value) filters of a table page's query string `pairs`, when each
    is an equality on one of `dimensions` and no other argument changes which rows
    are counted; else None.

    Datasette reads `column=value` and `column__exact=value` as `column = value`.
    """
    filters = []
    for key, value in pairs:
        argument = as_filter(key, value)
        if argument is None:
            if key in SAME_ROWS_ARGS or key == "_facet" or key.startswith("_facet_"):
                continue
            return None  # ?_search=, ?_where=, ?_next= (the rows after a key), ...
        if argument.lookup != "exact" or argument.column not in dimensions:
            return None
        filters.append((argument.column, value))
    return filters


class TagsFacet(ArrayFacet):
    """Datasette's array facet, named for the metadata and never suggested."""

    type = "tags"

    async def suggest(self):
        return []  # configured in metadata, never suggested


class FastTagsFacet(TagsFacet):
    """The same counts as TagsFacet, sooner: pairs rather than distinct rows, from the tag counts when it can."""

    async def facet_results(self):
        # The tag columns are counted at the same time, on Datasette's query threads
        # (SQLite lets go of the GIL while it counts): one tag facet's time, not the sum.
        # Datasette 0.65 runs its own queries one at a time since a hang with named
        # in-memory databases (simonw/datasette#2189); tag facets are configured only
        # for tables of the computekb file, served through the thread pool.
        columns = [(c["config"].get("column") or c["config"]["simple"], c["source"]) for c in self.get_configs()]
        counts = await asyncio.gather(*(self.count(column, source) for column, source in columns),
                                      return_exceptions=True)
        results, timed_out = [], []
        for (column, _), count in zip(columns, counts):
            if isinstance(count, QueryInterrupted):
                timed_out.append(column)
            elif isinstance(count, BaseException):
                raise count
            else:
                results.append(count)
        return results, timed_out

    async def count_query(self, column, limit):
        """SQL and parameters counting the tags of `column`: from the table's tag counts when the page allows, else from its rows."""
        name = f"{self.table}_tag_counts"
        counts = TAG_COUNTS.get(name) if self.database == DATABASE else None
        if counts and column in counts.tags and await self.ds.get_database(self.database).table_exists(name):
            filters = equality_filters(self.get_querystring_pairs(), counts.dimensions)
            if filters is not None:
                where = "".join(f" and {escape_sqlite(c)} = :f{i}" for i, (c, _) in enumerate(filters))
                params = {"tag_column": column, **{f"f{i}": value for i, (_, value) in enumerate(filters)}}
                return TAG_COUNTS_SQL.format(table=escape_sqlite(name), where=where, limit=limit), params
        return COUNT_SQL.format(column=escape_sqlite(column), sql=self.sql, limit=limit), self.params

    async def count(self, column, source):
        """One facet's result, in the shape of Datasette's array facet."""
        size = self.get_facet_size()
        sql, params = await self.count_query(column, size + 1)
        rows = await self.ds.execute(self.database, sql, params, truncate=False,
                                     custom_time_limit=self.ds.setting("facet_time_limit_ms"))
        pairs = self.get_querystring_pairs()
        filter_key = f"{column}__arraycontains"
        values = []
        for row in rows.rows[:size]:
            value = str(row["value"])
            selected = (filter_key, value) in pairs
            toggle = path_with_removed_args if selected else path_with_added_args
            values.append({"value": value, "label": value, "count": row["count"], "selected": selected,
                           "toggle_url": self.ds.absolute_url(self.request, toggle(self.request, {filter_key: value}))})
        return {"name": column, "type": self.type, "results": values, "hideable": source != "metadata",
                "toggle_url": self.ds.urls.path(path_with_removed_args(self.request, {f"_facet_{self.type}": column})),
                "truncated": len(rows) > size}


@hookimpl
def register_facet_classes():
    return [FastTagsFacet if speedups.enabled() else TagsFacet]


def default_facets(metadata):
    """{table page path: {(facet type, column)}} of the tables with default facets."""
    defaults = {}
    for database, database_meta in (metadata.get("databases") or {}).items():
        for table, table_meta in (database_meta.get("tables") or {}).items():
            facets = {("column", f) if isinstance(f, str) else next(iter(f.items())) for f in table_meta.get("facets") or []}
            if facets:
                defaults[f"/{tilde_encode(database)}/{tilde_encode(table)}"] = facets
    return defaults


def without_repeated_facets(query_string, defaults):
    """`query_string` without the `_facet` arguments that ask for a facet in `defaults` or asked for earlier."""
    pairs, seen, dropped = [], set(defaults), False
    for key, value in parse_qsl(query_string, keep_blank_values=True):
        if key == "_facet" or key.startswith("_facet_") and key != "_facet_size":
            facet = ("column" if key == "_facet" else key[len("_facet_"):], value)
            if facet in seen:
                dropped = True
                continue
            seen.add(facet)
        pairs.append((key, value))
    return urlencode(pairs) if dropped else query_string


@hookimpl
def asgi_wrapper():
    if not speedups.enabled():
        return None
    pages = default_facets(generated_metadata())

    def wrap(app):
        async def deduplicated(scope, receive, send):
            query = scope.get("query_string", b"")
            if scope["type"] == "http" and b"_facet" in query:
                path = scope["path"]
                defaults = pages.get(path) or pages.get(path.rsplit(".", 1)[0]) or set()
                scope = dict(scope, query_string=without_repeated_facets(query.decode("latin-1"), defaults).encode("latin-1"))
            await app(scope, receive, send)
        return deduplicated
    return wrap


# Datasette 1.0 has no such hook (its plugin settings are configuration): defined where Datasette calls it.
if hasattr(hookspecs, "get_metadata"):
    @hookimpl
    def get_metadata(key):
        """The dashboards' configuration, for the lookups of plugin settings (serving/hooked_metadata.py)."""
        return hooked_metadata(key)
