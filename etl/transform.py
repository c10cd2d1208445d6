"""Transform stage: validated rows into the rows of every table, derived columns included.

Everything computed from the data happens here, once, so the database holds it
as plain columns: display labels, translation links, link tables, FP4 support,
price per GPU-hour and the citation of every number.

Most of it depends on one row alone and is done file by file (`file_tables`:
cached with the file and run by the processes that read it). Three columns
depend on rows of other files: an article's translation, an accelerator's FP4
formats and a citation's default kind. `cross_file_columns` fills them once
every file is staged (see load.StagingDatabase).
"""

import json
from collections import defaultdict
from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

from domain import roofline, sizing
from domain.schema import (
    COMPARABLE_ACCUMULATE,
    LIST_COLUMNS,
    REFS,
    STAGED_ROWS,
    TABLES_BY_NAME,
    TIERS,
    UNITS,
    citation_slug,
)

DERIVED_LABEL_LENGTH = 90

# How a citation counts when the data does not say: by the authority of its source.
CITATION_KIND_BY_TIER = {
    "vendor-primary": "vendor-spec", "vendor-secondary": "vendor-spec", "vendor-quoted": "vendor-spec",
    "independent-measurement": "measured", "third-party": "third-party", "reference-dataset": "third-party",
    "aggregator": "third-party",
}
# The capability columns derived from format_support and throughput, by precision family.
CAPABILITY_FAMILIES = {"native_fp8": "fp8", "native_fp4": "fp4"}
# What a throughput figure in the FP4 family says of the format when no format claim names it.
FP4_NOT_STATED = "fp4"


# Lists become JSON arrays, always written this way: json.dumps(value, ensure_ascii=False),
# without building a new encoder for every value as json.dumps does with that option.
to_json = json.JSONEncoder(ensure_ascii=False).encode


def derived_label(summary):
    """A short label cut from the summary at a word boundary (`label_derived` says so: pages mark it)."""
    if len(summary) <= DERIVED_LABEL_LENGTH:
        return summary
    cut = summary[:DERIVED_LABEL_LENGTH].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + "…"


def address_label(url):
    """A source's label when its title is not known: its address without the scheme (`label_derived` says so)."""
    return url.split("://", 1)[-1].rstrip("/")


def add_source_columns(source):
    source["label"] = source["title"] or address_label(source["url"])
    source["label_derived"] = source["title"] is None


def add_article_columns(article):
    article["label"] = article["title"] or derived_label(article["summary"])
    article["label_derived"] = article["title"] is None
    # The link tables are for joins; these arrays let Datasette facet on tags.
    article["accelerator_tags"] = sorted(set(article["accelerators"] or []))
    article["topic_tags"] = sorted(set(article["topics"] or []))


def per_device(amount, devices):
    """An amount shared by `devices` accelerators, per accelerator (None stays None)."""
    return None if amount is None else round(amount / (devices or 1), 6)


def add_price_per_gpu_hour(offer):
    offer["price_per_gpu_hour"] = per_device(offer["price_per_hour"], offer["gpu_count"])
    offer["spot_price_per_gpu_hour"] = per_device(offer["spot_price_per_hour"], offer["gpu_count"])


def add_per_device_amount(price):
    price["per_device_amount"] = per_device(price["amount"], price["devices"])


def add_model_parameters(model):
    """Parameter counts computed from the config fields, and those fields as
    the JSON argument of the sizing SQL functions."""
    architecture = sizing.Architecture.from_row(model)
    counts = sizing.parameters(architecture)
    model["computed_params_b"] = round(counts.total / 1e9, 4)
    model["computed_active_params_b"] = round(sizing.active_parameters(architecture, counts) / 1e9, 4)
    counting = model.get("active_params_counted") or sizing.ACTIVE_COUNTINGS[0]
    model["computed_active_as_stated_b"] = round(sizing.active_parameters_counted(architecture, counts, counting) / 1e9, 4)
    model["architecture"] = to_json(architecture_fields(model))
    model["model_class"] = sizing.model_class(architecture, counts.total / 1e9)


