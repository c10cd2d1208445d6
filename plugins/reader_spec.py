"""The accelerator spec sheet: the row page of `accelerators` as a reader reads it.

Datasette's row page shows one wide row of field names; a reader wants the
product's identity first, then its figures grouped the way they are compared
(memory, compute, interconnect, power, price), each value with its unit, the
tier of its source, and a way to cite exactly that value. This module reads
the row, its citations, throughput, format claims, prices, rental offers and
articles in one trip to the database and hands the template named records.
The row page itself (JSON, CSV, every column) stays Datasette's.
"""

import json
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from datasette import hookimpl
from datasette.utils import tilde_encode
from datasette.utils.asgi import BadRequest

from domain.parameters import ParameterError, usd_per_kwh
from domain.schema import AUTHORED, COMPARABLE_ACCUMULATE, KIND_LABELS
from domain.units import DENSE_PRECISIONS, INTEGER_PRECISIONS
from serving.citation_text import bibtex_escape, markdown_escape, shown_title, today_utc, value_anchor
from serving.labels import FIELDS, IDENTITY, SECTIONS, label
from serving.measured import by_round, electricity_price, read, read_energy
from serving.measured import shown as measured_number
from serving.metadata import DATABASE
from serving.row_pages import is_row_page, row_page_vars
from serving.site import site_title, site_url

# Made by the build from the sheet's cited rows (format support, throughput, citations): no source of their own.
DERIVED = {f.name for f in AUTHORED["accelerators"].derived}
DERIVED_SOURCE = "derived by the knowledge base from this sheet's cited values"

# Fields whose value is a slug of another table: shown as a link to its row.
LINKED = {"vendor": "vendors", "interconnect": "interconnects", "host_interface": "interconnects",
          "system": "accelerators"}
PEERS = 4
# The key figures shown first (a phone's first screen): fields, then dense matrix throughput per family.
GLANCE_FIELDS = ("memory_gb", "memory_bandwidth_gbs", "tdp_w")
GLANCE_PRECISIONS = (("Dense BF16/FP16", ("bf16", "fp16")), ("Dense FP8", ("fp8", "fp8-e4m3", "fp8-e5m2")),
                     ("Dense FP4", ("nvfp4", "mxfp4", "fp4", "fp4-e2m1")))


@dataclass(frozen=True)
class Glance:
    """One key figure at the top of the sheet, linking to its full value below."""
    label: str
    text: str
    anchor: str


@dataclass
class Value:
    """One value of the sheet with what a reader needs to trust and cite it."""
    field: str
    label: str
    text: str                     # the value with its unit, as shown
    unit: str | None = None
    href: str | None = None       # the row it names, for slug values
    tier: str | None = None
    kind: str | None = None
    figure_kind: str | None = None  # what kind of figure it is, shown before it ("TBP" of a power)
    citation: str | None = None   # URL of the citation row
    source_label: str | None = None
    source_url: str | None = None
    source_untitled: bool = False
    derived: bool = False         # made from other cited values, not stated by a source
    note: str | None = None
    cite: dict = field(default_factory=dict)


@dataclass
class ComputeRow:
    """Throughput of one precision and engine: the dense and the 2:4-sparse figures side by side."""
    precision: str
    engine: str
    unit: str                     # TFLOPS for floating point, TOPS for integers
    dense: Value | None = None
    sparse: Value | None = None


@dataclass
class Sheet:
    slug: str
    name: str
    identity: list
    sections: list                # (id, title, [Value])
    compute: list                 # [ComputeRow]
    formats: list                 # format_support rows
    prices: list
    offers: list
    articles: list
    peers: list
    glance: list                  # [Glance]
    decode: list                  # [Decode]
    compare_url: str
    release: str
    note: str | None = None
    first_cited: dict = field(default_factory=dict)  # {section id: its first cited value}, for its formats panel
    models: list = field(default_factory=list)       # for "what fits on this accelerator"


