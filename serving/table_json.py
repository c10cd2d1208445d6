"""Datasette's JSON of a table page, asked for and read the same way on Datasette 0.65 and 1.0.

1.0 gives the row count, the facets and the filters' description only when asked
(`_extra=count`, `_extra=facet_results`, `_extra=human_description_en`), names
the count `count` and puts the facets under `facet_results.results`; 0.65 ignores
`_extra`, names the count `filtered_table_rows_count` and keys `facet_results`
by column. Pages and tests read the answer through these functions only.
"""

EXTRAS = [("_extra", "count"), ("_extra", "facet_results"), ("_extra", "human_description_en")]


def row_count(data: dict) -> int | None:
    """The number of rows the page's filters select."""
    return data["count"] if "count" in data else data.get("filtered_table_rows_count")


def facet_results(data: dict) -> dict:
    """The facets of the page, by column: each `{"results": [{"value", "label", "count", ...}], "truncated", ...}`."""
    facets = data.get("facet_results") or {}
    return facets["results"] if isinstance(facets.get("results"), dict) else facets
EXTRAS_QUERY = "&".join(f"{key}={value}" for key, value in EXTRAS)  # the same, for a URL written out
