"""Cost per million output tokens as a reader page: a model and its weights from lists, an answer per accelerator.

For every accelerator rented on demand today, each instance size (GPU count) at its cheapest current price
is sized with tensor parallelism over its GPUs by domain/fits.py (the function the `cost-per-million-tokens`
canned query reaches through `llm_fit`), with the KV cache of the batch's sequences in 16 bits; its expected
decode speed (domain/speed.py, fitted on published measurements) gives the price of a million output tokens.
The accelerator's answer is its cheapest instance, per currency (USD and EUR are never added or converted),
cheapest first; an accelerator with no cost says why in words. Money is rounded to three significant digits
(the speed it is divided by is an estimate), prices as the provider prints them.
"""

import math
from dataclasses import dataclass
from urllib.parse import urlencode

from datasette import hookimpl
from datasette.utils.asgi import Response

from domain import fits, parameters
from domain.parameters import Check
from serving import what_fits
from serving.metadata import DATABASE
from serving.query_args import COST_DEFAULTS

PATH = "/-/cost-per-token"
DEFAULTS = {"model": COST_DEFAULTS["model"], "weights": COST_DEFAULTS["weight_format"], "batch": COST_DEFAULTS["batch"],
            "context": COST_DEFAULTS["context"]}
CONTEXTS = ((2048, "2k"), (8192, "8k"), (32768, "32k"), (131072, "128k"))
KV_FORMAT = "bf16"  # the KV cache in 16 bits, as the canned query sizes it
HOUR_TOKENS_PER_MILLION = 3600 / 1e6  # tokens per second × this = millions of tokens per hour

CHOICES_SQL = {
    "models": "select slug, name from models order by name",
    "formats": "select slug, name from number_formats where kind <> 'integer' or slug = 'int8' "
               "order by coalesce(effective_bits, bits) desc, slug",
}
# Each accelerator's cheapest current on-demand price per instance size and currency.
OFFERS_SQL = """select accelerator, gpu_count, currency, provider, instance, slug, price_per_hour, observed from (
  select o.*, row_number() over (partition by o.accelerator, o.gpu_count, o.currency
                                 order by o.price_per_hour, o.slug) as rank
  from cloud_offers o where o.current and o.price_per_hour is not null and o.gpu_count > 0)
where rank = 1 order by accelerator, currency, gpu_count"""
MODEL_SQL = "select architecture from models where slug = ?"


def money(value: float) -> str:
    """A cost to three significant digits: 130 · 12.9 · 1.09 · 0.576 · 0.0412."""
    decimals = max(0, 2 - math.floor(math.log10(abs(value)))) if value else 0
    return f"{value:,.{decimals}f}"


def printed(price: float) -> str:
    """A price as its provider prints it: no float noise (1.8214000000000001 is 1.8214)."""
    return f"{round(price, 6):,.6f}".rstrip("0").rstrip(".")


@dataclass
class Row:
    """One accelerator's answer in one currency: its cheapest instance per million tokens, or why none."""

    accelerator: str
    name: str
    currency: str
    cost: float | None = None
    ceiling_cost: float | None = None
    tokens_per_s: float | None = None
    gpus: int | None = None
    provider: str | None = None
    instance: str | None = None
    price_per_hour: float | None = None
    observed: str | None = None
    reason: str | None = None   # why there is no cost, in words
    href: str = ""              # its spec sheet
    native: bool | None = None  # whether it runs the weights' format natively (None: it lists no formats)


def sizes_rented(offers: list[dict]) -> str:
    """The instance sizes on offer, in words: "1 accelerator", "1, 4 or 6 accelerators"."""
    counts = [str(o["gpu_count"]) for o in offers]
    listed = counts[0] if len(counts) == 1 else f"{', '.join(counts[:-1])} or {counts[-1]}"
    return f"{listed} accelerator{'s' if len(counts) > 1 or offers[0]['gpu_count'] > 1 else ''}"


def why_not(device: dict | None, offers: list[dict], fit: fits.Fit | None) -> str:
    """Why no instance of an accelerator gives a cost: `fit` is the largest instance's."""
    if device is None:
        return "its memory size is not on record, so the model cannot be sized on it"
    rented = f"rented as {sizes_rented(offers)}"
    largest = "the largest" if len(offers) > 1 else "it"
    if fit.problem:
        return f"{rented}; {largest} cannot split the model: {fit.problem}"
    if not fit.fits:
        return (f"{rented}; {largest} is short of {fit.shortfall_gb_per_device:,.1f} GB on each accelerator "
                "for the weights and the KV cache")
    return "its memory bandwidth is not on record, so no speed (and no cost) is estimated"