def number(value):
    """A stored number as a reader writes it: no trailing .0, thousands apart."""
    if value is None:
        return None
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")


def shown(name, value):
    unit = FIELDS[name].unit if name in FIELDS else None
    if isinstance(value, float | int) and not isinstance(value, bool):
        return f"{number(value)} {unit}" if unit else number(value)
    return str(value)


SQL = {
    "row": "select * from accelerators where slug = :slug",
    "citations": """
        select c.table_name, c.row_slug, c.field, c.slug, c.kind, c.tier, c.note, c.as_written, c.unit,
               s.slug as source, s.label, s.url, s.label_derived, s.title
        from citations c join sources s on s.slug = c.source
        where (c.table_name = 'accelerators' and c.row_slug = :slug)
           or (c.table_name = 'throughput' and c.row_slug in (select slug from throughput where accelerator = :slug))""",
    "throughput": "select slug, precision, sparsity, engine, accumulate, tflops from throughput where accelerator = :slug",
    "formats": """select f.format, f.supported, f.slug, n.name from format_support f
                  left join number_formats n on n.slug = f.format where f.accelerator = :slug order by f.format""",
    "prices": """select p.slug, p.kind, p.amount, p.per_device_amount, p.scope, p.devices, p.currency, p.observed,
                        p.region, s.tier from prices p left join sources s on s.slug = p.source
                 where p.accelerator = :slug order by p.kind <> 'launch-list', p.observed""",
    # The cheapest current on-demand offer of each provider (SQLite takes the other columns from the row of min()).
    "offers": """select o.slug, o.provider, v.name as provider_name, o.instance, o.region, o.gpu_count, o.price_per_hour,
                        min(o.price_per_gpu_hour) as price_per_gpu_hour, o.spot_price_per_gpu_hour, o.currency,
                        o.observed, o.date_basis,
                        (select count(*) from cloud_offers c where c.accelerator = o.accelerator
                           and c.provider = o.provider and c.current) as offers
                 from cloud_offers o join providers v on v.slug = o.provider
                 where o.accelerator = :slug and o.current and o.price_per_gpu_hour is not null
                 group by o.provider, o.currency order by o.currency, price_per_gpu_hour""",
    "articles": """select a.slug, a.label, a.title, a.language, a.site, a.published from article_accelerators aa
                   join articles a on a.slug = aa.article where aa.accelerator = :slug
                   order by a.published is null, a.published desc, a.slug""",
    # The peers a reader compares it with first: its own family, then its class, then the others of the
    # same scope; within each, the closest in memory and bandwidth (log distance: 80 GB vs 96 GB is as near
    # as 8 GB vs 9.6 GB). Ranked and cut in SQL: a scope can hold thousands of rows.
    "peers": f"""select o.slug, o.name, o.family, o.device_class, o.memory_gb, o.memory_bandwidth_gbs
                from accelerators me join accelerators o on o.scope = me.scope and o.slug <> me.slug
                where me.slug = :slug and me.memory_gb > 0 and me.memory_bandwidth_gbs > 0
                  and +o.memory_gb > 0 and +o.memory_bandwidth_gbs > 0
                order by o.family is not me.family or me.family is null, o.device_class is not me.device_class,
                  ln(1.0 * o.memory_gb / me.memory_gb) * ln(1.0 * o.memory_gb / me.memory_gb)
                  + ln(1.0 * o.memory_bandwidth_gbs / me.memory_bandwidth_gbs)
                    * ln(1.0 * o.memory_bandwidth_gbs / me.memory_bandwidth_gbs),
                  o.slug
                limit {PEERS}""",
    "release": "select data_release from release",
    "models": "select slug, name from models order by name",
    # The decode speed of three example models on this accelerator (vLLM, one sequence of 4,096 tokens, KV
    # cache in BF16, the layout proposed): the ceiling and the expected figure (domain/speed.py), from llm_fit.
    "decode": """
        with device as (
          select a.slug, a.memory_bandwidth_gbs, a.interconnect_gbs / 2 as link_gbs,
            coalesce(r.memory_gb, round(coalesce(min(a.memory_gb, a.addressable_memory_gb), a.memory_gb,
              a.addressable_memory_gb) * 1.073741824, 2)) as memory,
            (select max(t.tflops) from throughput t where t.accelerator = a.slug and t.sparsity = 'dense'
               and t.engine = 'matrix' and t.precision in ('bf16', 'fp16')) as dense_tflops,
            (select max(ar.bandwidth_gbs) / a.memory_bandwidth_gbs from achieved_rates ar
               where ar.accelerator = a.slug and ar.measure = 'memory-bandwidth') as bandwidth_share
          from accelerators a left join runtime_memory r on r.accelerator = a.slug
          where a.slug = :slug and a.memory_bandwidth_gbs > 0
        ),
        examples (place, model, weights, asked, bits) as (values
          (1, 'llama-3-1-8b', 'BF16', 'format:bf16', uniform_bits(16)),
          (2, 'llama-3-1-70b', 'FP8', 'format:fp8', uniform_bits(8)),
          (3, 'gpt-oss-120b', 'MXFP4', 'checkpoint:gpt-oss-120b-mxfp4',
           (select bits from checkpoints where slug = 'gpt-oss-120b-mxfp4')))
        select e.model, m.name, e.weights, e.asked,
          llm_fit(m.architecture, e.bits,
            json_object('memory_gb', d.memory, 'bandwidth_gbs', d.memory_bandwidth_gbs, 'dense_tflops', d.dense_tflops,
                        'link_gbs', d.link_gbs, 'slug', d.slug, 'bandwidth_share', d.bandwidth_share),
            json_object('context', 4096, 'batch', 1, 'kv_bits', 16, 'runtime', 'vllm')) as fit
        from device d, examples e join models m on m.slug = e.model where e.bits is not null
        order by e.place""",
}


