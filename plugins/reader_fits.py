"""The calculator: "what fits this model?" as a form a reader fills from lists.

The answer is the `what-fits` canned query (metadata.yml; its sizing functions
in plugins/llm_math.py, formulas in docs/LLM_MATH.md), asked through Datasette's
JSON API: this page only offers the choices the tables hold (the weights of the
chosen model, context presets up to its window), checks what was typed and
names the field as the page labels it, reads a context written as `32k` or
`128K`, answers a context beyond the model's window with the window, filters
the rows by accelerator, vendor and class, counts the devices that hold the
model (at one device, up to 8, and in any sensible layout), ranks the answer
(native fits first, then by decode ceiling) and draws each device's memory
split with the runtime's reserve named. The form is sent with GET by its
button, so every state is a permalink, and the page works without JavaScript.
"""

import re
from dataclasses import dataclass, fields
from urllib.parse import urlencode

from datasette import hookimpl
from datasette.utils.asgi import Response

from domain import runtimes
from serving.metadata import DATABASE

PATH = "/-/what-fits"
CONTEXT_PRESETS = (("4k", 4096), ("8k", 8192), ("32k", 32768), ("128k", 131072), ("1M", 1048576))
BATCH_DEFAULT = "1"
# 32k = 32 x 1024 tokens: context lengths are counted in binary thousands (Llama's 128K is 131072).
CONTEXT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")
MULTIPLIERS = {"": 1, "k": 1024, "m": 1024 * 1024}
# The fields as the page labels them, with their limits: errors name them so.
LABELS = {"model": "Model", "weights": "Weights", "checkpoint": "Weights", "weight_format": "Weights",
          "kv_format": "KV cache format", "context": "Context", "batch": "Batch",
          "devices": "Devices (tensor parallel)", "tp": "Devices (tensor parallel)", "runtime": "Runtime"}
LIMITS = {"batch": 4096, "devices": 8}  # the layouts proposed stay within one 8-device node for TP
MAX_CONTEXT = 16 * 1024 * 1024
# A layout a reader would build: one box of consumer or workstation cards, a few
# unified-memory computers or edge modules, up to eight 8-device nodes of the
# rest. "N of M hold it" counts these only (never a stack of 40 edge modules).
SENSIBLE_DEVICES = {"consumer-gpu": 8, "workstation-gpu": 8, "unified-memory-system": 4, "edge-module": 2}
SENSIBLE_DEVICES_DEFAULT = 64

CHOICES_SQL = {
    "models": "select slug, name, max_context from models order by name",
    "checkpoints": "select slug, model, name from checkpoints order by name",
    "formats": "select slug, name, kind from number_formats where kind <> 'integer' or slug = 'int8' order by bits desc, slug",
    "accelerators": "select slug, name, vendor, device_class from accelerators where device_class <> 'dpu' order by name",
    "vendors": "select distinct v.slug, v.name from vendors v join accelerators a on a.vendor = v.slug order by v.name",
    "classes": "select distinct device_class as slug from accelerators where device_class <> 'dpu' order by 1",
}


class FormError(ValueError):
    """What the reader typed that the page cannot use, naming the field as labelled."""


def context_tokens(text):
    """Tokens of a context written as a reader writes it: 32768, 32k, 128K, 1M (k = 1024)."""
    match = CONTEXT.match(text or "")
    if not match:
        raise FormError(f"Context {text!r}: write a number of tokens, e.g. 32768, 32k or 128K")
    tokens = float(match.group(1)) * MULTIPLIERS[match.group(2).lower()]
    if tokens < 1 or not tokens.is_integer() or tokens > MAX_CONTEXT:
        raise FormError(f"Context {text!r}: a whole number of tokens from 1 to {MAX_CONTEXT:,} (16M), e.g. 32k")
    return int(tokens)


def whole_field(name, text, required):
    """A whole-number field within its limits, or FormError naming it as labelled."""
    if text == "" and not required:
        return ""
    limit = LIMITS[name]
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= limit:
        raise FormError(f"{LABELS[name]} must be a whole number from 1 to {limit:,}, got {text!r}")
    return str(int(text))


@dataclass
class Form:
    """The reader's choices, as written, and the canned query's arguments they stand for."""
    model: str = ""
    weights: str = ""       # "checkpoint:<slug>" or "format:<slug>"
    kv_format: str = "fp16"
    context: str = "32k"
    batch: str = BATCH_DEFAULT
    devices: str = ""
    runtime: str = runtimes.DEFAULT_RUNTIME
    accelerator: str = ""   # filters of the answer
    vendor: str = ""
    device_class: str = ""

    @classmethod
    def from_request(cls, request):
        return cls(**{f.name: request.args.get(f.name, f.default).strip() for f in fields(cls)})

    def query_args(self):
        """The arguments of `what-fits` (FormError for a field the page cannot use)."""
        kind, _, slug = self.weights.partition(":")
        if self.runtime not in runtimes.RUNTIMES:
            raise FormError(f"Runtime must be one of: {', '.join(r.name for r in runtimes.RUNTIMES.values())}")
        return {"model": self.model, "checkpoint": slug if kind == "checkpoint" else "",
                "weight_format": slug if kind == "format" else "", "kv_format": self.kv_format,
                "context": str(context_tokens(self.context)), "batch": whole_field("batch", self.batch or BATCH_DEFAULT, True),
                "tp": whole_field("devices", self.devices, False), "runtime": self.runtime}

    def permalink(self, path):
        return f"{path}?" + urlencode(vars(self))

    def keeps(self, row):
        """Whether a row passes the accelerator, vendor and class filters."""
        return all(not wanted or row[column] == wanted for wanted, column in (
            (self.accelerator, "accelerator"), (self.vendor, "vendor"), (self.device_class, "device_class")))