def architecture_fields(model):
    names = [f.name for f in TABLES_BY_NAME["models"].fields if f.name in ARCHITECTURE_FIELDS]
    return {name: model[name] for name in names if model.get(name) is not None}


def add_memory_gb(row):
    row["memory_gb"] = round(row["memory_mib"] * sizing.MIB / 1e9, 3)


def add_result_per_accelerator(result):
    """A throughput (a unit per second) divided over the system's accelerators; latencies are not divided."""
    accelerators = result["total_accelerators"]
    per_second = result["units"].endswith("/s")
    result["result_per_accelerator"] = round(result["result"] / accelerators, 4) if per_second and accelerators else None


ROW_COLUMNS = {"sources": add_source_columns, "articles": add_article_columns, "cloud_offers": add_price_per_gpu_hour,
               "prices": add_per_device_amount, "models": add_model_parameters, "runtime_memory": add_memory_gb,
               "benchmark_results": add_result_per_accelerator}
ARCHITECTURE_FIELDS = {f for f in sizing.Architecture.__dataclass_fields__} | {"vision_params_b"}


CitationsRow = STAGED_ROWS["citations"]


def citation_row(c):
    """The citations row of one citation; `kind` stays None when the data does not give it,
    `tier` until `cross_file_columns`."""
    return CitationsRow(
        slug=citation_slug(c.table, c.row, c.field),
        table_name=c.table, row_slug=c.row, field=c.field,
        value=c.value if isinstance(c.value, (int, float)) else None,
        as_written=None if c.as_written is None else str(c.as_written),
        unit=UNITS[c.table][c.field], source=c.source, kind=c.kind, scope=c.scope, note=c.note,
        basis=json.dumps(list(c.basis)) if c.basis else None,
    )


