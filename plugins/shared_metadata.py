"""Let Datasette share the metadata instead of deep-copying it on every check.

Datasette 0.65 deep-copies every metadata source each time it checks a table
permission (`Datasette._table_permission_allows`), several times per page: 60
copies on an accelerator row page, 800 on the database page. Our metadata is
large (a description for every column, the dashboards), so those copies cost
more than rendering some pages. At startup the metadata is turned into
read-only dicts and lists whose deep copy is themselves: nothing can change
them, so sharing is safe.

Datasette itself writes into the metadata on some pages: it fills in the
inherited source and license of the database and table dicts it renders, and
adds a `name` key to each canned query. The inherited values are filled in
here once, so that its later writes change nothing, and a read-only dict
accepts a write that changes nothing (any other raises TypeError). Canned
queries stay ordinary dicts.
"""

from functools import lru_cache

from datasette import hookimpl

from etl.read_only import read_only

# What Datasette.update_with_inherited_metadata writes into database and table metadata.
INHERITED = ("source", "source_url", "license", "license_url", "about", "about_url")
MUTABLE_KEYS = {"queries"}  # canned queries: Datasette adds a `name` to each


def with_inherited(metadata):
    """`metadata` with the values Datasette would fill in already in each database and table dict."""
    def inherit(level):
        return {**level, **{key: level.get(key) or metadata.get(key) for key in INHERITED}}

    databases = {}
    for name, database in (metadata.get("databases") or {}).items():
        tables = {table: inherit(table_metadata) for table, table_metadata in (database.get("tables") or {}).items()}
        databases[name] = {**inherit(database), "tables": tables}
    return {**metadata, "databases": databases}


@hookimpl
def startup(datasette):
    # The metadata given with -m or Datasette(metadata=...); no public setter in 0.65.
    datasette._metadata_local = read_only(with_inherited(datasette._metadata_local), MUTABLE_KEYS)
    # A table's `allow` rules come from the metadata alone, which can no longer
    # change: work them out once per table rather than on every check. Bounded,
    # as table names come from URLs.
    datasette._table_permission_allows = lru_cache(maxsize=1024)(datasette._table_permission_allows)
    datasette.metadata = remembered_lookups(datasette.metadata)


def remembered_lookups(lookup):
    """Datasette.metadata, remembering the answer of each lookup by key.

    Each lookup merges the metadata sources again (`plugin_config()`, which some
    plugins call for every cell, is one). An answer is a value of the metadata
    itself, which no longer changes, so it is the same every time. Lookups
    without a key return a new merged dict that a caller may change: not kept.
    """
    remembered = lru_cache(maxsize=4096)(lambda key, database, table, fallback: lookup(key, database, table, fallback))

    def metadata(key=None, database=None, table=None, fallback=True):
        if key is None:
            return lookup(key, database, table, fallback)
        return remembered(key, database, table, fallback)
    return metadata
