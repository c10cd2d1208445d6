"""The calculator: "what fits this model?" as a form a reader fills from lists.

The page asks the domain directly: each parameter through its one check
(domain/parameters.py), every accelerator's figures read once
(serving/what_fits.py, the rows the `what-fits` canned query reads too), and
each accelerator sized by domain/fits.py, the function the canned query
reaches through `llm_fit`. It offers only the choices the tables hold (the
weights of the chosen model, context presets up to its window), names every
problem at once as the form labels the field, with the closest names for an
unknown one, and answers a context beyond the model's window with the window.
The answer comes first, short (the best rows, "show all" for the rest),
filtered by accelerator, vendor and class, ranked (native fits first, then by
decode ceiling), each figure in words and each blank with its reason. The form
is sent with GET by its button, so every state is a permalink, and the page
works without JavaScript.
"""

import math
from dataclasses import asdict, dataclass, fields
from typing import NamedTuple
from urllib.parse import urlencode

from datasette import hookimpl
from datasette.utils.asgi import Response

from domain import fits, parameters, runtimes
from domain.parameters import Check, ParameterError
from serving import what_fits
from serving.metadata import DATABASE

PATH = "/-/what-fits"
CONTEXT_PRESETS = (("4k", 4096), ("8k", 8192), ("32k", 32768), ("128k", 131072), ("1M", 1048576))
BATCH_DEFAULT = "1"
SHORT_ANSWER = 12  # rows before "show all": the best of every class fit on a phone's few screens
# The fields as the page labels them: problems name them so.
LABELS = {"model": "Model", "weights": "Weights", "kv_format": "KV cache format", "context": "Context",
          "batch": "Batch", "tp": "Devices (tensor parallel)", "runtime": "Runtime",
          "max_num_seqs": "Sequences at once (max_num_seqs)"}
# A layout a reader would build: one box of consumer or workstation cards, a few
# unified-memory computers or edge modules, up to eight 8-device nodes of the
# rest. A layout beyond its class's cap is no answer: the page says so and shows no speed.
SENSIBLE_DEVICES = {"consumer-gpu": 8, "workstation-gpu": 8, "unified-memory-system": 4, "edge-module": 2}
SENSIBLE_DEVICES_DEFAULT = 64
CLASS_PLURALS = {"consumer-gpu": "consumer cards", "workstation-gpu": "workstation cards",
                 "unified-memory-system": "unified-memory computers", "edge-module": "edge modules"}

CHOICES_SQL = {
    "models": "select slug, name, max_context from models order by name",
    "checkpoints": "select slug, model, name from checkpoints order by name",
    "formats": "select slug, name, kind, coalesce(effective_bits, bits) as bits from number_formats "
               "where (kind <> 'integer' or slug = 'int8') and coalesce(effective_bits, bits) is not null "
               "order by bits desc, slug",  # a format of unknown size sizes nothing
    "accelerators": "select slug, name, vendor, device_class from accelerators where device_class <> 'dpu' order by name",
    "vendors": "select distinct v.slug, v.name from vendors v join accelerators a on a.vendor = v.slug order by v.name",
    "classes": "select distinct device_class as slug from accelerators where device_class <> 'dpu' order by 1",
}
MODEL_SQL = "select architecture from models where slug = ?"
PRICES_SQL = ("select accelerator, currency, min(price_per_gpu_hour) from cloud_offers "
              "where current and price_per_gpu_hour is not null group by accelerator, currency order by currency")


@dataclass(frozen=True)
class Asked:
    """A question the page can size: every parameter checked."""

    model: str
    checkpoint: str      # '' when one format is given for every weight
    weight_format: str   # '' when a checkpoint is given
    kv_format: str
    kv_bits: float
    context: int
    batch: int
    tp: int | None       # None: the fewest devices that fit
    runtime: str
    max_num_seqs: int | None  # None: the runtime's own limit