def file_tables(rows, citations):
    """{table: [its STAGED_ROWS records]}: what one file's rows add to every table,
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
        record = STAGED_ROWS[row.table]
        tables[row.table].append(record._make(map(values.get, record._fields)))
    if citations:
        tables["citations"] = [citation_row(c) for c in citations]
    return dict(tables)


def translations(articles):
    """(slug, translation) for articles whose translation key has exactly one
    version in another language; `articles` gives records of translation_key,
    slug and language, grouped by key."""
    for _, group in groupby(articles, key=itemgetter("translation_key")):
        versions = list(group)
        for version in versions:
            others = [other["slug"] for other in versions if other["language"] != version["language"]]
            if len(others) == 1:
                yield version["slug"], others[0]


class Claim(NamedTuple):
    """What one accelerator is said to support, from a format_support row or a throughput figure."""

    accelerator: str
    format: str
    supported: bool


def format_claims(format_support, throughput):
    """Claims from format_support records (accelerator, format, supported) and throughput records
    (accelerator, precision): a cited peak figure in a precision states hardware for it."""
    for row in format_support:
        yield Claim(row["accelerator"], row["format"], row["supported"] is None or bool(row["supported"]))
    for row in throughput:
        yield Claim(row["accelerator"], row["precision"], True)


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


# The precision whose dense matrix figure fp8_speedup divides by.
SPEEDUP_BASE = "bf16"


def fp8_speedups(accelerators, figures, family):
    """(accelerator, dense FP8 ÷ dense BF16 matrix throughput, or None) for every accelerator.

    `figures` gives records of accelerator, precision and tflops of the dense matrix rows. The FP8
    figure is the highest of the FP8 family (a vendor stating E4M3 and MXFP8 states one rate)."""
    fp8, base = defaultdict(float), {}
    for row in figures:
        if family.get(row["precision"]) == "fp8":
            fp8[row["accelerator"]] = max(fp8[row["accelerator"]], row["tflops"])
        elif row["precision"] == SPEEDUP_BASE:
            base[row["accelerator"]] = row["tflops"]
    for slug in accelerators:
        yield slug, round(fp8[slug] / base[slug], 2) if fp8.get(slug) and base.get(slug) else None


class TierRange(NamedTuple):
    """The most and the least authoritative tier among the sources of one accelerator."""

    accelerator: str
    strongest: str
    weakest: str


def tier_range(citations, tier_of, accelerator_of):
    """The TierRange of each accelerator over the sources of its values, throughput and format claims.

    `citations` gives records of table_name, row_slug and source; `accelerator_of`
    maps a (table, slug) of throughput or format_support to its accelerator."""
    ranks = defaultdict(set)
    for citation in citations:
        table, row, source = citation["table_name"], citation["row_slug"], citation["source"]
        accelerator = row if table == "accelerators" else accelerator_of.get((table, row))
        if accelerator is not None and source in tier_of:
            ranks[accelerator].add(TIERS.index(tier_of[source]))
    for accelerator, found in ranks.items():
        yield TierRange(accelerator, TIERS[min(found)], TIERS[max(found)])


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


CHECKPOINT_COLUMNS = ("slug", "model", "high_precision_layers") + tuple(
    f"{group}_{part}" for group in sizing.TENSOR_GROUPS[:-1] for part in ("format", "bits"))


class CheckpointColumns(NamedTuple):
    """The derived columns of one checkpoint."""

    slug: str
    bits: str       # JSON
    formats: str    # JSON
    size_gb: float  # computed


def checkpoint_columns(checkpoints, models, number_formats):
    """The CheckpointColumns of every checkpoint, from records of CHECKPOINT_COLUMNS, of
    models (slug, architecture) and of number_formats (slug, effective_bits, bits)."""
    format_bits = {f["slug"]: f["effective_bits"] if f["effective_bits"] is not None else f["bits"] for f in number_formats}
    architectures = {model["slug"]: sizing.Architecture.from_row(json.loads(model["architecture"])) for model in models}
    for checkpoint in checkpoints:
        architecture = architectures[checkpoint["model"]]
        groups = sizing.Checkpoint(**checkpoint_bits(checkpoint, format_bits))
        if checkpoint["high_precision_layers"]:
            groups = sizing.with_layers_kept(groups, architecture, checkpoint["high_precision_layers"])
        formats = sorted({checkpoint[f"{g}_format"] for g in sizing.TENSOR_GROUPS[:-1]} - {None})
        size = sizing.checkpoint_bytes(sizing.parameters(architecture), groups) / 1e9
        yield CheckpointColumns(checkpoint["slug"], to_json(vars(groups)), to_json(formats), round(size, 3))


class LaunchPrice(NamedTuple):
    """The launch price an accelerator row shows, from its prices rows."""

    accelerator: str
    amount: float   # per device, USD
    derived: bool   # a system or kit price divided by its devices


def launch_prices(prices):
    """The LaunchPrice of every accelerator with a launch-list price in USD, from prices records
    (accelerator, kind, currency, observed, slug, per_device_amount, scope, devices) in
    (accelerator, observed, slug) order: the earliest such row, as a later row never replaces the launch price."""
    seen = set()
    for row in prices:
        if row["kind"] != "launch-list" or row["currency"] != "USD" or row["accelerator"] in seen:
            continue
        seen.add(row["accelerator"])
        derived = row["scope"] == "system" or (row["devices"] or 1) > 1
        yield LaunchPrice(row["accelerator"], row["per_device_amount"], derived)


def current_offers(offers):
    """(offer slug, 1 or 0) for offers records (slug, provider, snapshot, observed): an offer is current
    when it has no snapshot or belongs to a snapshot of its provider's latest snapshot date."""
    offers = list(offers)
    latest = {}
    for offer in offers:
        if offer["snapshot"] is not None:
            latest[offer["provider"]] = max(latest.get(offer["provider"], ""), offer["observed"])
    for offer in offers:
        yield offer["slug"], int(offer["snapshot"] is None or offer["observed"] == latest[offer["provider"]])


