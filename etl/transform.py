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

from . import sizing
from .schema import GENERATED, TABLES, TABLES_BY_NAME, TIERS

DERIVED_LABEL_LENGTH = 90
DERIVED_MARK = " [label derived from summary]"
ADDRESS_MARK = " [title not known: label from the address]"

# How a citation counts when the data does not say: by the authority of its source.
CITATION_KIND_BY_TIER = {
    "vendor-primary": "vendor-spec", "vendor-secondary": "vendor-spec",
    "independent-measurement": "measured", "third-party": "third-party", "aggregator": "third-party",
}
# The capability columns derived from format_support and throughput, by precision family.
CAPABILITY_FAMILIES = {"native_fp8": "fp8", "native_fp4": "fp4"}
# What a throughput figure in the FP4 family says of the format when no format claim names it.
FP4_NOT_STATED = "fp4"


def singular(table_name):
    return table_name[:-1] if table_name.endswith("s") else table_name


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


def add_model_parameters(model):
    """Parameter counts computed from the config fields, and those fields as
    the JSON argument of the sizing SQL functions."""
    architecture = sizing.Architecture.from_row(model)
    counts = sizing.parameters(architecture)
    model["computed_params_b"] = round(counts.total / 1e9, 4)
    model["computed_active_params_b"] = round(sizing.active_parameters(architecture, counts) / 1e9, 4)
    model["architecture"] = to_json(architecture_fields(model))


def architecture_fields(model):
    names = [f.name for f in TABLES_BY_NAME["models"].fields if f.name in ARCHITECTURE_FIELDS]
    return {name: model[name] for name in names if model.get(name) is not None}


def add_memory_gb(row):
    row["memory_gb"] = round(row["memory_mib"] * sizing.MIB / 1e9, 3)


ROW_COLUMNS = {"sources": add_source_columns, "articles": add_article_columns, "cloud_offers": add_price_per_gpu_hour,
               "models": add_model_parameters, "runtime_memory": add_memory_gb}
ARCHITECTURE_FIELDS = {f for f in sizing.Architecture.__dataclass_fields__} | {"vision_params_b"}