@dataclass(frozen=True)
class Decode:
    """One example model's decode speed on the accelerator: its layout, the ceiling and the expected figure."""
    model: str
    name: str
    weights: str
    asked: str                     # the what-fits page's `weights` parameter
    devices: int | None
    ceiling: float | None          # tokens/s of one sequence
    expected: float | None
    basis: str | None


def decode_examples(rows) -> list[Decode]:
    examples = []
    for row in rows:
        fit = json.loads(row["fit"]) if row["fit"] else {}
        fits = fit.get("fits")
        examples.append(Decode(row["model"], row["name"], row["weights"], row["asked"],
                               fit.get("devices") if fits else None,
                               fit.get("tokens_per_s_per_sequence") if fits else None,
                               fit.get("expected_tokens_per_s_per_sequence") if fits else None,
                               fit.get("expected_basis") if fits else None))
    return examples


def read_sheet_rows(conn, slug):
    """Every query of the sheet, in one trip to Datasette's query thread."""
    def rows(sql):
        cursor = conn.execute(sql, {"slug": slug})
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r)) for r in cursor]
    return {name: rows(sql) for name, sql in SQL.items()}


def value_cite(site, value, permalink, release, accessed):
    """The citation of one value as text, Markdown and BibTeX: value, unit, field, original source,
    permalink to the value's anchor and data release."""
    source = value.source_label or (DERIVED_SOURCE if value.derived else "no source recorded")
    where = f" ({value.source_url})" if value.source_url else ""
    tier = f", {value.tier}" if value.tier else ""
    text = (f"{value.label} ({value.field}): {value.text}. Source: {source}{where}{tier}. "
            f"{site}, {permalink}, data release {release}, accessed {accessed}.")
    markdown = (f"{markdown_escape(value.label)} (`{value.field}`): **{markdown_escape(value.text)}**. "
                f"Source: {f'[{markdown_escape(source)}]({value.source_url})' if value.source_url else markdown_escape(source)}"
                f"{f' ({value.tier})' if value.tier else ''}. [{site}]({permalink}), data release `{release}`, "
                f"accessed {accessed}.")
    key = permalink.rsplit("/", 1)[-1].replace("#", "-")
    source_url = f" \\url{{{value.source_url}}}" if value.source_url else ""
    bibtex = "\n".join([
        f"@misc{{{site}-{key},",
        f"  title = {{{{{bibtex_escape(value.label)}: {bibtex_escape(value.text)}}}}},",
        f"  howpublished = {{\\url{{{permalink}}}}},",
        f"  note = {{{bibtex_escape(site)}, field {bibtex_escape(value.field)}, data release {release}; "
        f"source: {bibtex_escape(source)}{source_url}}},",
        f"  urldate = {{{accessed}}}",
        "}",
    ])
    return {"text": text, "markdown": markdown, "bibtex": bibtex}