def cheapest_gpu_hours(offers, current):
    """(accelerator, cheapest on-demand USD price per accelerator-hour) over the current offers, from
    records (slug, accelerator, price_per_gpu_hour, currency) and {slug: 1 when current}."""
    best = {}
    for offer in offers:
        price = offer["price_per_gpu_hour"]
        if current[offer["slug"]] and offer["currency"] == "USD" and price is not None:
            best[offer["accelerator"]] = min(best.get(offer["accelerator"], price), price)
    return best.items()


def price_columns(stage):
    """The launch price of every accelerator, the current offers, and the cheapest current offer."""
    prices = list(launch_prices(stage.select(
        "prices", ("accelerator", "kind", "currency", "observed", "slug", "per_device_amount", "scope", "devices"),
        order_by=("accelerator", "observed", "slug"))))
    stage.set_column("accelerators", "launch_price_usd", ((p.accelerator, p.amount) for p in prices))
    stage.set_column("accelerators", "launch_price_derived", ((p.accelerator, int(p.derived)) for p in prices))
    current = dict(current_offers(stage.select("cloud_offers", ("slug", "provider", "snapshot", "observed"))))
    stage.set_column("cloud_offers", "current", current.items())
    offers = stage.select("cloud_offers", ("slug", "accelerator", "price_per_gpu_hour", "currency"))
    stage.set_column("accelerators", "cheapest_gpu_hour_usd", cheapest_gpu_hours(offers, current))


MLPERF_DATASET = "mlperf"
ROOFLINE_UNITS = "Tokens/s"


class Roofline(NamedTuple):
    """The derived roofline columns of one benchmark result."""

    slug: str
    per_accelerator: float | None
    share: float | None
    basis: str | None


def benchmark_accelerators(aliases, results):
    """(result slug, accelerator) of every result whose accelerator name has an alias to an accelerator;
    `aliases` gives records of dataset, name and accelerator, `results` of slug and accelerator_name."""
    mapped = {a["name"]: a["accelerator"] for a in aliases if a["dataset"] == MLPERF_DATASET and a["accelerator"]}
    for result in results:
        if result["accelerator_name"] in mapped:
            yield result["slug"], mapped[result["accelerator_name"]]


class DeviceFigures(NamedTuple):
    """What the calculator knows of a device (the what-fits query's `device`), so that a result's share of the
    ceiling is a share of the very ceiling the calculator multiplies by it."""

    slug: str
    memory_gb: float
    bandwidth_gbs: float
    dense_tflops: dict   # {bits of a floating-point format: dense matrix peak}
    link_gbs: float | None


FLOAT_KINDS = ("float", "family")


def comparable_dense_matrix(row):
    """Whether a throughput record (sparsity, engine, accumulate) is a dense matrix figure of the comparable
    kind: FP32 accumulate, never a printed FP16-accumulate figure."""
    return row["sparsity"] == "dense" and row["engine"] == "matrix" and row["accumulate"] == COMPARABLE_ACCUMULATE


def dense_peaks(throughput, formats):
    """{accelerator: {bits: the highest dense matrix figure of a floating-point precision of that width}}."""
    bits_of = {f["slug"]: f["bits"] for f in formats if f["kind"] in FLOAT_KINDS and f["bits"]}
    peaks = {}
    for t in throughput:
        bits = bits_of.get(t["precision"])
        if bits and comparable_dense_matrix(t):
            by_bits = peaks.setdefault(t["accelerator"], {})
            by_bits[bits] = max(by_bits.get(bits, 0.0), t["tflops"])
    return peaks


def device_figures(accelerators, runtime_memory, peaks=None):
    """{accelerator: DeviceFigures} where memory and bandwidth are known: memory as the runtime sees it where
    measured, else the printed capacity (the smaller of memory and addressable memory) read as GiB, as the
    what-fits query reads it."""
    seen = {row["accelerator"]: row["memory_gb"] for row in runtime_memory}
    figures = {}
    for a in accelerators:
        stated = [m for m in (a["memory_gb"], a["addressable_memory_gb"]) if m is not None]
        memory = seen.get(a["slug"], round(min(stated) * sizing.GIB / sizing.GB, 2) if stated else None)
        if memory is not None and a["memory_bandwidth_gbs"]:
            link = a["interconnect_gbs"] / 2 if a["interconnect_gbs"] else None
            figures[a["slug"]] = DeviceFigures(a["slug"], memory, a["memory_bandwidth_gbs"],
                                               (peaks or {}).get(a["slug"], {}), link)
    return figures


