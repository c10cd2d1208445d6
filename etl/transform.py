"""Transform stage: validated rows into the rows of every table, derived columns included.

Everything computed from the data happens here, once, so the database holds it
as plain columns: display labels, translation links, link tables, FP4 support,
price per GPU-hour and the citation of every number.

Most of it depends on one row alone and is done file by file (`file_tables`:
cached with the file and run by the processes that read it). Three columns
depend on rows of other files: an article's translation, an accelerator's FP4
formats and a citation's default kind. `cross_file_columns` fills them once
every file is staged (see load.Stage).
"""

import json
from collections import defaultdict
from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

from .schema import GENERATED, TABLES, TABLES_BY_NAME

DERIVED_LABEL_LENGTH = 90
DERIVED_MARK = " [label derived from summary]"
ADDRESS_MARK = " [title not known: label from the address]"

# How a citation counts when the data does not say: by what kind of page the source is.
CITATION_KIND_BY_SOURCE = {
    "vendor-datasheet": "vendor-spec", "vendor-page": "vendor-spec", "vendor-blog": "vendor-spec",
    "spec": "vendor-spec", "benchmark": "measured",
}


def singular(table_name):
    return table_name.removesuffix("s")


def link_table_name(table, field):
    return f"{singular(table.name)}_{field.name}"


# Column order of every table, as load.py creates them.
COLUMNS = {t.name: [f.name for f in t.columns] for t in TABLES + GENERATED}
# Link tables (article_accelerators...) by the table and `refs` field they come from.
LINKS = {link_table_name(t, f): (t.name, f.name) for t in TABLES for f in t.fields if f.kind == "refs"}
COLUMNS.update({link: [singular(table), singular(TABLES_BY_NAME[table].field(field).ref)]
                for link, (table, field) in LINKS.items()})


class TagCounts(NamedTuple):
    """A table of counts behind the tag facets of `table` (read by plugins/facets.py)."""

    table: str
    tags: list        # its tag columns: JSON arrays of distinct slugs, faceted
    dimensions: list  # its other facet columns but dates, which have few values each


def tag_counts(table):
    facets = [f for f in table.columns if f.facet]
    return TagCounts(table.name, [f.name for f in facets if f.kind == "list"],
                     [f.name for f in facets if f.kind not in ("list", "date")])


# Rows per tag and per combination of the other facet values, by table name: a
# faceted page filtered on those values counts its tags here, not row by row.
TAG_COUNTS = {f"{t.name}_tag_counts": tag_counts(t) for t in TABLES if any(f.facet and f.kind == "list" for f in t.columns)}
COLUMNS.update({name: ["tag_column", "tag", *counts.dimensions, "rows"] for name, counts in TAG_COUNTS.items()})
# What file_tables writes of each table: its columns, then its `refs` fields as
# JSON arrays of distinct sorted slugs, from which load.py fills the link tables.
REFS = {t.name: [f.name for f in t.fields if f.kind == "refs"] for t in TABLES}
STAGED = {name: COLUMNS[name] + REFS.get(name, []) for name in [t.name for t in TABLES] + ["citations"]}
LIST_COLUMNS = {t.name: [f.name for f in t.columns if f.kind == "list"] for t in TABLES}
UNITS = {t.name: {f.name: f.unit for f in t.fields + t.derived} for t in TABLES}

# Lists become JSON arrays, always written this way: json.dumps(value, ensure_ascii=False),
# without building a new encoder for every value as json.dumps does with that option.
to_json = json.JSONEncoder(ensure_ascii=False).encode


def derived_label(summary):
    """A short label cut from the summary at a word boundary, visibly marked."""
    if len(summary) <= DERIVED_LABEL_LENGTH:
        return summary + DERIVED_MARK
    cut = summary[:DERIVED_LABEL_LENGTH].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + "…" + DERIVED_MARK


def address_label(url):
    """A source's label when its title is not known: its address without the scheme, visibly marked."""
    return url.split("://", 1)[-1].rstrip("/") + ADDRESS_MARK


def add_source_columns(source):
    source["label"] = source["title"] or address_label(source["url"])
    source["label_derived"] = source["title"] is None


def add_article_columns(article):
    article["label"] = article["title"] or derived_label(article["summary"])
    article["label_derived"] = article["title"] is None
    # The link tables are for joins; these arrays let Datasette facet on tags.
    article["accelerator_tags"] = sorted(set(article["accelerators"] or []))
    article["topic_tags"] = sorted(set(article["topics"] or []))


