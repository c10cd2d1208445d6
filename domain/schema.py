"""The one definition of every table and field.

Each `Field` says once what a column is: its type, unit, description, whether it
is required and what it references. From these definitions the build derives the
SQLite schema (`load.py`), the validators (`validate.py`) and the column
descriptions and units that Datasette shows (`metadata.py`). Change a field
here and all three follow.
"""

from collections import namedtuple
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import NamedTuple

from .runtimes import RUNTIMES as RUNTIME_SLUGS
from .sizing import ACTIVE_COUNTINGS, LINEAR_ATTENTION_KINDS
from .units import DENSE_PRECISIONS, INTEGER_PRECISIONS

SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"

# Kinds of field. Quantities are written with a unit in YAML ("3.35 TB/s") and
# stored as a number in the column unit; `number`/`int` are plain counts.
KINDS = {"slug", "text", "url", "enum", "int", "number", "quantity", "date",
         "bool", "ref", "refs", "list"}
NUMERIC_KINDS = {"int", "number", "quantity"}

SOURCE_KINDS = ("vendor-datasheet", "vendor-page", "vendor-blog", "spec", "press",
                "article", "benchmark", "documentation", "paper", "listing")
CITATION_KINDS = ("vendor-spec", "third-party", "derived", "measured", "article-claim")
# Authority of a source, most to least (docs/DATA.md, "Methodology"). No value may
# cite an aggregator: it may appear in notes only.
TIERS = ("vendor-primary", "vendor-secondary", "vendor-quoted", "independent-measurement", "third-party",
         "reference-dataset", "aggregator")
UNCITABLE_TIERS = ("aggregator",)
# How the pages name each tier: its slug, but the two whose slug says less than their rule.
TIER_LABELS = {**{tier: tier for tier in TIERS}, "vendor-quoted": "vendor figure, quoted",
               "reference-dataset": "reference dataset"}
DEVICE_CLASSES = ("datacenter-gpu", "workstation-gpu", "consumer-gpu",
                  "unified-memory-system", "edge-module", "tpu-asic", "ai-asic", "npu", "dpu")
# What one row (or one cited value) counts: one GPU/accelerator as sold, a chip
# inside a system row, a superchip, a module or board, a whole system.
SCOPES = ("device", "chip", "superchip", "module", "system")
# Tensor/matrix units (tensor cores, matrix cores, MXUs, systolic arrays) against
# vector/SIMT units: the same precision on the two engines is two measures.
ENGINES = ("matrix", "vector")
MEMORY_TYPES = ("HBM2", "HBM2E", "HBM3", "HBM3E", "HBM4", "HBM4E", "GDDR6", "GDDR6X", "GDDR7",
                "LPDDR4X", "LPDDR5", "LPDDR5X", "LPDDR6", "DDR4", "DDR5", "SRAM")
# What kind of memory a row's capacity and bandwidth are (docs/DATA.md, "Comparable rows"): DRAM stacked
# beside the die, graphics DRAM on the board, low-power DRAM of its own, memory shared with a CPU in one
# package or module, standard DDR, or SRAM on the die itself (not comparable with DRAM capacity or bandwidth).
MEMORY_KINDS = ("hbm", "gddr", "lpddr", "ddr", "unified", "on-chip-sram")
# The memory kind each memory type implies; LPDDR and DDR may also be `unified` (shared with a CPU).
MEMORY_KIND_OF_TYPE = {**{t: ("hbm",) for t in MEMORY_TYPES if t.startswith("HBM")},
                       **{t: ("gddr",) for t in MEMORY_TYPES if t.startswith("GDDR")},
                       **{t: ("lpddr", "unified") for t in MEMORY_TYPES if t.startswith("LPDDR")},
                       **{t: ("ddr", "unified") for t in MEMORY_TYPES if t.startswith("DDR")},
                       "SRAM": ("on-chip-sram",)}
assert set(MEMORY_KIND_OF_TYPE) == set(MEMORY_TYPES)
# What the power figure (tdp_w) is, as its source names it: thermal design power, total board power, total
# graphics power, the highest measured draw, or the ceiling of a configurable range.
POWER_KINDS = ("tdp", "tbp", "tgp", "measured-max", "configurable-max")
# How the pages name each kind before the figure ("TBP 450 W").
KIND_LABELS = {"tdp": "TDP", "tbp": "TBP", "tgp": "TGP", "measured-max": "measured max",
               "configurable-max": "configurable max"}
assert set(KIND_LABELS) == set(POWER_KINDS)
# How an offer's date was established (cloud_offers.date_basis).
DATE_BASES = ("observed", "read")
# What a matrix figure accumulates in (throughput.accumulate): dense BF16/FP16 means FP32 accumulate, and a
# figure printed for FP16 accumulate is a variant of its own, never in the comparable columns.
COMPARABLE_ACCUMULATE = "fp32"
ACCUMULATES = (COMPARABLE_ACCUMULATE, "fp16")
# How a price's date was established (prices.date_basis): the price's own source states it, or the source
# gives no date and the price is dated by the product's launch or announcement date from another source.
PRICE_DATE_BASES = ("stated", "launch")
# The values compared with an outside dataset (etl/crosscheck.py), in report order.
CROSSCHECK_FIELDS = ("memory", "bandwidth", "tdp", "bf16-fp16", "fp8", "fp4", "release-date", "price")
# Derived capability: `no` needs an explicit cited `supported: false`; unknown is not no.
CAPABILITY = ("yes", "no", "unknown")
# Classes of models whose decode reaches a like share of its ceiling (domain/sizing.py model_class).
MODEL_CLASSES = ("dense-small", "dense-medium", "dense-large", "moe")


# The largest plausible value of each numeric field a data file gives, in its column unit (quantities) or
# as written: far above any real value (a whole rack for a system row), so that a slip of a unit or an
# exponent is refused rather than stored, and the sizing functions never loop over an absurd figure.
MAXIMA = {
    "announced_articles": 1e6, "announced_pages": 1e5, "announced_avg_minutes": 1e3, "announced_words": 1e10,
    "reading_minutes": 1e3, "per_direction_gbs": 1e7, "bidirectional_gbs": 1e7, "domain_size": 1e6,
    "memory_gb": 1e6, "memory_bandwidth_gbs": 1e8, "addressable_memory_gb": 1e6, "tdp_w": 1e7,
    "interconnect_gbs": 1e8, "launch_price_usd": 1e9, "bits": 64, "exponent_bits": 64, "mantissa_bits": 64,
    "block_size": 1e6, "effective_bits": 64, "tflops": 1e9, "amount": 1e10, "devices": 1e6, "gpu_count": 1e4,
    "price_per_hour": 1e6, "total_params_b": 1e5, "active_params_b": 1e5, "layers": 1e4, "hidden_size": 1e6,
    "attention_heads": 1e4, "kv_heads": 1e4, "head_dim": 1e5, "intermediate_size": 1e7, "vocab_size": 1e8,
    "experts": 1e5, "experts_per_token": 1e5, "shared_experts": 1e4, "moe_intermediate_size": 1e7,
    "dense_layers": 1e4, "q_lora_rank": 1e6, "kv_lora_rank": 1e6, "qk_rope_head_dim": 1e5, "qk_nope_head_dim": 1e5,
    "v_head_dim": 1e5, "sliding_window": 1e9, "full_attention_layers": 1e4, "full_attention_kv_heads": 1e4,
    "full_attention_head_dim": 1e5, "vision_params_b": 1e4, "max_context": 1e9, "group_size": 1e7,
    "experts_bits": 64, "attention_bits": 64, "dense_ffn_bits": 64, "embedding_bits": 64, "output_head_bits": 64,
    "stated_size_gb": 1e6, "memory_mib": 1e9, "spot_price_per_hour": 1e6, "ffn_layers": 1e4, "ffn_matrices": 16,
    "linear_attention_layers": 1e4, "linear_heads": 1e4, "linear_key_heads": 1e4, "linear_key_head_dim": 1e5,
    "linear_value_head_dim": 1e5, "linear_conv_kernel": 1e4, "indexer_heads": 1e4, "indexer_head_dim": 1e5,
    "high_precision_layers": 1e4, "accelerators_per_node": 1e5, "nodes": 1e5, "total_accelerators": 1e6,
    "result": 1e12, "bandwidth_gbs": 1e8, "dies_per_package": 1e3, "batch": 1e6, "input_tokens": 1e8,
    "output_tokens": 1e8, "tp": 1e4, "pp": 1e4, "tokens_per_s": 1e9, "max_input_tokens": 1e8, "energy_mj_per_query": 1e12,
    "average_w": 1e8, "window_s": 1e7, "samples": 1e9, "usd_per_kwh": 10,
}