def rooflines(results, accelerator_of, devices, architectures, bits_of, workloads):
    """The Roofline of every tokens/s result of a model, a benchmark workload and an accelerator with memory and
    bandwidth.

    `results` gives records of slug, benchmark, model, weight_formats, weights_as_run, accelerators_per_node,
    scenario, units and result_per_accelerator; `architectures` maps a model slug to its sizing.Architecture,
    `workloads` a benchmark to its roofline.BenchmarkWorkload."""
    ceilings = {}  # many results share a benchmark, format, accelerator, node size and scenario
    for r in results:
        accelerator = accelerator_of.get(r["slug"])
        device, arch, workload = devices.get(accelerator), architectures.get(r["model"]), workloads.get(r["benchmark"])
        bits = roofline.weight_bits(r["weights_as_run"] or r["weight_formats"], bits_of)
        if None in (device, arch, workload, bits, r["result_per_accelerator"]) or r["units"] != ROOFLINE_UNITS:
            continue
        key = (r["benchmark"], r["model"], bits, accelerator, r["accelerators_per_node"], r["scenario"])
        if key not in ceilings:
            ceilings[key] = roofline.ceiling(arch, bits, device, r["accelerators_per_node"], r["scenario"], workload)
        found = ceilings[key]
        if not found:
            continue
        share = r["result_per_accelerator"] / found.tokens_per_s
        if share > 1:
            # above the ceiling of the format assumed: that format cannot be what ran
            yield Roofline(r["slug"], None, None, f"not kept: the result is {share:.2f} × the ceiling of the "
                                                  f"weight format assumed ({found.basis})")
        else:
            yield Roofline(r["slug"], round(found.tokens_per_s, 2), round(share, 4), found.basis)


def benchmark_columns(stage):
    """The accelerator of each benchmark result (through the alias table) and its roofline columns."""
    aliases = stage.select("accelerator_aliases", ("dataset", "name", "accelerator"))
    accelerator_of = dict(benchmark_accelerators(aliases, stage.select("benchmark_results", ("slug", "accelerator_name"))))
    stage.set_column("benchmark_results", "accelerator", accelerator_of.items())
    formats = list(stage.select("number_formats", ("slug", "effective_bits", "bits", "kind")))
    peaks = dense_peaks(stage.select("throughput", ("accelerator", "precision", "sparsity", "engine", "accumulate",
                                                     "tflops")), formats)
    devices = device_figures(stage.select("accelerators", ("slug", "memory_gb", "addressable_memory_gb",
                                                           "memory_bandwidth_gbs", "interconnect_gbs")),
                             stage.select("runtime_memory", ("accelerator", "memory_gb")), peaks)
    architectures = {m["slug"]: sizing.Architecture.from_row(json.loads(m["architecture"]))
                     for m in stage.select("models", ("slug", "architecture"))}
    bits_of = {f["slug"]: f["effective_bits"] or f["bits"] for f in formats if f["bits"] is not None}
    workloads = {w["benchmark"]: roofline.BenchmarkWorkload(w["output_tokens"], w["input_tokens"])
                 for w in stage.select("benchmark_workloads", ("benchmark", "output_tokens", "input_tokens"))}
    found = list(rooflines(stage.select("benchmark_results", ("slug", "benchmark", "model", "weight_formats",
                                                               "weights_as_run", "accelerators_per_node", "scenario",
                                                               "units", "result_per_accelerator")),
                           accelerator_of, devices, architectures, bits_of, workloads))
    for column, field in (("roofline_per_accelerator", "per_accelerator"), ("roofline_share", "share"),
                          ("roofline_basis", "basis")):
        stage.set_column("benchmark_results", column, ((r.slug, getattr(r, field)) for r in found))