def article_shown(article):
    """An article with the text to show as its title: its title, or the label derived from its summary
    (the page shows a "title not published" label beside it)."""
    return {**article, "shown": shown_title(article["title"], article["label"]).text}


class SheetBuilder:
    """Turns the rows read into the sheet's named records, with the URLs of this Datasette."""

    def __init__(self, datasette, request, data):
        self.datasette, self.request, self.data = datasette, request, data
        self.row = data["row"][0]
        self.release = data["release"][0]["data_release"] if data["release"] else None
        self.site = site_title()
        self.accessed = today_utc()
        # on the configured site URL: a request's Host header may name any host
        self.permalink = site_url(datasette) + datasette.urls.row(DATABASE, "accelerators", tilde_encode(self.row["slug"]))
        self.cited = {(c["table_name"], c["row_slug"], c["field"]): c for c in data["citations"]}

    def row_url(self, table, slug):
        return self.datasette.urls.row(DATABASE, table, tilde_encode(slug))

    def value(self, name, text, citation, anchor=None, unit=None, href=None):
        value = Value(field=anchor or name, label=label(name) if name in FIELDS else name, text=text, unit=unit, href=href)
        if citation:
            value.tier, value.kind, value.note = citation["tier"], citation["kind"], citation["note"]
            value.citation = self.row_url("citations", citation["slug"])
            value.source_url = citation["url"]
            value.source_untitled = bool(citation["label_derived"])
            value.source_label = citation["title"] or urlsplit(citation["url"] or "").netloc or citation["source"]
        else:
            value.derived = name in DERIVED
        value.cite = value_cite(self.site, value, f"{self.permalink}#{value.field}", self.release, self.accessed)
        return value

    def field_value(self, name):
        raw = self.row.get(name)
        if raw in (None, "", "[]"):
            return None
        if FIELDS[name].kind == "list":
            text = ", ".join(json.loads(raw))
        else:
            text = shown(name, raw)
        href = self.row_url(LINKED[name], raw) if name in LINKED else None
        value = self.value(name, text, self.cited.get(("accelerators", self.row["slug"], name)),
                           unit=FIELDS[name].unit if name in FIELDS else None, href=href)
        value.figure_kind = self.kind_of(name)
        return value

    def kind_of(self, name):
        """What kind of figure a field's value is, where its field says ("TBP" of a power), else None."""
        kind = self.row.get(FIELDS[name].kind_by) if name in FIELDS and FIELDS[name].kind_by else None
        return KIND_LABELS[kind] if kind else None

    def compute(self):
        rows = {}
        for t in self.data["throughput"]:
            unit = "TOPS" if t["precision"] in INTEGER_PRECISIONS else "TFLOPS"
            # a figure printed for FP16 accumulate is a row of its own, never the comparable dense figure
            variant = t["accumulate"] != COMPARABLE_ACCUMULATE
            key = (t["precision"], t["engine"], t["accumulate"])
            precision = f"{t['precision']} ({t['accumulate']} accumulate)" if variant else t["precision"]
            rows.setdefault(key, ComputeRow(precision, t["engine"], unit))
            anchor = value_anchor(t["precision"], t["engine"], t["sparsity"])
            value = self.value(f"{t['precision']} {t['engine']} {t['sparsity']}", f"{number(t['tflops'])} {unit}",
                               self.cited.get(("throughput", t["slug"], "tflops")), anchor=anchor, unit=unit)
            value.label = (f"{t['precision'].upper()} {t['engine']} {'dense' if t['sparsity'] == 'dense' else '2:4 sparse'}"
                           + (f", {t['accumulate'].upper()} accumulate" if t["accumulate"] != COMPARABLE_ACCUMULATE else ""))
            if t["sparsity"] == "dense":
                rows[key].dense = value
            else:
                rows[key].sparse = value
        order = {p: i for i, p in enumerate(DENSE_PRECISIONS)}
        return sorted(rows.values(), key=lambda r: (r.unit == "TOPS", order.get(r.precision, 99), r.engine))

    def glance(self, compute):
        figures = [Glance(label(name), " ".join(filter(None, (self.kind_of(name), shown(name, self.row[name])))), name)
                   for name in GLANCE_FIELDS if self.row.get(name) is not None]
        for heading, precisions in GLANCE_PRECISIONS:
            dense = next((r.dense for p in precisions for r in compute
                          if r.precision == p and r.engine == "matrix" and r.dense), None)
            if dense:
                figures.append(Glance(heading, dense.text, dense.field))
        return figures

    def build(self):
        row = self.row
        compute = self.compute()
        peers = self.data["peers"]
        ids = ",".join([row["slug"], *(p["slug"] for p in peers)])
        identity = [v for v in map(self.field_value, IDENTITY) if v]
        sections = [(group.key, group.title, [v for v in map(self.field_value, names) if v])
                    for group, names in SECTIONS]
        in_tables = {"compute": [v for r in compute for v in (r.dense, r.sparse) if v]}
        first_cited = {sid: next((v for v in values + in_tables.get(sid, []) if v.citation), None)
                       for sid, values in [("identity", identity)] + [(sid, values) for sid, _, values in sections]}
        return Sheet(
            slug=row["slug"], name=row["name"], identity=identity, sections=sections, first_cited=first_cited,
            models=self.data["models"],
            compute=compute, glance=self.glance(compute), decode=decode_examples(self.data["decode"]),
            formats=self.data["formats"], prices=self.data["prices"],
            offers=self.data["offers"], articles=[article_shown(a) for a in self.data["articles"]],
            peers=[{**p, "href": self.row_url("accelerators", p["slug"]),
                    "compare": self.datasette.urls.path(f"/-/compare?ids={row['slug']},{p['slug']}")} for p in peers],
            compare_url=self.datasette.urls.path(f"/-/compare?ids={ids}"), release=self.release, note=row["note"])