@dataclass
class Form:
    """The reader's choices, as written."""
    model: str = ""
    weights: str = ""       # "checkpoint:<slug>" or "format:<slug>"
    kv_format: str = "fp16"
    context: str = "32k"
    batch: str = BATCH_DEFAULT
    devices: str = ""
    runtime: str = runtimes.DEFAULT_RUNTIME
    max_num_seqs: str = ""  # empty: the runtime's own limit of sequences run together
    accelerator: str = ""   # filters of the answer
    vendor: str = ""
    device_class: str = ""
    all: str = ""           # "1": every row, not the short answer

    @classmethod
    def from_request(cls, request):
        return cls(**{f.name: request.args.get(f.name, f.default).strip() for f in fields(cls)})

    def asked(self, choices) -> tuple[Asked | None, list["Problem"]]:
        """The question, or every problem of the form at once, each naming its field as labelled."""
        formats = {f["slug"]: f["name"] for f in choices["formats"]}
        weights = {f"format:{slug}": name for slug, name in formats.items()}
        weights.update({f"checkpoint:{c['slug']}": c["name"] for c in choices["checkpoints"] if c["model"] == self.model})
        values, problems = parameters.problems(vars(self) | {"tp": self.devices}, (
            Check("model", lambda v: parameters.choice("model", v, {m["slug"]: m["name"] for m in choices["models"]},
                                                      "models")),
            Check("weights", lambda v: parameters.choice("weights", v, weights, "weights of this model")),
            Check("kv_format", lambda v: parameters.choice("kv_format", v, formats, "number formats")),
            Check("context", parameters.context), Check("batch", parameters.batch, BATCH_DEFAULT),
            Check("tp", parameters.devices), Check("runtime", parameters.runtime),
            Check("max_num_seqs", parameters.max_num_seqs)))
        if problems:
            return None, [labelled(problem) for problem in problems]
        kind, _, slug = values["weights"].partition(":")
        bits = {f["slug"]: f["bits"] for f in choices["formats"]}
        return Asked(values["model"], slug if kind == "checkpoint" else "", slug if kind == "format" else "",
                     values["kv_format"], bits[values["kv_format"]], values["context"], values["batch"], values["tp"],
                     values["runtime"], values["max_num_seqs"]), []

    def permalink(self, path, **changes):
        return f"{path}?" + urlencode({k: v for k, v in (vars(self) | changes).items() if v or k == "model"})

    def keeps(self, row):
        """Whether a row passes the accelerator, vendor and class filters."""
        return all(not wanted or row[column] == wanted for wanted, column in (
            (self.accelerator, "accelerator"), (self.vendor, "vendor"), (self.device_class, "device_class")))


class Problem(NamedTuple):
    """A problem of the form as the page shows it: the field named as labelled, and the closest choices."""

    field: str   # the form's field
    text: str
    near: tuple[tuple[str, str], ...]  # (value, name) of each close choice, best first


def labelled(problem: ParameterError) -> Problem:
    """A parameter's problem with the field named as the page labels it ("tp" never reaches a reader)."""
    return Problem(problem.name, f"{LABELS.get(problem.name, problem.name)} {problem.problem}", problem.near)


# Figures as a reader reads them: no more digits than the sources give

def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits, thousands separated, no trailing zeros: 1,040 · 107 · 3.6."""
    if value == 0:
        return "0"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{round(value, decimals):,.{max(decimals, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


DURATIONS = ((3_600_000, "h"), (60_000, "min"), (1_000, "s"))


def duration(ms: float) -> str:
    """A time in the unit a reader would use, two significant digits: 300 ms, 4.6 s, 1.5 h."""
    for size, unit in DURATIONS:
        if ms >= size:
            return f"{significant(ms / size, 2)} {unit}"
    return f"{significant(ms, 2)} ms"


def price_text(prices: list[tuple[str, float]]) -> str:
    """The cheapest current rental per GPU-hour in each currency, to the cent."""
    return "; ".join(f"{price:.2f} {currency}" for currency, price in prices) or "no rental price on record"


# The answer's rows

def sensible(row) -> bool:
    """Whether the layout that holds the model stays within its class's cap."""
    devices = devices_that_fit(row)
    return devices is not None and devices <= SENSIBLE_DEVICES.get(row["device_class"], SENSIBLE_DEVICES_DEFAULT)