# The smallest plausible values where a positive number can still be a slip of a unit or an exponent, each
# far below the data's own smallest (docs/DATA.md, "Plausible values").
MIN_PRICE_PER_GPU_HOUR = 0.001  # an offer's price over its GPUs; the cheapest in the data: 0.0267 USD (spot)
MIN_DEVICE_PRICE = 10           # a price's amount per device; the cheapest in the data: 249 USD
MIN_MEMORY_GB = 1               # a device's memory; the smallest in the data: 8 GB (an edge module)
ON_CHIP_MEMORY_CLASSES = ("ai-asic", "npu")  # memory on the chip (SRAM): Groq's LPU has 0.23 GB


class SheetGroup(NamedTuple):
    """A group of a spec sheet: its anchor (`#section-memory`) and its heading."""

    key: str
    title: str


# The spec sheet's groups in reading order: identity is the sheet's head, the others its sections.
SHEET_GROUPS = (SheetGroup("identity", "Identity"), SheetGroup("memory", "Memory"), SheetGroup("compute", "Compute"),
                SheetGroup("interconnect", "Interconnect"), SheetGroup("power", "Power"),
                SheetGroup("price", "Price and rental offers"))


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    description: str
    required: bool = False
    unit: str | None = None          # column unit, for quantities ("GB/s")
    ref: str | None = None           # table referenced by ref/refs fields
    choices: tuple = ()              # allowed values of enum fields
    minimum: float | None = None     # inclusive lower bound of ints
    facet: bool = False              # a default facet in Datasette (its index holds the other facet columns)
    cited: bool = False              # a non-numeric value that carries a citation (dates of a product)
    # A DRAM capacity: the number the vendor prints, whatever its label ("24 GiB" and "24 GB" are both 24),
    # as DRAM capacities are binary (docs/DATA.md, "The capacity rule"); other prefixes convert within the
    # label's own base (1 TiB is 1024 of the column's GB).
    capacity: bool = False
    # The value a record that leaves the field out has, stored so; a row of the default keeps the slug it
    # had before the field existed (`derived_slug`).
    default: str | None = None
    # How the reader pages show the field (the spec sheet, the finder, compare, the column glossary): its name in
    # words (the unit is added where a header needs it), a shorter finder header where the label is long, the
    # spec-sheet group it sits in (SHEET_GROUPS), the bool column that marks the value as derived, and what a
    # blank cell says (default "not stated").
    label: str | None = None
    header: str | None = None
    group: str | None = None
    marked_by: str | None = None
    unknown: str | None = None
    # The enum column that says what kind of figure the value is, shown before it ("TBP 450"): power_kind of tdp_w.
    kind_by: str | None = None

    def __post_init__(self):
        assert self.kind in KINDS, self.kind
        assert self.group is None or self.group in {g.key for g in SHEET_GROUPS}, self.name
        assert (self.kind == "quantity") == (self.unit is not None), self.name
        assert not self.capacity or self.unit == "GB", self.name

    @property
    def shown_label(self) -> str:
        """The field's name in words: its label, or its column name with spaces."""
        return self.label or self.name.replace("_", " ").capitalize()

    @property
    def heading(self) -> str:
        """A column header: the short header or the label, with the unit ("Bandwidth (GB/s)")."""
        words = self.header or self.shown_label
        return f"{words} ({self.unit})" if self.unit else words

    @property
    def maximum(self) -> float | None:
        """The largest plausible value of a numeric field (MAXIMA), None for other kinds."""
        return MAXIMA.get(self.name) if self.kind in NUMERIC_KINDS else None


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    fields: tuple
    label: str = "slug"              # Datasette's label column
    cited: bool = False              # every number needs a citation
    slug_from: tuple = ()            # slug derived from these fields when absent
    sort_desc: str | None = None     # default sort of the table page
    sort: str | None = None
    search: tuple = ()               # full-text searchable columns
    derived: tuple = dc_field(default_factory=tuple)  # columns made by transform.py
    one_of: tuple = ()               # fields of which a record gives at least one
    # The facets the table page shows, where not every facet column: the few a reader filters on. The
    # other facet columns keep their indexes and tag counts and are a `_facet=` away.
    page_facets: tuple = ()
    # The compact table of the reader (the finder, Datasette's table page): its columns in reading order, and
    # those that fold under the first column on a phone.
    finder: tuple = ()
    finder_folded: tuple = ()

    def __post_init__(self):
        # a page facet is counted from its facet index (etl/load.py): only facet columns have one
        assert all(self.field(name).facet for name in self.page_facets), self.name
        assert set(self.finder_folded) <= set(self.finder), self.name
        for name in self.finder:
            self.field(name)

    def field(self, name):
        return next(f for f in self.fields + self.derived if f.name == name)

    @property
    def columns(self):
        """Fields stored as columns (refs become link tables)."""
        return [f for f in self.fields + self.derived if f.kind != "refs"]

    @property
    def refs(self):
        """Names of the `refs` fields, each stored as a link table."""
        return [f.name for f in self.fields if f.kind == "refs"]

    @property
    def list_columns(self):
        """Names of the columns that hold JSON arrays."""
        return [f.name for f in self.columns if f.kind == "list"]

    @property
    def units(self):
        """{field name: its unit, or None} of every field, `refs` included."""
        return {f.name: f.unit for f in self.fields + self.derived}


def derived_slug(table, values):
    """The slug of a row of a table whose slug derives from key fields: the fields' values joined by hyphens,
    a field left at its default left out, a field of another value as `value-field` ("fp16-accumulate")."""
    parts = []
    for name in table.slug_from:
        field, value = table.field(name), values.get(name)
        if field.default is None:
            parts.append(value)
        elif value is not None and value != field.default:
            parts.append(f"{value}-{name}")
    return "-".join(parts)


def slug(description="Permanent identifier, lower-case [a-z0-9-]; the row's permalink."):
    return Field("slug", "slug", description, required=True)


def note():
    return Field("note", "text", "Free-text remarks: caveats, disagreements between sources, why a value is unknown.")


def source(required=False):
    return Field("source", "ref", "Default citation: the source for every number of this row unless a value names its own.",
                 required=required, ref="sources")


