"""The compare page: /-/compare?ids=a,b,... puts 2 to 8 accelerators side by side.

The table is one SQL query (`compare_sql`): the page runs it and links to it as
CSV and as a Markdown table (datasette-copyable), so the downloads hold exactly
the table the reader sees. Fields, descriptions and units come from domain.schema;
throughput rows from the `throughput` table, dense figures only, one row per
precision and engine (a matrix and a vector figure are two measures). A best
value is marked only among columns of one scope.
"""

import urllib.parse
from dataclasses import dataclass, field

from datasette import hookimpl
from datasette.utils.asgi import Response

from domain.matching import closest
from domain.schema import AUTHORED, ENGINES, KIND_LABELS, TABLES_BY_NAME
from domain.units import DENSE_PRECISIONS
from serving.citation_text import shown_title
from serving.labels import FIELDS, IDENTITY, label
from serving.measured import compare_rows, read, read_compare_energy
from serving.metadata import DATABASE
from serving.site import query_path

MIN_IDS, MAX_IDS = 2, 8
MAX_IDS_CHARS = 800            # refused before any work: longer than 8 real slugs can be
NOT_SPECS = {"slug", "name", "source", "note", "launch_price_derived"}   # identity and provenance, shown elsewhere
# Best = highest, except for what the buyer pays in money and in power, where the
# lowest is marked. A lower-power part is usually a slower one: the per-watt and
# per-dollar rows below weigh the two together.
LOWER_IS_BETTER = {"tdp_w", "launch_price_usd", "cheapest_gpu_hour_usd"}
# Ratios of two cited values, computed in the query (division by zero gives NULL).
DERIVED = (
    ("memory_bandwidth_gbs_per_w", "GB/s per W", "Memory bandwidth per watt of board power (derived).",
     "round(a.memory_bandwidth_gbs / a.tdp_w, 2)"),
    ("memory_gb_per_1000_usd", "GB per 1,000 USD", "Memory per 1,000 USD of launch list price (derived).",
     "round(1000 * a.memory_gb / a.launch_price_usd, 2)"),
)
DERIVED_LABELS = {"memory_bandwidth_gbs_per_w": "Bandwidth per watt", "memory_gb_per_1000_usd": "Memory per 1,000 USD"}


@dataclass(frozen=True)
class Group:
    """Rows shown together under one heading; a folded group opens on a click (the page stays short)."""
    key: str
    title: str
    folded: bool


# What most comparisons read first stays open; identity and the rest fold (their values are on the spec sheets).
KEY_FIGURES = ("memory_gb", "memory_bandwidth_gbs", "tdp_w", "launch_price_usd", "cheapest_gpu_hour_usd")
GROUPS = (Group("key", "Key figures", False), Group("compute", "Dense compute", False),
          Group("derived", "Ratios", False), Group("identity", "Identity", True),
          Group("more", "Memory type, interconnect, formats and sources", True))
THROUGHPUT_DESCRIPTION = "Dense {name} on {engine} units: " + TABLES_BY_NAME["throughput"].field("tflops").description
# The key of a throughput row of the table: precision, engine and unit, so that no
# row holds two measures (the same naming as the columns of dense_throughput).
THROUGHPUT_KEY_SQL = ("t.precision || '_' || t.engine || "
                      "CASE WHEN (SELECT f.kind FROM number_formats f WHERE f.slug = t.precision) = 'integer' "
                      "THEN '_tops' ELSE '_tflops' END")


class BadIds(Exception):
    """A query string the page cannot answer; status 400 or 404."""

    def __init__(self, status, message, suggestions=()):
        super().__init__(message)
        self.status, self.message, self.suggestions = status, message, suggestions


@dataclass
class Spec:
    """One row of the table: a field of accelerators, a dense precision, or a ratio."""
    key: str
    unit: str | None
    description: str
    ref: str | None = None
    values: list = field(default_factory=list)
    shown: list = field(default_factory=list)
    citations: list = field(default_factory=list)
    best: set = field(default_factory=set)
    label: str = ""
    group: str = "more"

    @property
    def numeric(self):
        return self.unit is not None

    @property
    def heading(self):
        """The row's label as the page shows it, with its unit: "Memory bandwidth (GB/s)"."""
        return f"{self.label} ({self.unit})" if self.unit and not self.label.endswith(")") else self.label


def field_group(name):
    return "key" if name in KEY_FIGURES else "identity" if name in IDENTITY else "more"