def power_columns(stage):
    """Each power result's accelerator, watts per accelerator and result per joule, from its benchmark result."""
    aliases = stage.select("accelerator_aliases", ("dataset", "name", "accelerator"))
    accelerator_of = dict(benchmark_accelerators(aliases, stage.select("benchmark_results", ("slug", "accelerator_name"))))
    results = {r["slug"]: r for r in stage.select("benchmark_results", ("slug", "total_accelerators", "result", "units"))}
    power = [(p["slug"], p["average_w"], results.get(p["result"])) for p in stage.select("power_results",
                                                                                      ("slug", "result", "average_w"))]
    stage.set_column("power_results", "accelerator", ((slug, accelerator_of.get(r["slug"])) for slug, _, r in power if r))
    stage.set_column("power_results", "watts_per_accelerator", (
        (slug, round(watts / r["total_accelerators"], 2)) for slug, watts, r in power if r and r["total_accelerators"]))
    stage.set_column("power_results", "result_per_joule", (
        (slug, round(r["result"] / watts, 4)) for slug, watts, r in power if r and r["units"].endswith("/s")))


def cross_file_columns(stage):
    """Set the columns that depend on rows of other files, once every file is staged in `stage` (a load.StagingDatabase)."""
    articles = stage.select("articles", ("translation_key", "slug", "language"), order_by=("translation_key", "slug"))
    stage.set_column("articles", "translation", translations(row for row in articles if row["translation_key"]))
    columns = list(checkpoint_columns(stage.select("checkpoints", CHECKPOINT_COLUMNS),
                                      stage.select("models", ("slug", "architecture")),
                                      list(stage.select("number_formats", ("slug", "effective_bits", "bits")))))
    for column in ("bits", "formats", "size_gb"):
        stage.set_column("checkpoints", column, ((row.slug, getattr(row, column)) for row in columns))
    accelerators = [row["slug"] for row in stage.select("accelerators", ("slug",))]
    family = {row["slug"]: row["family"] for row in stage.select("number_formats", ("slug", "family"))}
    claims = list(format_claims(stage.select("format_support", ("accelerator", "format", "supported")),
                                stage.select("throughput", ("accelerator", "precision"))))
    stage.set_column("accelerators", "fp4_formats", fp4_formats(accelerators, claims, family))
    price_columns(stage)
    for column, precision_family in CAPABILITY_FAMILIES.items():
        stage.set_column("accelerators", column, capability(accelerators, claims, family, precision_family))
    dense_matrix = [row for row in stage.select("throughput", ("accelerator", "precision", "tflops", "sparsity", "engine",
                                                                "accumulate"))
                    if comparable_dense_matrix(row)]
    stage.set_column("accelerators", "fp8_speedup", fp8_speedups(accelerators, dense_matrix, family))
    sources = list(stage.select("sources", ("slug", "tier", "article")))
    tier_of = {source["slug"]: source["tier"] for source in sources}
    accelerator_of = {(table, row["slug"]): row["accelerator"] for table in ("throughput", "format_support")
                      for row in stage.select(table, ("slug", "accelerator"))}
    ranges = list(tier_range(stage.select("citations", ("table_name", "row_slug", "source")), tier_of, accelerator_of))
    stage.set_column("accelerators", "strongest_tier", ((r.accelerator, r.strongest) for r in ranges))
    stage.set_column("accelerators", "weakest_tier", ((r.accelerator, r.weakest) for r in ranges))
    benchmark_columns(stage)
    power_columns(stage)
    stage.set_column("citations", "tier", ((source["slug"], source["tier"]) for source in sources), key="source")
    kinds = ((source["slug"], default_citation_kind(source["tier"], source["article"])) for source in sources)
    stage.set_column("citations", "kind", kinds, key="source", only_null=True)