TABLES = (
    Table("sources", "Every page cited anywhere in the knowledge base, with the date it was read. A source that no "
          "value, price, offer or claim cites, and that is not a catalogued article, is a build error.", (
        slug(),
        Field("url", "url", "Address of the page (null when the source is a catalogued article known only by its listing)."),
        Field("read_via", "url", "The mirror or copy the page was read through, when it was not read at its own "
              "address (an archive, a documentation mirror, a repository holding the file). A mirror keeps the "
              "original author's tier only when it is a verbatim copy of a named vendor document; otherwise the "
              "source is third-party. The forbidden-host check applies to it as to url."),
        Field("title", "text", "Title exactly as the page gives it; null when the copy read did not show it (the note says so)."),
        Field("publisher", "text", "Who publishes the page.", required=True, facet=True),
        Field("kind", "enum", "What kind of page it is.", required=True, choices=SOURCE_KINDS, facet=True),
        Field("tier", "enum", "Authority of the source, most to least: vendor-primary (the maker's datasheet, product "
              "page, white paper, documentation, a model maker's own repository), vendor-secondary (the maker's blog, "
              "press release, own benchmark submission), vendor-quoted (a named vendor document read through a page "
              "that quotes its table, with a second witness that agrees), independent-measurement, third-party "
              "(press, review, encyclopedia reproducing vendor figures), reference-dataset (Epoch AI's dataset, cited "
              "as itself where nothing better is readable), aggregator (databases of other people's numbers: never "
              "cited for a value).", required=True, choices=TIERS, facet=True),
        Field("published", "date", "Publication date stated by the page, if any."),
        Field("retrieved", "date", "Date the page was read for this knowledge base.", required=True),
        Field("article", "ref", "The catalogued article this source is, if any.", ref="articles"),
        Field("witness", "ref", "vendor-quoted sources: another source that states the same figures (another quote "
              "or copy of the document, a vendor figure of another kind, Epoch AI's dataset); required for that tier, "
              "and never a seller listing.", ref="sources"),
        note(),
    ), label="label", sort_desc="retrieved", one_of=("title", "url"), derived=(
        Field("label", "text", "Display label: the title, or the page's address when its title is not known."),
        Field("label_derived", "bool", "1 when the label is the address rather than a title."),
    )),
    Table("forbidden_sources", "Hosts that may never be cited: content farms, machine-translated copy sites, pages "
          "that say they are AI-written, addresses that belong to unrelated content, scraped feeds, seller listings. "
          "The build refuses a source on one of these hosts, their subdomains or paths, compared canonical.", (
        slug(),
        Field("host", "text", "Host name, lower-case (its subdomains are refused too).", required=True),
        Field("path", "text", "Path on the host that is refused (an account or repository of a shared host, such "
              "as /api-evangelist on raw.githubusercontent.com); without it the whole host and its subdomains are."),
        Field("reason", "text", "Why no value may cite it.", required=True),
        note(),
    ), label="host", sort="host"),
    Table("vendors", "Companies that make accelerators.", (
        slug(), Field("name", "text", "Company name.", required=True),
        Field("country", "text", "Country of headquarters (ISO 3166 code)."),
        Field("url", "url", "Company website."), note(),
    ), label="name", sort="name"),
    Table("providers", "Clouds that rent accelerators by the hour.", (
        slug(), Field("name", "text", "Provider name.", required=True),
        Field("country", "text", "Country of headquarters (ISO 3166 code).", facet=True),
        Field("url", "url", "Provider website."), note(),
    ), label="name", sort="name"),
    Table("sites", "Article sites catalogued, with the totals their own pages announce.", (
        slug(), Field("name", "text", "Site name, where its pages give one."),
        Field("description", "text", "How the site describes itself."),
        Field("languages", "list", "Languages the site publishes in (JSON array)."),
        Field("announced_articles", "int", "Number of articles the site's pages announce.", minimum=0),
        Field("announced_pages", "int", "Number of archive pages the site's pages announce.", minimum=0),
        Field("announced_avg_minutes", "number", "Average reading time the site announces, in minutes."),
        Field("announced_words", "int", "Total words the site announces.", minimum=0),
        Field("announced_by", "text", "Which listing announced the totals."),
        note(),
    ), label="slug"),
    Table("categories", "Article categories, with labels in both languages.", (
        slug(), Field("site", "ref", "Site the category belongs to.", required=True, ref="sites", facet=True),
        Field("label_en", "text", "English label."), Field("label_fr", "text", "French label."), note(),
    ), label="label_en"),
    Table("topics", "Controlled vocabulary of article topics.", (
        slug(), Field("label_en", "text", "English label.", required=True),
        Field("label_fr", "text", "French label.", required=True),
        Field("description", "text", "What the topic covers."),
    ), label="label_en", sort="slug"),
    Table("articles", "One row per language version of each catalogued article.", (
        slug(),
        Field("site", "ref", "Site that publishes the article.", required=True, ref="sites", facet=True),
        Field("language", "enum", "Language of this version.", required=True, choices=("en", "fr"), facet=True),
        Field("translation_key", "slug", "Shared by the language versions of one article."),
        Field("category", "ref", "Category on its site.", required=True, ref="categories", facet=True),
        Field("title", "text", "Title as the listing gives it; null when the listing gives none."),
        Field("url", "url", "Address of the article on its site, where a page read gives it (the listings read give "
              "none); unique. Null: the article page says the address is not known."),
        Field("subtitle", "text", "Subtitle, where the site gives one."),
        Field("summary", "text", "Summary exactly as the listing gives it.", required=True),
        Field("takeaways", "list", "Key takeaways the listing gives (JSON array)."),
        Field("published", "date", "Publication date the listing gives.", facet=True),
        Field("reading_minutes", "int", "Reading time the listing gives, in minutes.", minimum=1),
        Field("author", "text", "Author, only where a page names one."),
        Field("accelerators", "refs", "Accelerators the article discusses.", ref="accelerators"),
        Field("topics", "refs", "Topics the article covers.", ref="topics"),
        Field("seed", "list", "Listing files the article was read from (JSON array)."),
        note(),
    ), label="label", sort_desc="published", search=("title", "subtitle", "summary", "takeaways"),
        derived=(
        Field("label", "text", "Display label: the title, or a label cut from the summary "
              "when the listing gives no title."),
        Field("label_derived", "bool", "1 when the label is derived from the summary rather than a title."),
        Field("translation", "ref", "The other-language version of this article.", ref="articles"),
        Field("accelerator_tags", "list", "Accelerator slugs (JSON array, for faceting; the link table is "
              "article_accelerators).", facet=True),
        Field("topic_tags", "list", "Topic slugs (JSON array, for faceting; the link table is article_topics).", facet=True),
    )),
    Table("interconnects", "Links between chips, GPUs and hosts, with per-direction and bidirectional bandwidth.", (
        slug(), Field("name", "text", "Name.", required=True),
        Field("vendor", "ref", "Vendor, for proprietary links.", ref="vendors", facet=True),
        Field("kind", "enum", "What it connects.", required=True,
              choices=("gpu-gpu", "chip-chip", "host", "scale-out"), facet=True),
        Field("generation", "text", "Generation or version."),
        Field("per_direction_gbs", "quantity", "Bandwidth in one direction, within the stated scope.", unit="GB/s"),
        Field("bidirectional_gbs", "quantity", "Bandwidth of both directions added, within the stated scope.", unit="GB/s"),
        Field("scope", "text", "What the bandwidth figures cover (per GPU, per x16 link, per port...)."),
        Field("domain_size", "int", "Largest number of accelerators in one domain of this link.", minimum=1),
        source(), note(),
    ), label="name", cited=True, sort_desc="bidirectional_gbs"),
    Table("accelerators", "GPUs, TPUs, ASICs, NPUs, DPUs and unified-memory systems: one row per product as sold, "
          "its values for the row's scope (per GPU/device unless the scope says otherwise).", (
        slug(),
        Field("vendor", "ref", "Maker.", required=True, ref="vendors", facet=True, label="Vendor", group="identity"),
        Field("name", "text", "Product name.", required=True, label="Accelerator"),
        Field("family", "text", "Product family or generation.", label="Family", group="identity"),
        Field("architecture", "text", "Microarchitecture.", label="Architecture", group="identity"),
        Field("architecture_family", "text", "The architecture's family name alone (Blackwell, Hopper, CDNA 3, "
              "RDNA 4...), one spelling for every product of it whatever its line (GeForce RTX 50, GB10 and Jetson "
              "Thor are Blackwell): what search and the finder match.", facet=True,
              label="Architecture family", group="identity"),
        Field("device_class", "enum", "Kind of device.", required=True, choices=DEVICE_CLASSES, facet=True,
              label="Class", group="identity"),
        Field("scope", "enum", "What the row's values count: device (one GPU/accelerator/card as sold), chip (a chip "
              "inside a system row), superchip, module, or system.", required=True, choices=SCOPES, facet=True,
              label="Scope", group="identity"),
        Field("system", "ref", "The system row this chip or GPU belongs to; its values never exceed the system's.",
              ref="accelerators", label="Part of system", group="identity"),
        Field("form_factor", "text", "Form factor (SXM, PCIe, OAM, module, system...).", label="Form factor",
              group="identity"),
        Field("status", "enum", "Market status, where a page read states or implies it (null: not known).",
              choices=("announced", "shipping", "discontinued"), facet=True, label="Status", group="identity"),
        Field("announced", "date", "Date the vendor announced the product (YYYY, YYYY-MM or YYYY-MM-DD); null when "
              "no source read says.", cited=True, label="Announced", group="identity"),
        Field("available", "date", "Date the product was first available to buy or rent; null when no source read "
              "says. Never before `announced`.", cited=True, label="Available", group="identity"),
        Field("memory_gb", "quantity", "Memory per row scope, the number the vendor prints, whatever its label: "
              "24 GiB and 24 GB are both 24 (DRAM capacities are binary; no GiB to GB conversion). What a runtime "
              "can allocate is the runtime_memory table.", unit="GB", capacity=True, label="Memory",
              group="memory"),
        Field("memory_type", "enum", "Memory technology, one canonical spelling each.", choices=MEMORY_TYPES, facet=True,
              label="Memory type", group="memory"),
        Field("memory_kind", "enum", "What kind of memory memory_gb and memory_bandwidth_gbs measure: hbm, gddr, lpddr, "
              "ddr, unified (shared with a CPU in one package or module) or on-chip-sram (SRAM on the die, no DRAM: "
              "kept out of the default capacity and bandwidth charts). Agrees with memory_type where both are given.",
              choices=MEMORY_KINDS, facet=True, label="Memory kind", group="memory"),
        Field("memory_bandwidth_gbs", "quantity", "Peak memory bandwidth per row scope (read and write share it).", unit="GB/s",
              label="Memory bandwidth", header="Bandwidth", group="memory"),
        Field("addressable_memory_gb", "quantity", "Unified-memory systems: memory the accelerator can address, as the "
              "vendor states it (the number the vendor prints, as memory_gb).", unit="GB", capacity=True,
              label="Addressable memory", group="memory"),
        Field("tdp_w", "quantity", "Maximum power per row scope, of the kind power_kind says (the column keeps its "
              "name whatever the kind).", unit="W", label="Max power", header="Power", group="power", kind_by="power_kind"),
        Field("power_kind", "enum", "What tdp_w is, as its source names it: tdp (thermal design power, or a maximum "
              "power the source names no other way), tbp (total board power), tgp (total graphics power), "
              "measured-max (the highest draw measured, where no rating is published) or configurable-max (the "
              "ceiling of a configurable range).", choices=POWER_KINDS, facet=True,
              label="Power kind", group="power"),
        Field("dies_per_package", "int", "Compute dies or chips in one package or card as sold (MI250X: 2 GCDs; Cloud "
              "AI 100 Ultra: 4 SoCs), where the row's cited source states it; null otherwise.", minimum=1,
              label="Dies per package", group="identity"),
        Field("interconnect", "ref", "Main accelerator-to-accelerator link.", ref="interconnects", facet=True,
              label="Interconnect", group="interconnect"),
        Field("interconnect_gbs", "quantity", "Interconnect bandwidth per row scope, both directions added (bidirectional).", unit="GB/s",
              label="Interconnect bandwidth", group="interconnect"),
        Field("host_interface", "ref", "Link to the host (an interconnects row of kind host), where stated.", ref="interconnects",
              label="Host interface", group="interconnect"),
        source(), Field("note", "text", note().description, label="Note", unknown="no note"),
    ), label="name", cited=True, sort_desc="memory_bandwidth_gbs", search=("name", "slug", "family", "architecture", "architecture_family"),
        page_facets=("vendor", "device_class", "memory_kind", "native_fp8", "native_fp4"),
        finder=("name", "vendor", "device_class", "memory_gb", "memory_kind", "memory_type", "memory_bandwidth_gbs", "tdp_w",
                "native_fp8", "native_fp4", "fp4_formats", "launch_price_usd", "cheapest_gpu_hour_usd", "note"),
        finder_folded=("vendor", "device_class", "memory_kind"),
        derived=(
        Field("launch_price_usd", "quantity", "Derived, never authored: the per-device amount of the accelerator's "
              "launch-list price in USD (prices table; the earliest when several), where one exists.", unit="USD",
              label="Launch list price", header="List price", group="price", marked_by="launch_price_derived",
              unknown="no list price found"),
        Field("launch_price_derived", "bool", "Whether launch_price_usd is a system or kit price divided by the "
              "devices it holds (derived), not a per-device list price."),
        Field("cheapest_gpu_hour_usd", "quantity", "Cheapest current on-demand price per accelerator-hour in USD "
              "(cloud_offers: the instance's hourly price divided by its accelerators), where any current offer in "
              "USD exists.", unit="USD/h",
              label="Cheapest cloud offer per GPU-hour", header="Cloud per GPU-hour", group="price",
              unknown="no current USD offer"),
        Field("fp4_formats", "list", "4-bit floating-point formats supported natively (JSON array: nvfp4, mxfp4, or fp4 "
              "when a source says FP4 without naming the format), from format_support and FP4 throughput rows.", facet=True,
              label="FP4 formats", group="compute", unknown="none known"),
        Field("native_fp8", "enum", "Native FP8 hardware: yes (a cited supported FP8 format or FP8 throughput figure), "
              "no (a cited `supported: false`), unknown otherwise. Unknown is not no.", choices=CAPABILITY, facet=True,
              label="Native FP8", header="FP8", group="compute"),
        Field("native_fp4", "enum", "Native FP4 hardware: yes, no or unknown, as native_fp8.", choices=CAPABILITY, facet=True,
              label="Native FP4", header="FP4", group="compute"),
        Field("fp8_speedup", "number", "Dense FP8 matrix throughput ÷ dense BF16 matrix throughput (the highest "
              "dense matrix figure of the FP8 family over the bf16 one), rounded to 2 decimals; null when either is "
              "missing. 1 is native FP8 at the BF16 rate: native, no speed-up.", label="FP8 speed-up over BF16",
              group="compute"),
        Field("strongest_tier", "enum", "Most authoritative tier among the sources of the row's values, throughput "
              "and format claims.", choices=TIERS),
        Field("weakest_tier", "enum", "Least authoritative tier among the sources of the row's values, throughput "
              "and format claims: the finder's tier filter.", choices=TIERS, facet=True,
              label="Weakest source tier"),
    )),
    Table("number_formats", "Number formats: element bits, block size, scale format and effective bits per value.", (
        slug(), Field("name", "text", "Name.", required=True),
        Field("family", "text", "Precision family (fp8, fp6, fp4...).", facet=True),
        Field("kind", "enum", "Kind of format.", required=True,
              choices=("float", "integer", "block-scaled-float", "block-scaled-integer", "family"), facet=True),
        Field("bits", "int", "Bits per element.", minimum=1),
        Field("exponent_bits", "int", "Exponent bits per element.", minimum=0),
        Field("mantissa_bits", "int", "Mantissa bits per element.", minimum=0),
        Field("block_size", "int", "Elements sharing one scale (block-scaled formats).", minimum=1),
        Field("scale_format", "text", "Format of the shared scale."),
        Field("effective_bits", "number", "Bits per value including the shared scale."),
        source(), note(),
    ), label="name", cited=True, sort="bits"),
    Table("throughput", "Peak throughput per accelerator, precision, sparsity and engine. Dense and 2:4-sparse "
          "figures, matrix and vector units, are separate rows: only rows of equal precision, sparsity and engine compare.", (
        Field("accelerator", "ref", "Accelerator.", required=True, ref="accelerators", facet=True),
        Field("precision", "ref", "Precision (number format or family).", required=True, ref="number_formats", facet=True),
        Field("sparsity", "enum", "dense, or sparse-2-4 for figures quoted with 2:4 structured sparsity.",
              required=True, choices=("dense", "sparse-2-4"), facet=True),
        Field("engine", "enum", "matrix (tensor cores, matrix cores, MXUs, systolic arrays) or vector (CUDA cores, "
              "SIMT/SIMD vector units).", required=True, choices=ENGINES, facet=True),
        Field("accumulate", "enum", "What the products accumulate in: fp32 (the default, and what dense BF16/FP16 "
              "means) or fp16, a figure printed for FP16 accumulate, stored apart and never in the comparable "
              "columns.", choices=ACCUMULATES, default="fp32", facet=True),
        Field("tflops", "quantity", "Peak throughput of the row's scope in TFLOPS; TOPS for integer precisions, which "
              "are never compared with floating-point rows.", required=True, unit="TFLOPS"),
        source(), note(),
    ), slug_from=("accelerator", "precision", "sparsity", "engine", "accumulate"), cited=True, sort_desc="tflops",
        derived=(slug("Derived: accelerator-precision-sparsity-engine, and -fp16-accumulate for an FP16-accumulate "
                      "figure. Before engines were recorded it was accelerator-precision-sparsity: such addresses "
                      "redirect to the row (or rows) they meant."),)),
    Table("format_support", "Which accelerator supports which number format natively, each claim cited.", (
        Field("accelerator", "ref", "Accelerator.", required=True, ref="accelerators", facet=True),
        Field("format", "ref", "Number format. FP4 claims use nvfp4, mxfp4, or fp4 (FP4, format not stated).",
              required=True, ref="number_formats", facet=True),
        Field("supported", "bool", "false: the source says the format is not supported (default true)."),
        source(required=True), note(),
    ), slug_from=("accelerator", "format"), cited=True, derived=(slug("Derived: accelerator-format."),)),
    Table("prices", "Launch list prices, later list prices and dated street prices.", (
        slug(), Field("accelerator", "ref", "Accelerator.", required=True, ref="accelerators", facet=True),
        Field("kind", "enum", "launch-list (the vendor's list price at launch, never overwritten), list (a vendor list "
              "price given after launch, such as a price first published years later), street (a later dated "
              "observation: street price, price cut) or reported (a price the press reports for a product sold "
              "without a public list price; third-party, never a list price).", required=True,
              choices=("launch-list", "list", "street", "reported"), facet=True),
        Field("amount", "number", "Price in `currency`, for what `scope` and `devices` say it covers.", required=True),
        Field("scope", "enum", "What the price buys: device (one accelerator, card or module as sold, the default) "
              "or system (a kit, server or computer holding `devices` accelerators).", choices=("device", "system"),
              facet=True),
        Field("devices", "int", "Accelerators the price covers (a kit of 8 is 8; default 1).", minimum=1),
        Field("currency", "enum", "ISO 4217 currency.", required=True, choices=("USD", "EUR", "GBP"), facet=True),
        Field("observed", "date", "Date the price was stated or observed (see `date_basis`).", required=True),
        Field("date_basis", "enum", "stated: `observed` is the date the price's source gives (its publication, or "
              "the announcement it reports); launch: the price's source shows no date, and `observed` is the "
              "product's launch or announcement date, read in `date_source`.", required=True,
              choices=PRICE_DATE_BASES, facet=True),
        Field("date_source", "ref", "The source of `observed` when date_basis is launch.", ref="sources"),
        Field("region", "text", "Market the price applies to.", facet=True),
        source(), note(),
    ), cited=True, sort_desc="observed",
        derived=(Field("per_device_amount", "number", "amount / devices, in `currency`: the share of one accelerator "
                       "(derived where the price covers a system or kit)."),)),
    Table("cloud_offers", "Hourly rental offers, with currency, VAT and the date observed.", (
        slug(), Field("provider", "ref", "Cloud provider.", required=True, ref="providers", facet=True),
        Field("instance", "text", "Instance name as the provider gives it.", required=True),
        Field("accelerator", "ref", "Accelerator.", required=True, ref="accelerators", facet=True),
        Field("gpu_count", "int", "Accelerators in the instance.", required=True, minimum=1),
        Field("price_per_hour", "number", "On-demand price of the whole instance per hour, in `currency` (null when "
              "the catalog lists only a spot price).", ),
        Field("spot_price_per_hour", "number", "Spot (preemptible) price of the whole instance per hour, in `currency`."),
        Field("currency", "enum", "ISO 4217 currency.", required=True, choices=("USD", "EUR", "GBP"), facet=True),
        Field("vat_included", "bool", "Whether the price includes VAT (null when the page does not say)."),
        Field("billing", "enum", "Billing granularity.", choices=("per-second", "per-minute", "per-hour", "monthly"), facet=True),
        Field("region", "text", "Region or zone.", facet=True),
        Field("country", "text", "Country of the region (ISO 3166 code).", facet=True),
        Field("observed", "date", "Date the offer was observed: the date the page or catalog commit states, or the "
              "date it was read (see `date_basis`); never a guessed date.", required=True),
        Field("date_basis", "enum", "observed: `observed` is the date the page or catalog commit states; read: the "
              "date the page or file was read, the only date known.", required=True, choices=DATE_BASES, facet=True),
        Field("snapshot", "text", "The dated snapshot the offer belongs to, for offers imported from a catalog: "
              "`<catalog>@<commit>` (the offers of one provider and snapshot are read together).", facet=True),
        source(), note(),
    ), cited=True, sort="price_per_gpu_hour", one_of=("price_per_hour", "spot_price_per_hour"),
        derived=(Field("price_per_gpu_hour", "number", "price_per_hour / gpu_count, in `currency`."),
                 Field("spot_price_per_gpu_hour", "number", "spot_price_per_hour / gpu_count, in `currency`."),
                 Field("current", "bool", "Whether the offer is current: it belongs to its provider's latest "
                       "snapshot (offers entered without a snapshot are current)."))),
    Table("models", "LLMs the articles discuss, with what their config files state: the figures sizing needs.", (
        slug(), Field("name", "text", "Model name.", required=True),
        Field("organization", "text", "Who released it.", facet=True),
        Field("total_params_b", "number", "Total parameters as the maker states them, in billions "
              "(computed_params_b is computed from the config)."),
        Field("active_params_b", "number", "Parameters active per token as the maker states them (MoE), in billions."),
        Field("active_params_counted", "enum", "How the maker's active_params_b counts: without-embedding (what a "
              "token reads, the default), with-embedding (the embedding table counted too), or "
              "without-embedding-and-head (the transformer blocks alone).", choices=ACTIVE_COUNTINGS, facet=True),
        Field("layers", "int", "Transformer layers (num_hidden_layers).", minimum=1),
        Field("hidden_size", "int", "Width of the residual stream (hidden_size).", minimum=1),
        Field("attention_heads", "int", "Query heads per layer.", minimum=1),
        Field("kv_heads", "int", "Key/value heads per layer.", minimum=1),
        Field("head_dim", "int", "Dimension of one attention head, as the config states it (not always hidden / heads).", minimum=1),
        Field("intermediate_size", "int", "Width of a dense FFN layer (gated: gate, up, down).", minimum=1),
        Field("vocab_size", "int", "Vocabulary size (rows of the embedding and output head).", minimum=1),
        Field("tied_embeddings", "bool", "Whether the output head shares the embedding matrix."),
        Field("attention", "enum", "Attention kind.", choices=("mha", "gqa", "mqa", "mla", "hybrid"), facet=True),
        Field("experts", "int", "MoE: routed experts per MoE layer.", minimum=1),
        Field("experts_per_token", "int", "MoE: routed experts each token is sent to.", minimum=1),
        Field("shared_experts", "int", "MoE: experts every token goes through.", minimum=0),
        Field("moe_intermediate_size", "int", "MoE: width of one expert's FFN.", minimum=1),
        Field("dense_layers", "int", "MoE: layers with a dense FFN instead of experts.", minimum=0),
        Field("q_lora_rank", "int", "MLA: rank of the compressed query.", minimum=1),
        Field("kv_lora_rank", "int", "MLA: dimension of the compressed KV latent.", minimum=1),
        Field("qk_rope_head_dim", "int", "MLA: dimension of the decoupled RoPE key.", minimum=1),
        Field("qk_nope_head_dim", "int", "MLA: query/key dimension per head without RoPE.", minimum=1),
        Field("v_head_dim", "int", "MLA: value dimension per head.", minimum=1),
        Field("sliding_window", "int", "Window of sliding-window layers, in tokens.", minimum=1),
        Field("full_attention_layers", "int", "Layers that attend over the full context (hybrid and sliding-window models).", minimum=0),
        Field("full_attention_kv_heads", "int", "KV heads of the full-attention layers, where they differ from kv_heads.", minimum=1),
        Field("full_attention_head_dim", "int", "Head dimension of the full-attention layers, where it differs from head_dim.", minimum=1),
        Field("full_attention_kv_shared", "bool", "Full-attention layers cache one tensor per head (keys equal values)."),
        Field("vision_params_b", "number", "Parameters of the vision tower loaded with the model, in billions."),
        Field("ffn_layers", "int", "Layers with an FFN (dense or MoE), where not every layer has one (Nemotron-H "
              "alternates mixer blocks and FFN blocks; `layers` counts the mixer blocks).", minimum=0),
        Field("ffn_matrices", "int", "Weight matrices of one FFN: 3 when gated (gate, up, down; the default), "
              "2 when not (squared ReLU).", minimum=2),
        Field("attention_output_gate", "bool", "The query projection also yields a gate of the attention output "
              "(Qwen3-Next), so it is twice as wide."),
        Field("linear_attention", "enum", "Kind of the layers that keep a fixed-size state per sequence instead of "
              "a KV cache: gated-deltanet (linear attention) or mamba2 (state space).",
              choices=tuple(LINEAR_ATTENTION_KINDS), facet=True),
        Field("linear_attention_layers", "int", "Layers with linear attention or a state-space block (no KV cache); "
              "the other layers attend as `attention` says.", minimum=0),
        Field("linear_heads", "int", "Linear layers: value heads (Mamba-2: heads).", minimum=1),
        Field("linear_key_heads", "int", "Linear layers: query/key heads (Mamba-2: groups of B and C).", minimum=1),
        Field("linear_key_head_dim", "int", "Linear layers: key dimension per head (Mamba-2: state size).", minimum=1),
        Field("linear_value_head_dim", "int", "Linear layers: value dimension per head (Mamba-2: head dimension).",
              minimum=1),
        Field("linear_conv_kernel", "int", "Linear layers: width of the causal convolution.", minimum=1),
        Field("indexer_heads", "int", "Sparse attention (DeepSeek-V3.2): heads of the lightning indexer.", minimum=1),
        Field("indexer_head_dim", "int", "Sparse attention: dimension of the indexer's key, cached per token and "
              "layer.", minimum=1),
        Field("max_context", "int", "Maximum context, in tokens, as the config states it (max_position_embeddings, or the "
              "window a cited page states where no config was read; the note says which).", required=True, minimum=1),
        source(), note(),
    ), label="name", cited=True, sort_desc="computed_params_b", search=("name", "slug", "organization"), derived=(
        Field("computed_params_b", "number", "Total parameters computed from the config fields (domain/sizing.py), in billions."),
        Field("computed_active_params_b", "number", "Parameters one token reads, computed from the config fields: "
              "all but the embedding table, the vision tower and the experts it is not routed to."),
        Field("computed_active_as_stated_b", "number", "Active parameters computed from the config fields and counted "
              "as the maker counts them (active_params_counted), to compare with active_params_b, in billions."),
        Field("architecture", "text", "The config fields as one JSON object, the argument of the sizing SQL functions."),
        Field("model_class", "enum", "The class measured decode efficiency is calibrated by (decode_efficiency): "
              "moe, or dense by computed parameters: dense-small (under 20B), dense-medium (20B to 200B), "
              "dense-large (over 200B).", choices=MODEL_CLASSES, facet=True),
    )),
    Table("checkpoints", "Weights as shipped: the format and effective bits of each tensor group.", (
        slug(), Field("model", "ref", "The model these weights are of.", required=True, ref="models", facet=True),
        Field("name", "text", "Name of the checkpoint as its publisher gives it.", required=True),
        Field("publisher", "text", "Who publishes the checkpoint.", facet=True),
        Field("quantization", "text", "Quantization method or file type (GPTQ, AWQ, GGUF Q4_K_M...).", facet=True),
        Field("group_size", "int", "Weights sharing one scale (group- or block-quantized formats).", minimum=1),
        *(field for group, label in (("experts", "MoE experts (routed and shared)"), ("attention", "attention projections"),
                                      ("dense_ffn", "dense FFN layers"), ("embedding", "the embedding matrix"),
                                      ("output_head", "the output head"))
          for field in (Field(f"{group}_format", "ref", f"Number format of {label}.", ref="number_formats"),
                        Field(f"{group}_bits", "number", f"Effective bits per weight of {label}, scales included "
                                                        "(when it differs from the format's effective bits)."))),
        Field("high_precision_layers", "int", "Transformer layers kept whole in BF16 whatever the groups' formats "
              "(Meta's FP8 releases keep the first and last): each layer group's bits are the mean over the layers.",
              minimum=0),
        Field("stated_size_gb", "quantity", "Size of the checkpoint as its publisher states it.", unit="GB"),
        source(), note(),
    ), label="name", cited=True, derived=(
        Field("bits", "text", "Effective bits of each tensor group (JSON), from the fields or the formats' effective bits."),
        Field("formats", "list", "Number formats the checkpoint computes in (JSON array), for native support."),
        Field("size_gb", "number", "Size computed from the model's parameters and the bits of each group, in GB."),
    )),
    Table("accelerator_aliases", "Names that other datasets give accelerators (Epoch AI's hardware dataset, cloud "
          "catalogs, MLPerf results), each mapped to one accelerator: the one place where outside names meet slugs. "
          "A name mapped to no accelerator says why in its note; names met in a dataset with no row here are listed "
          "by `computekb report`, never dropped silently.", (
        slug(),
        Field("dataset", "text", "The dataset the name comes from (epoch-ai, skypilot, mlperf...).", required=True, facet=True),
        Field("name", "text", "The name exactly as the dataset writes it.", required=True),
        Field("accelerator", "ref", "The accelerator the name means; null when it means none of them (a system "
              "mixing accelerators, a product not in the knowledge base): the note says which.", ref="accelerators",
              facet=True),
        note(),
    ), label="name", sort="slug"),
    Table("crosscheck_notes", "Why a value disagrees with an outside dataset (Epoch AI's hardware dataset): one "
          "row per accelerator and field that `computekb report --crosscheck` finds more than 3% apart, saying "
          "which side is wrong and why, with the source that settles it. A disagreement without a row here "
          "fails the tests; so does a row whose values now agree.", (
        Field("dataset", "slug", "The outside dataset (epoch-ai).", required=True, facet=True),
        Field("accelerator", "ref", "Accelerator.", required=True, ref="accelerators", facet=True),
        Field("field", "enum", "The compared value.", required=True, choices=CROSSCHECK_FIELDS, facet=True),
        Field("wrong", "enum", "Which side is wrong: the dataset, the knowledge base (to be fixed), neither "
              "(the two count different things: a system against one chip, an estimate against a vendor figure, "
              "another event), or unsettled (no page read settles it: the note says what was looked for).",
              required=True, choices=("dataset", "knowledge-base", "neither", "unsettled"), facet=True),
        Field("source", "ref", "The page that settles it.", required=True, ref="sources"),
        Field("note", "text", "What each side says and why one is wrong, or what each counts.", required=True),
    ), slug_from=("dataset", "accelerator", "field"), label="slug", sort="slug",
        derived=(slug("Derived: dataset-accelerator-field."),)),
    Table("benchmark_results", "Audited benchmark results (MLPerf Inference): one row per system, benchmark and "
          "scenario of a round's published summary, as the summary states it. Submitted by vendors and their "
          "partners, audited by MLCommons: measured, not promised.", (
        slug("Derived from the round, result ID, benchmark as written and scenario: the result ID names a system's "
             "submission, not one row."),
        Field("round", "text", "Benchmark round (v4.1, v5.1, v6.0...).", required=True, facet=True),
        Field("result_id", "text", "The result ID the round's summary gives (MLCommons' permalink for the system's "
              "submission; one ID covers every benchmark and scenario of that system).", required=True),
        Field("division", "enum", "closed (the reference model and its accuracy target, comparable) or open "
              "(changes allowed, not comparable).", required=True, choices=("closed", "open"), facet=True),
        Field("category", "text", "datacenter or edge, as the summary gives it (a few systems are both).",
              required=True),
        Field("availability", "text", "available, preview or rdi (research, development, internal), as stated."),
        Field("submitter", "text", "Organization that submitted the result.", required=True),
        Field("system", "text", "System name as the summary gives it."),
        Field("platform", "text", "The submission's system folder (its name in the results repository)."),
        Field("accelerator_name", "text", "Accelerator exactly as the summary writes it (null: the summary names "
              "none, a system without accelerators); mapped to a slug through accelerator_aliases (dataset mlperf)."),
        Field("accelerators_per_node", "int", "Accelerators per node, as stated (null for a system without "
              "accelerators: no node holds 0).", minimum=1),
        Field("nodes", "int", "Nodes of the system, as stated.", minimum=1),
        Field("total_accelerators", "int", "Accelerators of the whole system, as stated (the v6.0 summary) or "
              "accelerators_per_node × nodes (kind derived).", minimum=0),
        Field("benchmark", "text", "The benchmark model without its accuracy target (llama2-70b, "
              "mixtral-8x7b...).", required=True, facet=True),
        Field("accuracy_target", "text", "Accuracy target in percent of the reference model (99, 99.9), where the "
              "benchmark has several: results under different targets are never compared."),
        Field("model", "ref", "The LLM of the models table the benchmark runs, where the knowledge base has it "
              "(the roofline needs its configuration).", ref="models"),
        Field("scenario", "text", "Offline, Server, Interactive, SingleStream or MultiStream.", required=True,
              facet=True),
        Field("weight_formats", "text", "Weight data types as the summary states them (the summaries state no "
              "activation formats)."),
        Field("weights_as_run", "text", "The weight format the submission ran, where its own documents state "
              "another than weight_formats (NVIDIA's v4.1 LLM rows state fp16 and ran FP8, FP4 on Blackwell); "
              "the ceiling uses it.", cited=True),
        Field("result", "number", "The performance result, in `units`.", required=True),
        Field("units", "text", "Unit of the result as stated (Tokens/s, Samples/s, Queries/s, Latency (ms)...).",
              required=True),
        Field("software", "text", "Software stack as stated."),
        Field("details_url", "url", "The system's results folder in MLCommons' results repository."),
        source(required=True), note(),
    ), label="slug", cited=True, sort="slug", derived=(
        Field("accelerator", "ref", "The accelerator the name means, from accelerator_aliases (dataset mlperf); "
              "null when the name maps to none (a mixed system) or has no alias yet (`computekb report` lists "
              "it).", ref="accelerators", facet=True),
        Field("result_per_accelerator", "number", "result ÷ total_accelerators, for throughput units (per "
              "second) only; latencies are not divided."),
        Field("roofline_per_accelerator", "number", "Memory-bound decode ceiling per accelerator, tokens/s "
              "(docs/DATA.md, Measured results: the batch, context and formats assumed), for Tokens/s results of "
              "a model and an accelerator with a bandwidth."),
        Field("roofline_share", "number", "result_per_accelerator ÷ roofline_per_accelerator."),
        Field("roofline_basis", "text", "The assumptions of the ceiling: layout, batch, context, weight and KV bits."),
    )),
    Table("power_results", "MLPerf Inference power results: the whole system's wall power over one result's "
          "performance run, recomputed from the power analyzer's samples (spl.txt) beside it as MLCommons' "
          "submission checker computes it, cited to the result's folder. Whole-system power (accelerators, "
          "processors, memory, fans, power supplies), not the accelerator's own.", (
        slug("The benchmark_results slug of the result."),
        Field("result", "ref", "The result the power was measured with.", required=True, ref="benchmark_results"),
        Field("samples", "int", "Analyzer samples inside the run's power window (power_begin to power_end of "
              "mlperf_log_detail.txt) with watts above zero: the samples averaged.", required=True, minimum=1),
        Field("window_s", "number", "Length of the run's power window, in seconds.", required=True),
        Field("average_w", "number", "Average wall power of the whole system over the window, in watts: the mean "
              "of the samples counted (the checker's power metric for Offline, Server and Interactive).",
              required=True),
        Field("energy_mj_per_query", "number", "Energy of the whole system per query, in millijoules: average_w × "
              "window_s × 1000 ÷ queries (the checker's power metric for SingleStream and MultiStream)."),
        source(required=True), note(),
    ), label="slug", cited=True, sort="slug", derived=(
        Field("accelerator", "ref", "The result's accelerator (benchmark_results.accelerator).", ref="accelerators",
              facet=True),
        Field("watts_per_accelerator", "number", "average_w ÷ the result's total_accelerators: the system's wall "
              "power shared over its accelerators, not an accelerator's own draw."),
        Field("result_per_joule", "number", "The result ÷ average_w, for throughput units (per second): tokens or "
              "samples per joule of whole-system wall energy."),
    )),
    Table("electricity_prices", "Average prices of electricity, per region, sector and period, as a statistics "
          "office publishes them: the default price per kWh of the energy cost per million tokens (the reader sets "
          "another).", (
        slug(),
        Field("region", "text", "Where the price applies, as the source names it.", required=True),
        Field("sector", "text", "The customers it is the average of (commercial, industrial...), as the source "
              "names them.", required=True),
        Field("period", "text", "The period it is the average of (2023).", required=True),
        Field("usd_per_kwh", "number", "Average price in US dollars per kilowatt-hour (the source's cents ÷ 100).",
              required=True),
        source(required=True), note(),
    ), label="slug", cited=True, sort="slug"),
    Table("achieved_rates", "Rates measured by others on real hardware: memory bandwidth by kernel and matrix "
          "multiply throughput, each beside the datasheet peak of the same accelerator, precision and engine.", (
        slug(),
        Field("accelerator", "ref", "Accelerator measured.", required=True, ref="accelerators", facet=True),
        Field("measure", "enum", "memory-bandwidth (device memory, GB/s) or matmul (dense matrix multiply, "
              "TFLOPS).", required=True, choices=("memory-bandwidth", "matmul"), facet=True),
        Field("kernel", "text", "The kernel or benchmark and its shape, as the source names them.", required=True),
        Field("precision", "ref", "Input precision of a matmul (null for bandwidth).", ref="number_formats",
              facet=True),
        Field("bandwidth_gbs", "quantity", "Achieved memory bandwidth.", unit="GB/s"),
        Field("tflops", "quantity", "Achieved dense matrix throughput (matrix engine).", unit="TFLOPS"),
        Field("software", "text", "Software the source states (library, framework, driver versions)."),
        Field("measured", "date", "Date of the measurement, or of the source's revision that reports it when the "
              "source dates no measurement (the note says which)."),
        source(required=True), note(),
    ), label="slug", cited=True, sort="slug", one_of=("bandwidth_gbs", "tflops")),
    Table("benchmark_workloads", "The workload of an LLM benchmark: mean tokens per sample it generates and "
          "reads, as MLCommons publishes them or derived from a result's own log (tokens/s ÷ samples/s); the "
          "ceilings of benchmark_results are computed for these lengths.", (
        slug("mlperf-<benchmark>, its dots as hyphens."),
        Field("benchmark", "text", "The benchmark as benchmark_results names it (llama2-70b...).", required=True),
        Field("output_tokens", "number", "Mean generated tokens per sample.", required=True, minimum=1),
        Field("input_tokens", "number", "Mean prompt tokens per sample (null when no published figure was found: "
              "the ceiling then counts no prefill).", minimum=1),
        Field("max_input_tokens", "int", "Longest prompt of the dataset, as the harness documentation states it "
              "(what bounds the prefill the ceiling leaves out where the mean is unknown).", minimum=1),
        source(required=True), note(),
    ), label="benchmark", cited=True, sort="benchmark"),
    Table("speed_measurements", "Published decode speeds of one model on one accelerator with one runtime: the "
          "aggregate output tokens per second of a batch at stated input and output lengths, as the runtime's own "
          "benchmark pages, pull requests and documentation give them. The speed model of domain/speed.py is "
          "fitted on them (docs/LLM_MATH.md, Expected speed).", (
        slug(),
        Field("runtime", "enum", "The runtime measured (domain/runtimes.py).", required=True,
              choices=tuple(RUNTIME_SLUGS), facet=True),
        Field("runtime_version", "text", "Release, build or commit of the runtime, as the source states it.",
              required=True),
        Field("model", "ref", "The model run.", required=True, ref="models", facet=True),
        Field("checkpoint", "ref", "The checkpoint run, where the knowledge base has it.", ref="checkpoints"),
        Field("weight_format", "ref", "The one format of every linear layer, when no checkpoint row describes "
              "the weights.", ref="number_formats"),
        Field("kv_format", "ref", "Format of the KV cache.", required=True, ref="number_formats"),
        Field("batch", "int", "Sequences decoded together (llama-bench and static-batch benchmarks: the batch; "
              "a serving benchmark: its concurrency).", required=True, minimum=1),
        Field("input_tokens", "int", "Prompt tokens of each sequence (0: generation from an empty prompt).",
              required=True, minimum=0),
        Field("output_tokens", "int", "Tokens generated for each sequence.", required=True, minimum=1),
        Field("accelerator", "ref", "Accelerator run on.", required=True, ref="accelerators", facet=True),
        Field("devices", "int", "Accelerators of the run.", required=True, minimum=1),
        Field("tp", "int", "Tensor-parallel ranks (llama.cpp splits layers instead: tp 1, pp the devices).",
              required=True, minimum=1),
        Field("pp", "int", "Pipeline stages (llama.cpp's layer split).", required=True, minimum=1),
        Field("tokens_per_s", "number", "Output tokens per second of the whole run (all its sequences and "
              "devices), prefill time included where the benchmark includes it.", required=True),
        source(required=True), note(),
    ), label="slug", cited=True, sort="slug", one_of=("checkpoint", "weight_format")),
    Table("runtime_memory", "Device memory as the runtime sees it, where a log, issue or document states it: the total "
          "the framework sizes its fraction of (torch), the driver's total (nvidia-smi), or Apple's default GPU "
          "working-set limit for unified memory. One row per accelerator; elsewhere the sizing reads the printed "
          "capacity as GiB and flags it estimated.", (
        Field("accelerator", "ref", "Accelerator.", required=True, ref="accelerators", facet=True),
        Field("memory_mib", "int", "Total memory the runtime can use, in MiB (2^20 bytes); the note says who reports it.",
              required=True, minimum=1),
        Field("basis", "enum", "Who states the total: framework (the total the CUDA or ROCm runtime gives the "
              "framework, torch's mem_get_info, which vLLM's fraction applies to), driver (nvidia-smi's total), "
              "working-set (Metal's recommendedMaxWorkingSetSize as logged on this configuration), estimated "
              "(a rule applied to the printed capacity: answers flag it).", required=True,
              choices=("framework", "driver", "working-set", "estimated"), facet=True),
        source(), note(),
    ), slug_from=("accelerator",), cited=True, derived=(
        slug("Derived: the accelerator's slug."),
        Field("memory_gb", "number", "memory_mib in decimal GB."),
    )),
)