def field_label(name):
    """A field's reader label (domain/schema.py), or a ratio's."""
    return label(name) if name in FIELDS else DERIVED_LABELS[name]


def spec_fields():
    return [f for f in AUTHORED["accelerators"].columns if f.name not in NOT_SPECS]


def sql_text(value):
    return "NULL" if value is None else "'" + str(value).replace("'", "''") + "'"


def sql_name(name):
    return '"' + name.replace('"', '""') + '"'


def spec_value_sql(f):
    """A field as one value; lists (JSON arrays) become comma-separated text."""
    if f.kind == "list":
        return f"(SELECT group_concat(value, ', ') FROM json_each(a.{f.name}))"
    return f"a.{f.name}"


def compare_sql(slugs, specs):
    """The compare table as one query: a row per spec, a column per accelerator (named by slug)."""
    picked = picked_sql(slugs)
    pairs = [(f.name, spec_value_sql(f)) for f in spec_fields()] + [(key, expr) for key, _, _, expr in DERIVED]
    spec_object = ", ".join(f"{sql_text(key)}, {expr}" for key, expr in pairs)
    rows = ",\n    ".join(f"({i}, {sql_text(s.key)}, {sql_text(s.unit)})" for i, s in enumerate(specs))
    columns = "".join(f",\n  max(CASE s.accelerator WHEN :a{i} THEN s.value END) AS {sql_name(slug)}"
                      for i, slug in enumerate(slugs, 1))
    return f"""WITH spec(accelerator, key, value) AS (
  SELECT a.slug, j.key, j.value
  FROM accelerators a, json_each(json_object({spec_object})) j
  WHERE a.slug IN ({picked})
  UNION ALL
  SELECT t.accelerator, {THROUGHPUT_KEY_SQL}, t.tflops FROM throughput t
  WHERE t.sparsity = 'dense' AND t.accumulate = 'fp32' AND t.accelerator IN ({picked})
),
fields(pos, field, unit) AS (VALUES
    {rows})
SELECT f.field, f.unit{columns}
FROM fields f JOIN spec s ON s.key = f.field
GROUP BY f.pos HAVING count(s.value) > 0 ORDER BY f.pos"""


def params(slugs):
    return {f"a{i}": slug for i, slug in enumerate(slugs, 1)}


def picked_sql(slugs):
    """The IN list matching `params`: every slug is a parameter."""
    return ", ".join(f":{name}" for name in params(slugs))


def parse_ids(request):
    """The slugs asked for, in the reader's order; BadIds(400) when the list cannot be one."""
    raw = ",".join(request.args.getlist("ids"))
    if len(raw) > MAX_IDS_CHARS:
        raise BadIds(400, f"The ids list is too long: give {MIN_IDS} to {MAX_IDS} accelerator slugs.")
    slugs = [part.strip() for part in raw.split(",") if part.strip()]
    if not MIN_IDS <= len(slugs) <= MAX_IDS:
        raise BadIds(400, f"Give {MIN_IDS} to {MAX_IDS} accelerator slugs, comma-separated "
                          f"(for example ?ids=first-slug,second-slug); got {len(slugs)}.")
    repeated = sorted({s for s in slugs if slugs.count(s) > 1})
    if repeated:
        raise BadIds(400, f"Each accelerator can be compared once; listed more than once: {', '.join(repeated)}.")
    return slugs


def close_matches(unknown, catalogue, slugs):
    """Known accelerators whose slug resembles `unknown` (domain/matching.py, as on the 404 page), each with
    the URL that swaps it in."""
    names = {a["slug"]: a["name"] for a in catalogue}
    return [{"slug": slug, "name": names[slug],
             "query": "ids=" + urllib.parse.quote(",".join(slug if s == unknown else s for s in slugs), safe=",")}
            for slug in closest(unknown, list(names))]


def check_known(slugs, catalogue):
    known = {a["slug"] for a in catalogue}
    unknown = [s for s in slugs if s not in known]
    if unknown:
        suggestions = [{"unknown": u, "matches": close_matches(u, catalogue, slugs)} for u in unknown]
        raise BadIds(404, f"No accelerator has the slug {', '.join(unknown)}.", suggestions)


async def load_catalogue(db):
    """Every accelerator: the picker, the column heads and the close matches."""
    result = await db.execute(
        "SELECT a.slug, a.name, a.device_class, a.scope, v.name AS vendor FROM accelerators a "
        "JOIN vendors v ON v.slug = a.vendor "
        "ORDER BY v.name, a.name")
    return [dict(r) for r in result.rows]