async def measured_section(datasette, request, slug):
    """The sheet's Measured section: results of the latest round a round each, power results, achieved rates
    (serving/measured.py), energy at the reader's electricity price (`?kwh_usd=`)."""
    try:
        price = usd_per_kwh(request.args.get("kwh_usd", "").strip())
    except ParameterError as error:
        raise BadRequest(str(error)) from None
    db = datasette.get_database(DATABASE)
    results, rates = await read(db, [slug])
    return {"rounds": by_round(results.get(slug, [])), "rates": rates.get(slug, []),
            "energy": await read_energy(db, slug, await electricity_price(db, price))}


@hookimpl
def extra_template_vars(view_name, database, table, request, datasette):
    """The spec sheet: `sheet` and its Measured section, `measured`."""
    if not is_row_page(view_name, database, table, "accelerators"):
        return {}

    async def made(slug, data):
        if not data["row"]:
            return {}
        return {"sheet": SheetBuilder(datasette, request, data).build(),
                "measured": await measured_section(datasette, request, slug)}
    return row_page_vars(datasette, request, read_sheet_rows, made)


@hookimpl
def prepare_jinja2_environment(env):
    """`measured_number`: a measured figure with no more digits than a measurement gives (serving/measured.py)."""
    env.filters["measured_number"] = measured_number