# Tables the build makes; data files cannot write them.
GENERATED = (
    Table("citations", "Who says each number: one row per non-null number and per format-support claim.", (
        slug("Derived: table-row-field."),
        Field("table_name", "text", "Table of the cited value.", required=True, facet=True),
        Field("row_slug", "text", "Slug of the row holding the value.", required=True),
        Field("field", "text", "Column of the cited value.", required=True, facet=True),
        Field("value", "number", "The value, in the column unit."),
        Field("as_written", "text", "The value as written in the data file, with its unit."),
        Field("unit", "text", "Unit of the column."),
        Field("source", "ref", "The source that states the value.", required=True, ref="sources", facet=True),
        Field("kind", "enum", "vendor-spec, third-party, derived, measured, or article-claim (default from the "
              "source's tier).", required=True, choices=CITATION_KINDS, facet=True),
        Field("tier", "enum", "Authority tier of the source, copied from sources.tier.", required=True,
              choices=TIERS, facet=True),
        Field("scope", "enum", "The scope the source states the figure for, when it differs from the row's.",
              choices=SCOPES),
        Field("note", "text", "What the source says exactly, or how the value was derived."),
        Field("basis", "list", "Derived values: the other sources the derivation rests on (JSON array of source "
              "slugs), such as the vendor page stating the 2:1 ratio of a dense-from-sparse figure."),
    ), sort="slug"),
    Table("release", "The data release this database was built from: cite it with any number.", (
        Field("data_release", "text", "First 12 hex digits of the SHA-256 of every data file.", required=True),
        Field("data_hash", "text", "SHA-256 of every data file (path within the data folder, and content), in path order.", required=True),
        Field("built_at", "text", "When the database was built (UTC).", required=True),
        Field("files", "int", "Data files read.", required=True),
        Field("records", "int", "Records loaded.", required=True),
    ), label="data_release"),
)