def labelled(message):
    """A query's message with each parameter named as the page labels it ("tp" never reaches a reader)."""
    message = re.sub(r"\btp=(\d+)", r"\1 devices", message)
    return "; ".join(re.sub(r"^(\w+)", lambda m: LABELS.get(m.group(1), m.group(1)), part)
                     for part in message.split("; "))


def ranked(rows):
    """Native fits first, then other fits, then the rest; within each, the highest decode ceiling first."""
    def key(row):
        fits = bool(row["fits"])
        return (not (fits and row["native"] == 1), not fits, -(row["ceiling_tokens_per_s"] or 0), row["accelerator"])
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


def devices_that_fit(row):
    """Devices of the layout that holds the model: the one answered, or the smallest that fits instead (None: none)."""
    return row["devices_needed"] if row["fits"] else row.get("smallest_devices_that_fit")


def sensible(row):
    devices = devices_that_fit(row)
    return devices is not None and devices <= SENSIBLE_DEVICES.get(row["device_class"], SENSIBLE_DEVICES_DEFAULT)


def counts(rows):
    """Accelerators that hold the model on one device, on up to 8, and in any sensible layout."""
    needed = [devices_that_fit(r) for r in rows]
    return {"one": needed.count(1), "eight": sum(1 for n in needed if n is not None and n <= 8),
            "any": sum(1 for r in rows if sensible(r)), "of": len(rows)}


def presets(model):
    """Context presets up to the model's window (all when it states none)."""
    window = (model or {}).get("max_context")
    return [(label, tokens) for label, tokens in CONTEXT_PRESETS if window is None or tokens <= window]


async def choices(datasette):
    db = datasette.get_database(DATABASE)
    return {name: [dict(r) for r in (await db.execute(sql)).rows] for name, sql in CHOICES_SQL.items()}


def query_error(answer):
    """The message of a refused or failed query, for the page: never its HTML or its SQL."""
    try:
        data = answer.json()
    except ValueError:
        data = {}
    error = str(data.get("error") or "")
    # Datasette answers a query over its time limit with the title "SQL Interrupted" and an error of HTML
    # holding the SQL: none of it reaches the page
    interrupted = "interrupted" in f"{data.get('title', '')} {error}".lower() or "time limit" in error.lower()
    if interrupted or answer.status_code in (408, 504):
        return ("This question took longer than the server allows. Choose fewer accelerators (a vendor or a "
                "class), a shorter context or a given number of devices, and size it again.")
    if answer.status_code == 400 and error and "select" not in error.lower():
        return labelled(error)
    return "The query could not answer this question."


async def what_fits(request, datasette):
    form = Form.from_request(request)
    everything = await choices(datasette)
    model = next((m for m in everything["models"] if m["slug"] == form.model), None)
    context = {"form": form, "presets": presets(model), **everything, "model": model, "error": None, "rows": None,
               "window": None, "runtimes": runtimes.RUNTIMES, "runtime": runtimes.RUNTIMES.get(form.runtime),
               "model_checkpoints": [c for c in everything["checkpoints"] if c["model"] == form.model],
               "sensible_devices": SENSIBLE_DEVICES, "sensible_default": SENSIBLE_DEVICES_DEFAULT}
    status = 200
    if form.model and form.weights:
        try:
            args = form.query_args()
        except FormError as error:
            context["error"], status = str(error), 400
        else:
            tokens = int(args["context"])
            if model and model["max_context"] and tokens > model["max_context"]:
                context["window"] = f"{model['name']} reads at most {model['max_context']:,} tokens"
            else:
                await answer_rows(datasette, form, args, context)
                status = context.pop("status", 200)
            context["tokens"] = tokens
    context["permalink"] = form.permalink(datasette.urls.path(PATH))
    html = await datasette.render_template("reader_what_fits.html", context, request=request)
    return Response.html(html, status=status)


async def answer_rows(datasette, form, args, context):
    answer = await datasette.client.get(f"/{DATABASE}/what-fits.json?" + urlencode({**args, "_shape": "objects"}))
    data = answer.json() if answer.status_code == 200 else {}
    if answer.status_code != 200 or not data.get("ok", True):
        context["error"], context["status"] = query_error(answer), (answer.status_code if answer.status_code >= 400 else 400)
        return
    rows = [{**row, "split": memory_split(row), "href": datasette.urls.row(DATABASE, "accelerators", row["accelerator"]),
             "problem": row["problem"] and labelled(row["problem"])} for row in ranked(data["rows"])]
    shown = [row for row in rows if form.keeps(row)]
    context["rows"], context["counts"] = shown, counts(shown)
    database = datasette.urls.database(DATABASE)
    context["more"] = {
        "longest_context": f"{database}/longest-context?" + urlencode(
            {k: v for k, v in args.items() if k not in ("context", "tp")}),
        "largest_batch": f"{database}/largest-batch?" + urlencode(
            {k: v for k, v in args.items() if k not in ("batch", "tp")}),
        "sql": f"{database}/what-fits?" + urlencode({k: v for k, v in args.items() if k != "tp"}),
    }


@hookimpl
def register_routes():
    return [(rf"^{PATH}$", what_fits)]