def devices_that_fit(row):
    """Devices of the layout that holds the model: the one answered, or the smallest that fits instead (None: none)."""
    return row["devices_needed"] if row["fits"] else row.get("smallest_devices_that_fit")


def gb1(value):
    return None if value is None else round(value, 1)


def row_of(device: dict, fit: fits.Fit, prices) -> dict:
    """One accelerator's answer, its GB to 0.1 and its speeds only where it fits."""
    row = {"accelerator": device["slug"], "name": device["name"], "vendor": device["vendor"], "family": device["family"],
           "device_class": device["device_class"], "memory_gb": gb1(device["memory"]),
           "memory_estimated": device["memory_estimated"], "native": device["native"], "fits": fit.fits,
           "tp": fit.tp, "pp": fit.pp, "devices_needed": fit.devices, "problem": fit.problem,
           "weights_gb_per_device": gb1(fit.weights_gb_per_device), "kv_cache_gb_per_device": gb1(fit.kv_gb_per_device),
           "reserve_gb_per_device": gb1(fit.reserve_gb_per_device),
           "headroom_gb_per_device": gb1(fit.headroom_gb_per_device),
           "needed_gb_per_device": gb1(fit.needed_gb_per_device), "usable_gb_per_device": gb1(fit.usable_gb_per_device),
           "shortfall_gb_per_device": gb1(fit.shortfall_gb_per_device), "smallest_devices_that_fit": fit.smallest_devices,
           "smallest_tp": fit.smallest_tp, "smallest_pp": fit.smallest_pp,
           "has_bandwidth": device["memory_bandwidth_gbs"] is not None, "has_peak": device["dense_tflops"] is not None,
           "prices": price_text(prices)}
    row["sensible"] = bool(fit.fits) and sensible(row)
    speeds = row["sensible"] and fit.tokens_per_s_per_sequence is not None
    row["ceiling_tokens_per_s"] = fit.tokens_per_s_per_sequence if speeds else None
    row["bound"] = fit.bound if speeds else None
    row["first_token_ms"] = fit.first_token_ms if row["sensible"] else None
    row["expected_tokens_per_s"] = fit.expected_tokens_per_s_per_sequence if speeds else None
    row["expected_basis"] = fit.expected_basis if speeds else None
    return row


def ranked(rows):
    """Sensible fits first, native formats first among them, then other fits, then the rest;
    within each, the highest decode ceiling first."""
    def key(row):
        fits_here = bool(row["fits"]) and row.get("sensible", True)
        return (not (fits_here and row["native"] == 1), not fits_here, not row["fits"],
                -(row["ceiling_tokens_per_s"] or 0), row["accelerator"])
    return sorted(rows, key=key)


def memory_split(row):
    """Percentages of the device's memory taken by weights, KV cache, the runtime's reserve and its headroom, for the bar."""
    parts = {"weights": row["weights_gb_per_device"], "kv": row["kv_cache_gb_per_device"],
             "reserve": row["reserve_gb_per_device"], "headroom": row.get("headroom_gb_per_device")}
    memory = row.get("memory_gb") or row["usable_gb_per_device"] or 0
    if not memory or row["weights_gb_per_device"] is None:
        return {}
    scale = max(memory, sum(v or 0 for v in parts.values()))
    return {name: round(100 * (value or 0) / scale, 1) for name, value in parts.items()}


def counts(rows):
    """Accelerators that hold the model on one device, on up to 8, and in any sensible layout."""
    needed = [devices_that_fit(r) for r in rows]
    return {"one": needed.count(1), "eight": sum(1 for n in needed if n is not None and n <= 8),
            "any": sum(1 for r in rows if sensible(r)), "of": len(rows)}