AUTHORED = {t.name: t for t in TABLES}
assert all(f.maximum for t in TABLES for f in t.fields if f.kind in NUMERIC_KINDS), "a numeric field without MAXIMA"
TABLES_BY_NAME = {t.name: t for t in TABLES + GENERATED}


# The layout of the database, derived from the tables above: column order,
# link tables, tag-count tables and what the build stages of each table.


def singular(table_name):
    return table_name.removesuffix("s")


def link_table_name(table, field):
    return f"{singular(table.name)}_{field.name}"


class Link(NamedTuple):
    """Where a link table (article_accelerators...) comes from: a table and one of its `refs` fields."""

    table: str
    field: str


class TagCounts(NamedTuple):
    """A table of counts behind the tag facets of `table` (read by plugins/speed.py)."""

    table: str
    tags: list        # its tag columns: JSON arrays of distinct slugs, faceted
    dimensions: list  # its other facet columns but dates, which have few values each


def tag_counts(table):
    facets = [f for f in table.columns if f.facet]
    return TagCounts(table.name, [f.name for f in facets if f.kind == "list"],
                     [f.name for f in facets if f.kind not in ("list", "date")])


# Column order of every table, as load.py creates them.
COLUMNS = {t.name: [f.name for f in t.columns] for t in TABLES + GENERATED}
# Link tables by the table and `refs` field they come from.
LINKS = {link_table_name(t, f): Link(t.name, f.name) for t in TABLES for f in t.fields if f.kind == "refs"}
COLUMNS.update({link: [singular(table), singular(TABLES_BY_NAME[table].field(field).ref)]
                for link, (table, field) in LINKS.items()})
