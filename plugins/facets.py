"""A cheaper array facet for tag columns (JSON arrays of slugs).

Datasette 0.65's array facet counts `distinct j.value, inner.*` over whole rows,
summaries and notes included, which dominates the article pages once there
are thousands of rows. Narrowing the inner query to the primary key and the
faceted columns keeps every row distinct and gives the same counts.
"""

from datasette import hookimpl
from datasette.facets import ArrayFacet
from datasette.utils import escape_sqlite


class TagsFacet(ArrayFacet):
    type = "tags"

    async def suggest(self):
        return []  # configured in metadata, never suggested

    async def facet_results(self):
        columns = [c["config"].get("column") or c["config"]["simple"] for c in self.get_configs()]
        if columns and self.table:
            keys = await self.ds.get_database(self.database).primary_keys(self.table)
            if keys:  # tables without a primary key keep Datasette's own query
                selected = ", ".join(escape_sqlite(c) for c in keys + columns)
                self.sql = f"select {selected} from ({self.sql})"
        return await super().facet_results()


@hookimpl
def register_facet_classes():
    return [TagsFacet]