def sized_rows(conn, asked: Asked) -> list[dict]:
    """Every accelerator's answer to `asked`, asked of domain/fits.py (run in Datasette's database thread)."""
    architecture, = conn.execute(MODEL_SQL, (asked.model,)).fetchone()
    prices = {}
    for accelerator, currency, price in conn.execute(PRICES_SQL):
        prices.setdefault(accelerator, []).append((currency, price))
    cursor = conn.execute(what_fits.PAGE, asdict(asked))
    devices = [dict(zip([c[0] for c in cursor.description], values)) for values in cursor]
    rows = []
    for device in devices:
        question = fits.question(architecture, device["bits"], fits.DeviceFigures(
            device["memory"], device["memory_bandwidth_gbs"], device["dense_tflops"], device["link_gbs"], device["slug"],
            device["bandwidth_share"]), asked.context, asked.batch, asked.kv_bits, runtime=asked.runtime,
            max_num_seqs=asked.max_num_seqs)
        rows.append(row_of(device, fits.fit(question, asked.tp), prices.get(device["slug"], [])))
    return ranked(rows)


def presets(model):
    """Context presets up to the model's window (all when it states none)."""
    window = (model or {}).get("max_context")
    return [(label, tokens) for label, tokens in CONTEXT_PRESETS if window is None or tokens <= window]


async def choices(datasette):
    db = datasette.get_database(DATABASE)
    return {name: [dict(r) for r in (await db.execute(sql)).rows] for name, sql in CHOICES_SQL.items()}


async def what_fits_page(request, datasette):
    form = Form.from_request(request)
    everything = await choices(datasette)
    model = next((m for m in everything["models"] if m["slug"] == form.model), None)
    context = {"form": form, "presets": presets(model), **everything, "model": model, "errors": [], "rows": None,
               "window": None, "runtimes": runtimes.RUNTIMES, "runtime": runtimes.RUNTIMES.get(form.runtime),
               "model_checkpoints": [c for c in everything["checkpoints"] if c["model"] == form.model],
               "sensible_devices": SENSIBLE_DEVICES, "sensible_default": SENSIBLE_DEVICES_DEFAULT,
               "class_plurals": CLASS_PLURALS, "significant": significant, "duration": duration}
    status = 200
    if form.model and form.weights:
        asked, context["errors"] = form.asked(everything)
        if context["errors"]:
            status = 400
        elif model["max_context"] and asked.context > model["max_context"]:
            context["window"] = f"{model['name']} reads at most {model['max_context']:,} tokens"
            context["tokens"] = asked.context
        else:
            db = datasette.get_database(DATABASE)
            rows = await db.execute_fn(lambda conn: sized_rows(conn, asked))
            answer(datasette, form, asked, rows, context)
    context["permalink"] = form.permalink(datasette.urls.path(PATH))
    html = await datasette.render_template("reader_what_fits.html", context, request=request)
    return Response.html(html, status=status)


def answer(datasette, form, asked, rows, context):
    """The rows the filters keep, short unless all were asked for, and the links onward."""
    for row in rows:
        row.update(split=memory_split(row), href=datasette.urls.row(DATABASE, "accelerators", row["accelerator"]))
    kept = [row for row in rows if form.keeps(row)]
    names = {f"format:{f['slug']}": f["name"].split(" (")[0] for f in context["formats"]}
    names.update({f"checkpoint:{c['slug']}": c["name"] for c in context["model_checkpoints"]})
    context.update(weights_name=names[form.weights], kv_name=names[f"format:{asked.kv_format}"])
    context.update(rows=kept if form.all else kept[:SHORT_ANSWER], counts=counts(kept), tokens=asked.context,
                   show_all=form.permalink(datasette.urls.path(PATH), all="1") + "#answer"
                   if len(kept) > SHORT_ANSWER and not form.all else None)
    args = {"model": asked.model, "checkpoint": asked.checkpoint, "weight_format": asked.weight_format,
            "kv_format": asked.kv_format, "context": str(asked.context), "batch": str(asked.batch),
            "runtime": asked.runtime, "max_num_seqs": "" if asked.max_num_seqs is None else str(asked.max_num_seqs)}
    database = datasette.urls.database(DATABASE)
    context["more"] = {
        "longest_context": f"{database}/longest-context?" + urlencode({k: v for k, v in args.items() if k != "context"}),
        "largest_batch": f"{database}/largest-batch?" + urlencode({k: v for k, v in args.items() if k != "batch"}),
        "sql": f"{database}/what-fits?" + urlencode(args),
    }


@hookimpl
def register_routes():
    return [(rf"^{PATH}$", what_fits_page)]
