"""Transform stage: validated rows into the rows of every table, derived columns included.

Everything computed from the data happens here, once, so the database holds it
as plain columns: display labels, translation links, link tables, FP4 support,
price per GPU-hour and the citation of every number.
"""

import json
from collections import defaultdict

from .schema import TABLES, TABLES_BY_NAME

DERIVED_LABEL_LENGTH = 90
DERIVED_MARK = " [label derived from summary]"

# How a citation counts when the data does not say: by what kind of page the source is.
CITATION_KIND_BY_SOURCE = {
    "vendor-datasheet": "vendor-spec", "vendor-page": "vendor-spec", "vendor-blog": "vendor-spec",
    "spec": "vendor-spec", "benchmark": "measured",
}


def derived_label(summary):
    """A short label cut from the summary at a word boundary, visibly marked."""
    if len(summary) <= DERIVED_LABEL_LENGTH:
        return summary + DERIVED_MARK
    cut = summary[:DERIVED_LABEL_LENGTH].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + "…" + DERIVED_MARK


def add_article_columns(articles):
    by_key = defaultdict(list)
    for article in articles:
        if article["translation_key"]:
            by_key[article["translation_key"]].append(article)
    for article in articles:
        article["label"] = article["title"] or derived_label(article["summary"])
        article["label_derived"] = article["title"] is None
        others = [a["slug"] for a in by_key.get(article["translation_key"], []) if a["language"] != article["language"]]
        article["translation"] = others[0] if len(others) == 1 else None
        # The link tables are for joins; these arrays let Datasette facet on tags.
        article["accelerator_tags"] = sorted(set(article["accelerators"] or []))
        article["topic_tags"] = sorted(set(article["topics"] or []))


def add_fp4_formats(accelerators, format_support, number_formats):
    """fp4_formats lists the natively supported formats of the FP4 family."""
    family = {f["slug"]: f["family"] or f["slug"] for f in number_formats}
    supported = defaultdict(list)
    for claim in format_support:
        if family.get(claim["format"]) == "fp4":
            supported[claim["accelerator"]].append(claim["format"])
    for accelerator in accelerators:
        accelerator["fp4_formats"] = sorted(supported[accelerator["slug"]])


def add_price_per_gpu_hour(offers):
    for offer in offers:
        offer["price_per_gpu_hour"] = round(offer["price_per_hour"] / offer["gpu_count"], 6)


def link_rows(tables):
    """Link tables from `refs` fields, e.g. article_accelerators(article, accelerator)."""
    links = {}
    for table in TABLES:
        for field in table.fields:
            if field.kind == "refs":
                name = link_table_name(table, field)
                links[name] = [{singular(table.name): row["slug"], singular(field.ref): target}
                               for row in tables[table.name] for target in sorted(set(row[field.name] or []))]
    return links


def singular(table_name):
    return table_name[:-1] if table_name.endswith("s") else table_name


def link_table_name(table, field):
    return f"{singular(table.name)}_{field.name}"


def default_citation_kind(source, vendor_names):
    """A page published by a hardware vendor states a vendor spec, whatever its format."""
    if source["publisher"] in vendor_names:
        return "vendor-spec"
    if source["article"]:  # one of the catalogued articles
        return "article-claim"
    return CITATION_KIND_BY_SOURCE.get(source["kind"], "third-party")


def citation_rows(citations, sources, vendors):
    vendor_names = {v["name"] for v in vendors}
    default_kind = {s["slug"]: default_citation_kind(s, vendor_names) for s in sources}
    rows = []
    for c in citations:
        value = c.value if isinstance(c.value, (int, float)) else None
        rows.append({
            "slug": f"{c.table.replace('_', '-')}-{c.row}-{c.field.replace('_', '-')}",
            "table_name": c.table, "row_slug": c.row, "field": c.field,
            "value": value, "as_written": None if c.as_written is None else str(c.as_written),
            "unit": TABLES_BY_NAME[c.table].field(c.field).unit,
            "source": c.source,
            "kind": c.kind or default_kind[c.source],
            "note": c.note,
        })
    return rows


def to_json_columns(tables):
    """Lists become JSON arrays, always written with json.dumps."""
    for table in TABLES:
        lists = [f.name for f in table.columns if f.kind == "list"]
        for row in tables[table.name]:
            for name in lists:
                if row.get(name) is not None:
                    row[name] = json.dumps(row[name], ensure_ascii=False)


def transform(rows, citations):
    """Return {table name: [row dicts]} for every table, link and citation table."""
    tables = {t.name: [] for t in TABLES}
    for row in sorted(rows, key=lambda r: (r.table, r.slug)):
        tables[row.table].append(dict(row.values))
    add_article_columns(tables["articles"])
    add_fp4_formats(tables["accelerators"], tables["format_support"], tables["number_formats"])
    add_price_per_gpu_hour(tables["cloud_offers"])
    links = link_rows(tables)
    to_json_columns(tables)
    tables.update(links)
    tables["citations"] = sorted(citation_rows(citations, tables["sources"], tables["vendors"]), key=lambda r: r["slug"])
    return tables