async def dense_specs(db, slugs):
    """One row per dense precision and engine any of them states, in the order of
    domain.units.DENSE_PRECISIONS, matrix before vector."""
    result = await db.execute(
        f"SELECT DISTINCT t.precision, t.engine, {THROUGHPUT_KEY_SQL} AS key, f.name, f.kind "
        "FROM throughput t JOIN number_formats f ON f.slug = t.precision "
        f"WHERE t.sparsity = 'dense' AND t.accumulate = 'fp32' AND t.accelerator IN ({picked_sql(slugs)})", params(slugs))
    order = {p: i for i, p in enumerate(DENSE_PRECISIONS)}
    rows = sorted(result.rows, key=lambda r: (order.get(r["precision"], len(order)), r["precision"],
                                               ENGINES.index(r["engine"])))
    return [Spec(r["key"], "TOPS" if r["kind"] == "integer" else "TFLOPS",
                 THROUGHPUT_DESCRIPTION.format(name=r["name"], engine=r["engine"]),
                 label=f"{r['precision'].upper()} {r['engine']}", group="compute") for r in rows]


async def all_specs(db, slugs):
    fields = [Spec(f.name, f.unit, f.description, f.ref if f.kind == "ref" else None,
                   label=field_label(f.name), group=field_group(f.name)) for f in spec_fields()]
    derived = [Spec(key, unit, description, label=DERIVED_LABELS[key], group="derived")
               for key, unit, description, _ in DERIVED]
    return fields + await dense_specs(db, slugs) + derived


async def citations(db, slugs):
    """(accelerator, spec key) -> citation slug, tier, source title (`shown`, a derived label told from a title) and URL,
    for every cited value."""
    picked = picked_sql(slugs)
    result = await db.execute(f"""
        SELECT c.row_slug AS accelerator, c.field AS key, c.slug, c.tier, s.title, s.label, s.url
        FROM citations c JOIN sources s ON s.slug = c.source
        WHERE c.table_name = 'accelerators' AND c.row_slug IN ({picked})
        UNION ALL
        SELECT t.accelerator, {THROUGHPUT_KEY_SQL}, c.slug, c.tier, s.title, s.label, s.url
        FROM throughput t
        JOIN citations c ON c.table_name = 'throughput' AND c.row_slug = t.slug AND c.field = 'tflops'
        JOIN sources s ON s.slug = c.source
        WHERE t.sparsity = 'dense' AND t.accumulate = 'fp32' AND t.accelerator IN ({picked})""", params(slugs))
    return {(r["accelerator"], r["key"]): {**dict(r), "shown": shown_title(r["title"], r["label"])} for r in result.rows}


def mark_best(spec, comparable=True):
    """Mark the best values, when at least two differ (see LOWER_IS_BETTER) and the
    columns are `comparable`: values of one scope (a system's memory is not a GPU's)."""
    present = [v for v in spec.values if v is not None]
    if not spec.numeric or len(set(present)) < 2 or not comparable:
        return
    best = min(present) if spec.key in LOWER_IS_BETTER else max(present)
    spec.best = {i for i, v in enumerate(spec.values) if v == best}


async def table(db, slugs, specs, sql, one_scope):
    """Fill the specs from the compare query; return those with at least one value.
    Best values are marked only when the columns share `one_scope`."""
    result = await db.execute(sql, params(slugs))
    cited = await citations(db, slugs)
    by_key = {s.key: s for s in specs}
    rows = []
    for row in result.rows:
        spec = by_key[row["field"]]
        spec.values = [row[slug] for slug in slugs]
        spec.shown = [display(v) for v in spec.values]
        spec.citations = [cited.get((slug, spec.key)) for slug in slugs]
        mark_best(spec, one_scope)
        rows.append(spec)
    for spec in rows:  # the kind of figure before it, where its field has one: "TBP 450"
        kind_by = FIELDS[spec.key].kind_by if spec.key in FIELDS else None
        kinds = by_key[kind_by].values if kind_by in by_key else []
        if len(kinds) == len(spec.shown):
            spec.shown = [f"{KIND_LABELS[kind]} {shown}" if kind and shown is not None else shown
                          for kind, shown in zip(kinds, spec.shown)]
    return rows