# Rows per tag and per combination of the other facet values, by table name: a
# faceted page filtered on those values counts its tags here, not row by row.
TAG_COUNTS = {f"{t.name}_tag_counts": tag_counts(t) for t in TABLES if any(f.facet and f.kind == "list" for f in t.columns)}
COLUMNS.update({name: ["tag_column", "tag", *counts.dimensions, "rows"] for name, counts in TAG_COUNTS.items()})
# What transform.file_tables writes of each table: its columns, then its `refs`
# fields as JSON arrays of distinct sorted slugs, from which load.py fills the link tables.
REFS = {t.name: t.refs for t in TABLES}
STAGED = {name: COLUMNS[name] + REFS.get(name, []) for name in [t.name for t in TABLES] + ["citations"]}


def staged_record(name):
    """The record of one staged row of `name`: its STAGED columns by name, None where not given.

    A tuple too, so rows go to SQLite's executemany as they are.
    """
    class_name = "".join(part.title() for part in name.split("_")) + "Row"
    return namedtuple(class_name, STAGED[name], defaults=(None,) * len(STAGED[name]), module=__name__)


# {table: record type of its staged rows}. Each is also a name of this module:
# staged rows are pickled (for the cache and from worker processes), and pickle
# finds a class by its module and name.
STAGED_ROWS = {name: staged_record(name) for name in STAGED}
globals().update({record.__name__: record for record in STAGED_ROWS.values()})
LIST_COLUMNS = {t.name: t.list_columns for t in TABLES}
UNITS = {t.name: t.units for t in TABLES}
# {table: names of its capacity columns}: the number the vendor prints, GB or GiB alike.
CAPACITY_COLUMNS = {t.name: frozenset(f.name for f in t.columns if f.capacity) for t in TABLES}
# {table: {column: unit}} of every column stored in a unit.
COLUMN_UNITS = {t.name: {f.name: f.unit for f in t.columns if f.unit}
                for t in TABLES + GENERATED if any(f.unit for f in t.columns)}