def citation_row(c):
    """The citations row of one citation; `kind` stays None when the data does not give it."""
    value = c.value if isinstance(c.value, (int, float)) else None
    row = {
        "slug": f"{c.table.replace('_', '-')}-{c.row}-{c.field.replace('_', '-')}",
        "table_name": c.table, "row_slug": c.row, "field": c.field,
        "value": value, "as_written": None if c.as_written is None else str(c.as_written),
        "unit": UNITS[c.table][c.field], "source": c.source, "kind": c.kind, "scope": c.scope, "note": c.note,
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


class Claim(NamedTuple):
    """What one accelerator is said to support, from a format_support row or a throughput figure."""

    accelerator: str
    format: str
    supported: bool


def format_claims(format_support, throughput):
    """Claims from format_support rows (accelerator, format, supported) and throughput rows
    (accelerator, precision): a cited peak figure in a precision states hardware for it."""
    for accelerator, fmt, supported in format_support:
        yield Claim(accelerator, fmt, supported is None or bool(supported))
    for accelerator, precision in throughput:
        yield Claim(accelerator, precision, True)


def fp4_formats(accelerators, claims, family):
    """(accelerator, JSON array of its supported FP4-family formats) for every accelerator.

    A throughput figure in the family with no format named by a claim counts as
    `fp4`, "FP4, format not stated", so an accelerator with FP4 hardware never
    shows an empty list."""
    named, stated = defaultdict(set), set()
    for claim in claims:
        if family.get(claim.format) != "fp4" or not claim.supported:
            continue
        stated.add(claim.accelerator)
        if claim.format != FP4_NOT_STATED:
            named[claim.accelerator].add(claim.format)
    for slug in accelerators:
        formats = named[slug] or ({FP4_NOT_STATED} if slug in stated else set())
        yield slug, to_json(sorted(formats))


def capability(accelerators, claims, family, precision_family):
    """(accelerator, yes/no/unknown) for one precision family: yes when any claim supports
    a format of the family, no when the only claims are explicit `supported: false`."""
    said = defaultdict(set)
    for claim in claims:
        if family.get(claim.format) == precision_family:
            said[claim.accelerator].add(claim.supported)
    for slug in accelerators:
        yield slug, "yes" if True in said[slug] else "no" if said[slug] else "unknown"


def tier_range(citations, tier_of, accelerator_of):
    """(accelerator, (strongest, weakest) tier) over the sources of its values, throughput and format claims.

    `citations` gives (table, row slug, source); `accelerator_of` maps a
    throughput or format_support slug to its accelerator."""
    ranks = defaultdict(set)
    for table, row, source in citations:
        accelerator = row if table == "accelerators" else accelerator_of.get((table, row))
        if accelerator is not None and source in tier_of:
            ranks[accelerator].add(TIERS.index(tier_of[source]))
    for accelerator, found in ranks.items():
        yield accelerator, (TIERS[min(found)], TIERS[max(found)])


def default_citation_kind(tier, article):
    """A citation's kind when the data does not say: a catalogued article states an article
    claim; otherwise the authority of the source decides (a maker's own page states a vendor spec)."""
    if article:
        return "article-claim"
    return CITATION_KIND_BY_TIER[tier]


def checkpoint_bits(checkpoint, format_bits):
    """Effective bits of each tensor group: the checkpoint's own figure, else its format's."""
    bits = {}
    for group in sizing.TENSOR_GROUPS[:-1]:
        given, fmt = checkpoint[f"{group}_bits"], checkpoint[f"{group}_format"]
        bits[group] = given if given is not None else format_bits.get(fmt)
    bits["other"] = sizing.OTHER_BITS
    return bits


CHECKPOINT_COLUMNS = ("slug", "model") + tuple(f"{group}_{part}" for group in sizing.TENSOR_GROUPS[:-1]
                                               for part in ("format", "bits"))


def checkpoint_columns(checkpoints, models, number_formats):
    """(slug, bits JSON, formats JSON, computed size in GB) of every checkpoint."""
    format_bits = {slug: effective if effective is not None else bits for slug, effective, bits in number_formats}
    counts = {slug: sizing.parameters(sizing.Architecture.from_row(json.loads(architecture)))
              for slug, architecture in models}
    for row in checkpoints:
        checkpoint = dict(zip(CHECKPOINT_COLUMNS, row))
        bits = checkpoint_bits(checkpoint, format_bits)
        formats = sorted({checkpoint[f"{g}_format"] for g in sizing.TENSOR_GROUPS[:-1]} - {None})
        size = sizing.checkpoint_bytes(counts[checkpoint["model"]], sizing.Checkpoint(**bits)) / 1e9
        yield checkpoint["slug"], to_json(bits), to_json(formats), round(size, 3)


def cross_file_columns(stage):
    """Set the columns that depend on rows of other files, once every file is staged."""
    articles = stage.select("articles", ("translation_key", "slug", "language"), order_by=("translation_key", "slug"))
    stage.set_column("articles", "translation", translations(row for row in articles if row[0]))
    columns = list(checkpoint_columns(stage.select("checkpoints", CHECKPOINT_COLUMNS),
                                      stage.select("models", ("slug", "architecture")),
                                      list(stage.select("number_formats", ("slug", "effective_bits", "bits")))))
    for index, column in ((1, "bits"), (2, "formats"), (3, "size_gb")):
        stage.set_column("checkpoints", column, ((row[0], row[index]) for row in columns))
    accelerators = [slug for (slug,) in stage.select("accelerators", ("slug",))]
    family = dict(stage.select("number_formats", ("slug", "family")))
    claims = list(format_claims(stage.select("format_support", ("accelerator", "format", "supported")),
                                stage.select("throughput", ("accelerator", "precision"))))
    stage.set_column("accelerators", "fp4_formats", fp4_formats(accelerators, claims, family))
    for column, precision_family in CAPABILITY_FAMILIES.items():
        stage.set_column("accelerators", column, capability(accelerators, claims, family, precision_family))
    sources = list(stage.select("sources", ("slug", "tier", "article")))
    tier_of = {slug: tier for slug, tier, _ in sources}
    accelerator_of = {(table, slug): accelerator for table in ("throughput", "format_support")
                      for slug, accelerator in stage.select(table, ("slug", "accelerator"))}
    ranges = list(tier_range(stage.select("citations", ("table_name", "row_slug", "source")), tier_of, accelerator_of))
    stage.set_column("accelerators", "strongest_tier", ((slug, strongest) for slug, (strongest, _) in ranges))
    stage.set_column("accelerators", "weakest_tier", ((slug, weakest) for slug, (_, weakest) in ranges))
    stage.set_column("citations", "tier", ((slug, tier) for slug, tier, _ in sources), key="source")
    kinds = ((slug, default_citation_kind(tier, article)) for slug, tier, article in sources)
    stage.set_column("citations", "kind", kinds, key="source", only_null=True)