def answer_for(device: dict | None, offers: list[dict], question) -> Row:
    """The cheapest instance of one accelerator in one currency, or the reason there is none."""
    first = offers[0]
    row = Row(first["accelerator"], device["name"] if device else first["accelerator"], first["currency"])
    best, last_fit = None, None
    for offer in offers:  # by GPU count, smallest first
        if device is None:
            break
        last_fit = fits.fit(question(device), offer["gpu_count"])
        speed = last_fit.expected_tokens_per_s if last_fit.fits else None
        if speed:
            cost = offer["price_per_hour"] / (speed * HOUR_TOKENS_PER_MILLION)
            if best is None or cost < best[0]:
                best = (cost, offer, last_fit)
    if best is None:
        row.reason = why_not(device, offers, last_fit)
        return row
    cost, offer, fit = best
    row.cost, row.tokens_per_s, row.gpus = cost, fit.expected_tokens_per_s, offer["gpu_count"]
    row.ceiling_cost = offer["price_per_hour"] / (fit.tokens_per_s * HOUR_TOKENS_PER_MILLION) if fit.tokens_per_s else None
    row.native = None if device["native"] is None else bool(device["native"])
    row.provider, row.instance, row.price_per_hour, row.observed = (offer["provider"], offer["instance"],
                                                                   offer["price_per_hour"], offer["observed"])
    return row


def cheapest_first(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r.cost is None, r.cost or 0, r.name))


def costed_rows(conn, asked: dict) -> dict[str, list[Row]]:
    """Every rented accelerator's answer, per currency, cheapest first (run in Datasette's database thread)."""
    architecture, = conn.execute(MODEL_SQL, (asked["model"],)).fetchone()
    cursor = conn.execute(what_fits.PAGE, {"model": asked["model"], "checkpoint": "", "weight_format": asked["weights"],
                                           "kv_format": KV_FORMAT})
    devices = {d["slug"]: d for d in (dict(zip([c[0] for c in cursor.description], v)) for v in cursor)}

    def question(device):
        return fits.question(architecture, device["bits"], fits.DeviceFigures(
            device["memory"], device["memory_bandwidth_gbs"], device["dense_tflops"], device["link_gbs"],
            device["slug"], device["bandwidth_share"]), asked["context"], asked["batch"], 16)

    cursor = conn.execute(OFFERS_SQL)
    grouped: dict[tuple, list[dict]] = {}
    for values in cursor:
        offer = dict(zip([c[0] for c in cursor.description], values))
        grouped.setdefault((offer["accelerator"], offer["currency"]), []).append(offer)
    names = dict(conn.execute("select slug, name from accelerators"))
    by_currency: dict[str, list[Row]] = {}
    for (accelerator, currency), offers in grouped.items():
        row = answer_for(devices.get(accelerator), offers, question)
        row.name = names.get(accelerator, accelerator)
        by_currency.setdefault(currency, []).append(row)
    # the currency with the most accelerators first
    return {c: cheapest_first(rows) for c, rows in sorted(by_currency.items(), key=lambda kv: (-len(kv[1]), kv[0]))}


def checks(choices) -> tuple[Check, ...]:
    models = {m["slug"]: m["name"] for m in choices["models"]}
    formats = {f["slug"]: f["name"] for f in choices["formats"]}
    return (Check("model", lambda v: parameters.choice("Model", v, models, "models"), DEFAULTS["model"]),
            Check("weights", lambda v: parameters.choice("Weights", v, formats, "number formats"), DEFAULTS["weights"]),
            Check("batch", parameters.batch, DEFAULTS["batch"]),
            Check("context", parameters.context, DEFAULTS["context"]))


async def cost_page(request, datasette):
    db = datasette.get_database(DATABASE)
    choices = {name: [dict(r) for r in (await db.execute(sql)).rows] for name, sql in CHOICES_SQL.items()}
    form = {name: request.args.get(name, "").strip() or DEFAULTS[name] for name in DEFAULTS}
    asked, problems = parameters.problems(form, checks(choices))
    # each problem in words, with the close names it offers as links that swap them in
    errors = [(str(e), [(name, f"{datasette.urls.path(PATH)}?{urlencode({**form, e.name.lower(): value})}")
                        for value, name in e.near]) for e in problems]
    context = {"form": form, "choices": choices, "contexts": CONTEXTS, "errors": errors, "currencies": None,
               "money": money, "printed": printed, "path": PATH}
    status = 400 if errors else 200
    if not errors:
        currencies = await db.execute_fn(lambda conn: costed_rows(conn, asked))
        for rows in currencies.values():
            for row in rows:
                row.href = datasette.urls.row(DATABASE, "accelerators", row.accelerator)
        top = max((r.cost for rows in currencies.values() for r in rows if r.cost), default=1)
        context.update(currencies=currencies, top=top, asked=asked,
                       model_name=next(m["name"] for m in choices["models"] if m["slug"] == asked["model"]),
                       format_name=next(f["name"] for f in choices["formats"] if f["slug"] == asked["weights"]),
                       canned=f"{datasette.urls.database(DATABASE)}/cost-per-million-tokens?" + urlencode(
                           {"model": asked["model"], "weight_format": asked["weights"], "batch": asked["batch"],
                            "context": asked["context"]}))
    html = await datasette.render_template("reader_cost.html", context, request=request)
    return Response.html(html, status=status)


@hookimpl
def register_routes():
    return [(rf"^{PATH}$", cost_page)]