class DenseColumn(NamedTuple):
    """A column of the dense_throughput view: one precision on one engine, in TFLOPS (TOPS for integers)."""

    precision: str
    engine: str

    @property
    def unit(self):
        return "TOPS" if self.precision in INTEGER_PRECISIONS else "TFLOPS"

    @property
    def name(self):
        return f"{self.precision}_{self.engine}_{self.unit.lower()}"


DENSE_COLUMNS = tuple(DenseColumn(p, e) for p in DENSE_PRECISIONS for e in ENGINES)


def dashed(name):
    return name.replace("_", "-")


# With one hyphen between row and field, ("acme-z", addressable_memory_gb) and
# ("acme-z-addressable", memory_gb) would share the slug
# accelerators-acme-z-addressable-memory-gb. A field whose dashed name ends with
# another field's takes two hyphens, which no slug contains, so no two (table,
# row, field) share a slug; every other citation keeps the slug it was
# published with (plugins/redirects.py redirects the old form).
SUFFIXED_FIELDS = {t.name: frozenset(f.name for f in t.fields
                                     if any(dashed(f.name).endswith("-" + dashed(g.name)) for g in t.fields))
                   for t in TABLES}


def citation_slug(table, row, field):
    separator = "--" if field in SUFFIXED_FIELDS.get(table, ()) else "-"
    return f"{dashed(table)}-{row}{separator}{dashed(field)}"