def add_price_per_gpu_hour(offer):
    offer["price_per_gpu_hour"] = round(offer["price_per_hour"] / offer["gpu_count"], 6)


ROW_COLUMNS = {"sources": add_source_columns, "articles": add_article_columns, "cloud_offers": add_price_per_gpu_hour}


def dashed(name):
    return name.replace("_", "-")


# With one hyphen between row and field, ("acme-z", addressable_memory_gb) and
# ("acme-z-addressable", memory_gb) would share the slug
# accelerators-acme-z-addressable-memory-gb. A field whose dashed name ends with
# another field's takes two hyphens, which no slug contains, so no two (table,
# row, field) share a slug; every other citation keeps the slug it was
# published with (plugins/citation_redirects.py redirects the old form).
SUFFIXED_FIELDS = {t.name: frozenset(f.name for f in t.fields
                                     if any(dashed(f.name).endswith("-" + dashed(g.name)) for g in t.fields))
                   for t in TABLES}


def citation_slug(table, row, field):
    separator = "--" if field in SUFFIXED_FIELDS.get(table, ()) else "-"
    return f"{dashed(table)}-{row}{separator}{dashed(field)}"


def citation_row(c):
    """The citations row of one citation; `kind` stays None when the data does not give it."""
    value = c.value if isinstance(c.value, (int, float)) else None
    row = {
        "slug": citation_slug(c.table, c.row, c.field),
        "table_name": c.table, "row_slug": c.row, "field": c.field,
        "value": value, "as_written": None if c.as_written is None else str(c.as_written),
        "unit": UNITS[c.table][c.field], "source": c.source, "kind": c.kind, "note": c.note,
    }
    return tuple(map(row.get, COLUMNS["citations"]))



def file_tables(rows, citations):
    """{table: [row tuples as STAGED]}: what one file's rows add to every table,
    citations included. The columns that depend on other files are None until
    `cross_file_columns`."""
    tables = defaultdict(list)
    for row in rows:
        values = dict(row.values)
        if row.table in ROW_COLUMNS:
            ROW_COLUMNS[row.table](values)
        for name in REFS[row.table]:
            values[name] = to_json(sorted(set(values[name] or [])))
        for name in LIST_COLUMNS[row.table]:
            if values.get(name) is not None:
                values[name] = to_json(values[name])
        tables[row.table].append(tuple(map(values.get, STAGED[row.table])))
    if citations:
        tables["citations"] = [citation_row(c) for c in citations]
    return dict(tables)


def translations(articles):
    """(slug, translation) for articles whose translation key has exactly one
    version in another language; `articles` gives (translation_key, slug,
    language), grouped by key."""
    for _, group in groupby(articles, key=itemgetter(0)):
        versions = list(group)
        for _, slug, language in versions:
            others = [other for _, other, other_language in versions if other_language != language]
            if len(others) == 1:
                yield slug, others[0]


def fp4_formats(accelerators, format_support, number_formats):
    """(accelerator, JSON array of the natively supported formats of the FP4 family), for every accelerator."""
    family = {slug: name or slug for slug, name in number_formats}
    supported = defaultdict(list)
    for accelerator, fmt in format_support:
        if family.get(fmt) == "fp4":
            supported[accelerator].append(fmt)
    for (slug,) in accelerators:
        yield slug, to_json(sorted(supported[slug]))


def default_citation_kind(publisher, article, kind, vendor_names):
    """A page published by a hardware vendor states a vendor spec, whatever its format."""
    if publisher in vendor_names:
        return "vendor-spec"
    if article:  # one of the catalogued articles
        return "article-claim"
    return CITATION_KIND_BY_SOURCE.get(kind, "third-party")


def cross_file_columns(stage):
    """Set the columns that depend on rows of other files, once every file is staged."""
    articles = stage.select("articles", ("translation_key", "slug", "language"), order_by=("translation_key", "slug"))
    stage.set_column("articles", "translation", translations(row for row in articles if row[0]))
    stage.set_column("accelerators", "fp4_formats", fp4_formats(
        stage.select("accelerators", ("slug",)), stage.select("format_support", ("accelerator", "format")),
        list(stage.select("number_formats", ("slug", "family")))))
    vendor_names = {name for (name,) in stage.select("vendors", ("name",))}
    kinds = ((slug, default_citation_kind(*source, vendor_names))
             for slug, *source in stage.select("sources", ("slug", "publisher", "article", "kind")))
    stage.set_column("citations", "kind", kinds, key="source", only_null=True)