async def articles(db, slugs):
    """The catalogued articles that discuss each accelerator, newest first, each with the name to show
    (an untitled article's derived label without its mark: the page labels it "title not published")."""
    result = await db.execute(
        "SELECT aa.accelerator, a.slug, a.label, a.title, a.language, a.published FROM article_accelerators aa "
        f"JOIN articles a ON a.slug = aa.article WHERE aa.accelerator IN ({picked_sql(slugs)}) "
        "ORDER BY a.published IS NULL, a.published DESC, a.label", params(slugs))
    return {slug: [{**dict(r), "shown": shown_title(r["title"], r["label"])} for r in result.rows
                   if r["accelerator"] == slug] for slug in slugs}


def chart(rows, columns):
    """Small multiples: one bar chart per numeric row, bars as fractions of the row's largest value."""
    charts = []
    for spec in rows:
        present = [v for v in spec.values if v is not None]
        if not spec.numeric or not present or max(present) <= 0:
            continue
        top = max(present)
        bars = [{"name": c["name"], "shown": shown, "fraction": (v or 0) / top, "best": i in spec.best}
                for i, (c, v, shown) in enumerate(zip(columns, spec.values, spec.shown))]
        charts.append({"spec": spec, "bars": bars})
    return charts


def query_links(datasette, sql, slugs):
    """The compare table as CSV, as a Markdown table, and as an editable SQL query."""
    base = {"sql": sql, **params(slugs)}

    def url(fmt, extra=None):
        return datasette.urls.path(query_path(fmt)) + "?" + urllib.parse.urlencode({**base, **(extra or {})})
    return {"csv": url("csv"), "markdown": url("copyable", {"_table_format": "github"}),
            "markdown_raw": url("copyable", {"_table_format": "github", "_raw": "1"}),
            "sql": url(None)}


async def comparison(datasette, db, slugs, known):
    """Everything the compare page shows."""
    by_slug = {a["slug"]: a for a in known}
    columns = [by_slug[s] for s in slugs]
    specs = await all_specs(db, slugs)
    sql = compare_sql(slugs, specs)
    one_scope = len({c["scope"] for c in columns}) == 1
    rows = await table(db, slugs, specs, sql, one_scope)
    groups = [{"group": g, "rows": [r for r in rows if r.group == g.key]} for g in GROUPS]
    return {"columns": columns, "rows": rows, "groups": [g for g in groups if g["rows"]],
            "chart": chart(rows, columns), "one_scope": one_scope,
            "articles": await articles(db, slugs), "links": query_links(datasette, sql, slugs),
            "lower_is_better": sorted(field_label(k) for k in LOWER_IS_BETTER), "measured": await measured(db, slugs),
            "energy": await read_compare_energy(db, slugs)}


async def measured(db, slugs):
    """The measured rows, like with like: benchmark results of every round, achieved rates (serving/measured.py)."""
    results, rates = await read(db, slugs, latest_only=False)
    return compare_rows(slugs, results, rates)


def display(value):
    """A value as the page shows it: thousands separated, no trailing .0."""
    if isinstance(value, float):
        return f"{value:,.10g}"
    if isinstance(value, int):
        return f"{value:,}"
    return value


async def compare(request, datasette):
    db = datasette.get_database(DATABASE)
    known = await load_catalogue(db)
    if "ids" not in request.args:
        # ?picked=: the picks of the comparison the reader comes from, kept checked
        picked = request.args.get("picked", "").split(",")
        return await render(datasette, request, "compare_pick.html", {"catalogue": known, "checked": picked})
    try:
        slugs = parse_ids(request)
        if request.args.getlist("ids") != [",".join(slugs)]:
            # Checkbox forms send ids=a&ids=b: one comma-separated list is the permalink.
            return Response.redirect(request.path + "?" + urllib.parse.urlencode({"ids": ",".join(slugs)}, safe=","))
        check_known(slugs, known)
    except BadIds as bad:
        context = {"catalogue": known, "error": bad.message, "suggestions": bad.suggestions,
                   "checked": ",".join(request.args.getlist("ids")).split(",")}
        return await render(datasette, request, "compare_pick.html", context, bad.status)
    return await render(datasette, request, "compare.html", await comparison(datasette, db, slugs, known))


async def render(datasette, request, template, context, status=200):
    html = await datasette.render_template(template, context, request=request)
    return Response.html(html, status=status)


@hookimpl
def register_routes():
    return [(r"^/-/compare$", compare)]


@hookimpl
def menu_links(datasette):
    return [{"href": datasette.urls.path("/-/compare"), "label": "Compare accelerators"}]


@hookimpl
def table_actions(datasette, database, table):
    if database == DATABASE and table in ("accelerators", "dense_throughput"):
        return [{"href": datasette.urls.path("/-/compare"), "label": "Compare accelerators side by side"}]
