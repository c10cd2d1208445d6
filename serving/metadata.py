"""Datasette metadata: the hand-written metadata.yml plus what schema.py defines.

Column descriptions, facets, sortable and label columns are generated
from the field definitions, so they are never kept twice by hand. Anything set
in metadata.yml for a table wins over the generated value.
"""

import hashlib
from pathlib import Path
from typing import NamedTuple

import yaml

from domain.schema import DENSE_COLUMNS, GENERATED, TABLES, TAG_COUNTS, link_table_name, singular
from serving import what_fits

DATABASE = "computekb"       # the one name of the database, in every URL and plugin
DATABASE_FILE = f"{DATABASE}.db"  # Datasette names a database after its file
# Units shown with their values (plugins/units.py); money stays a plain number
# (pint would print 1999 USD as "1.999 kUSD").
DISPLAY_UNITS = {"GB", "GB/s", "W", "TFLOPS"}
SORTABLE_KINDS = {"slug", "ref", "int", "number", "quantity", "date", "text", "enum", "bool"}


def table_metadata(table):
    """Generated metadata of one table."""
    columns = table.columns
    meta = {
        "description": table.description,
        "label_column": table.label,
        "columns": {f.name: describe(f) for f in columns},
        "sortable_columns": [f.name for f in columns if f.kind in SORTABLE_KINDS],
        "facets": [{"tags": f.name} if f.kind == "list" else f.name for f in columns
                   if (f.name in table.page_facets if table.page_facets else f.facet)],
    }
    if table.sort_desc:
        meta["sort_desc"] = table.sort_desc
    if table.sort:
        meta["sort"] = table.sort
    return meta


def describe(field):
    unit = f" Unit: {field.unit}." if field.unit else ""
    ref = f" References {field.ref}." if field.kind == "ref" else ""
    return field.description + unit + ref


def link_tables_metadata():
    meta = {}
    for table in TABLES:
        for field in table.fields:
            if field.kind == "refs":
                left, right = singular(table.name), singular(field.ref)
                meta[link_table_name(table, field)] = {
                    "description": f"Links {table.name} to {field.ref}: {field.description}",
                    "facets": [right],
                    "columns": {left: f"The {left} slug.", right: f"The {right} slug."},
                }
    return meta


def tag_counts_metadata():
    """The tables behind the tag facets: hidden from the table lists, open to SQL."""
    meta = {}
    for name, counts in TAG_COUNTS.items():
        columns = {"tag_column": f"The tag column counted: {', '.join(counts.tags)}.",
                   "tag": "A tag of that column.", "rows": f"Rows of {counts.table} with this tag and these values."}
        meta[name] = {
            "description": f"What the tag facets of {counts.table} count: its rows per tag and per combination "
                           f"of {', '.join(counts.dimensions)}.",
            "hidden": True,
            "columns": {**columns, **{d: f"As in {counts.table}.{d}." for d in counts.dimensions}},
        }
    return meta


def dense_throughput_metadata():
    """The view's columns, one measure each: a precision on one engine, dense, in TFLOPS or TOPS."""
    integer = " (integer operations: never compared with a floating-point column)"
    columns = {c.name: f"Dense peak {c.precision} on {c.engine} units, in {c.unit}"
                       f"{integer if c.unit == 'TOPS' else ''}, for the row's scope; null when no dense figure is stored."
               for c in DENSE_COLUMNS}
    return {"dense_throughput": {
        "description": "Every accelerator with its dense peak throughput, one column per precision and engine "
                       "(matrix: tensor/matrix units; vector: vector/SIMT units). Rows with no dense figure show nulls.",
        "columns": {"accelerator": "The accelerator slug.", "scope": "What the accelerator row counts.", **columns},
    }}


def generated_metadata():
    tables = {t.name: table_metadata(t) for t in TABLES + GENERATED}
    tables.update(link_tables_metadata())
    tables.update(tag_counts_metadata())
    tables.update(dense_throughput_metadata())
    queries = {"what-fits": {"sql": what_fits.CANNED}}  # its title, description and parameters: metadata.yml
    return {"databases": {DATABASE: {"tables": tables, "queries": queries}}}


def merge(base, override):
    """Recursive dict merge; values of `override` win."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


ASSETS = "/assets/"  # where metadata.yml's own CSS and scripts are served (the `static/` folder beside it)


def versioned(url, static_dir):
    """`/assets/reader.css?v=<hash>`: the URL of one version of the file, cacheable for a year."""
    if not url.startswith(ASSETS):
        return url
    digest = hashlib.sha256((Path(static_dir) / url.removeprefix(ASSETS)).read_bytes()).hexdigest()[:10]
    return f"{url}?v={digest}"


def with_versioned_assets(metadata, static_dir):
    """CSS and scripts at versioned URLs; the project's scripts as modules, which run after the page is parsed."""
    css = [versioned(url, static_dir) for url in metadata.get("extra_css_urls", [])]
    js = [{"url": versioned(url, static_dir), "module": True} if url.startswith(ASSETS) else url
          for url in metadata.get("extra_js_urls", [])]
    return {**metadata, "extra_css_urls": css, "extra_js_urls": js}


def full_metadata(metadata_yml):
    hand_written = yaml.safe_load(Path(metadata_yml).read_text(encoding="utf-8")) or {}
    return with_versioned_assets(merge(generated_metadata(), hand_written), Path(metadata_yml).parent / "static")


# What Datasette 1.0 reads from its configuration (`config=`, datasette.yaml) rather than from the
# metadata: at the top, per database and per table. Datasette 0.65 reads all of it from the metadata.
CONFIG_KEYS = {"plugins", "settings", "permissions", "allow", "allow_sql", "extra_css_urls", "extra_js_urls"}
CONFIG_DATABASE_KEYS = {"queries", "allow", "allow_sql", "permissions"}
CONFIG_TABLE_KEYS = {"facets", "sort", "sort_desc", "size", "sortable_columns", "label_column", "hidden",
                     "fts_table", "fts_pk", "searchmode", "allow", "permissions"}


class Split(NamedTuple):
    config: dict
    metadata: dict


def split_configuration(metadata: dict) -> Split:
    """The merged metadata as Datasette 1.0 takes it: configuration and metadata apart, every key in one of them."""
    def part(mapping, keys):
        return ({k: v for k, v in mapping.items() if k in keys}, {k: v for k, v in mapping.items() if k not in keys})

    config, rest = part(metadata, CONFIG_KEYS)
    if "databases" in metadata:
        config["databases"], rest["databases"] = {}, {}
    for name, database in (metadata.get("databases") or {}).items():
        db_config, db_rest = part(database, CONFIG_DATABASE_KEYS)
        tables = {t: part(table, CONFIG_TABLE_KEYS) for t, table in (database.get("tables") or {}).items()}
        if "tables" in database:
            db_config["tables"] = {t: c for t, (c, _) in tables.items() if c}
            db_rest["tables"] = {t: m for t, (_, m) in tables.items() if m}
        config["databases"][name], rest["databases"][name] = db_config, db_rest
    return Split(config, rest)
