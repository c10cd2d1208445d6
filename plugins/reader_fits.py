"""The calculator: "what fits this model?" as a form a reader fills from lists.

The answer is the `what-fits` canned query (metadata.yml; its sizing functions
in plugins/llm_math.py, formulas in docs/LLM_MATH.md), asked through Datasette's
JSON API: this page only offers the choices the tables hold, reads a context
written as `32k` or `128K`, ranks the answer for a reader (native fits first,
then by decode ceiling) and draws each device's memory split. The form is sent
with GET, so every state is a permalink, and the table works without
JavaScript (reader.js only resubmits the form when a choice changes).
"""

import re
from dataclasses import dataclass, fields
from urllib.parse import urlencode

from datasette import hookimpl
from datasette.utils.asgi import Response

DATABASE = "computekb"
PATH = "/-/what-fits"
CONTEXT_PRESETS = (("4k", 4096), ("8k", 8192), ("32k", 32768), ("128k", 131072), ("1M", 1048576))
BATCH_DEFAULT = "1"
# 32k = 32 x 1024 tokens: context lengths are counted in binary thousands (Llama's 128K is 131072).
CONTEXT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")
MULTIPLIERS = {"": 1, "k": 1024, "m": 1024 * 1024}

CHOICES_SQL = {
    "models": "select slug, name, max_context from models order by name",
    "checkpoints": "select slug, model, name from checkpoints order by name",
    "formats": "select slug, name, kind from number_formats where kind <> 'integer' or slug = 'int8' order by bits desc, slug",
}


class ContextError(ValueError):
    """A context length the form cannot read."""


def context_tokens(text):
    """Tokens of a context written as a reader writes it: 32768, 32k, 128K, 1M (k = 1024)."""
    match = CONTEXT.match(text or "")
    if not match:
        raise ContextError(f"context {text!r}: write a number of tokens, e.g. 32768, 32k or 128K")
    tokens = float(match.group(1)) * MULTIPLIERS[match.group(2).lower()]
    if tokens < 1 or not tokens.is_integer():
        raise ContextError(f"context {text!r}: a whole, positive number of tokens, e.g. 32k")
    return int(tokens)


@dataclass
class Form:
    """The reader's choices, as written, and the canned query's arguments they stand for."""
    model: str = ""
    weights: str = ""       # "checkpoint:<slug>" or "format:<slug>"
    kv_format: str = "fp16"
    context: str = "32k"
    batch: str = BATCH_DEFAULT
    devices: str = ""

    @classmethod
    def from_request(cls, request):
        return cls(**{f.name: request.args.get(f.name, f.default).strip() for f in fields(cls)})

    def query_args(self):
        """The arguments of `what-fits` (ContextError for an unreadable context)."""
        kind, _, slug = self.weights.partition(":")
        return {"model": self.model, "checkpoint": slug if kind == "checkpoint" else "",
                "weight_format": slug if kind == "format" else "", "kv_format": self.kv_format,
                "context": str(context_tokens(self.context)), "batch": self.batch or BATCH_DEFAULT, "tp": self.devices}

    def permalink(self, path):
        return f"{path}?" + urlencode(vars(self))


def ranked(rows):
    """Native fits first, then other fits, then the rest; within each, the highest decode ceiling first."""
    def key(row):
        fits = bool(row["fits"])
        return (not (fits and row["native"] == 1), not fits, -(row["decode_tokens_per_s"] or 0), row["accelerator"])
    return sorted(rows, key=key)


def memory_split(row):
    """Percentages of the device's usable memory taken by weights, KV cache and reserve, for the bar."""
    usable = row["usable_gb_per_device"] or 0
    parts = {"weights": row["weights_gb_per_device"], "kv": row["kv_cache_gb_per_device"],
             "reserve": row["reserve_gb_per_device"]}
    if not usable:
        return {}
    scale = max(usable, sum(v or 0 for v in parts.values()))
    return {name: round(100 * (value or 0) / scale, 1) for name, value in parts.items()}


async def choices(datasette):
    db = datasette.get_database(DATABASE)
    return {name: [dict(r) for r in (await db.execute(sql)).rows] for name, sql in CHOICES_SQL.items()}


async def what_fits(request, datasette):
    form = Form.from_request(request)
    context = {"form": form, "presets": CONTEXT_PRESETS, **(await choices(datasette)), "error": None, "rows": None}
    status = 200
    if form.model and form.weights:
        try:
            args = form.query_args()
        except ContextError as error:
            context["error"], status = str(error), 400
        else:
            answer = await datasette.client.get(f"/{DATABASE}/what-fits.json?" + urlencode({**args, "_shape": "objects"}))
            data = answer.json()
            if answer.status_code != 200 or not data.get("ok", True):
                context["error"], status = data.get("error") or "the query could not answer", answer.status_code
            else:
                context["rows"] = [{**row, "split": memory_split(row),
                                    "href": datasette.urls.row(DATABASE, "accelerators", row["accelerator"])}
                                   for row in ranked(data["rows"])]
                query = urlencode({k: v for k, v in args.items() if k != "tp"})
                context["more"] = {
                    "longest_context": f"{datasette.urls.database(DATABASE)}/longest-context?" + urlencode(
                        {k: v for k, v in args.items() if k not in ("context", "tp")}),
                    "largest_batch": f"{datasette.urls.database(DATABASE)}/largest-batch?" + urlencode(
                        {k: v for k, v in args.items() if k not in ("batch", "tp")}),
                    "sql": f"{datasette.urls.database(DATABASE)}/what-fits?{query}",
                }
                context["tokens"] = args["context"]
    context["permalink"] = form.permalink(datasette.urls.path(PATH))
    html = await datasette.render_template("reader_what_fits.html", context, request=request)
    return Response.html(html, status=status)


@hookimpl
def register_routes():
    return [(rf"^{PATH}$", what_fits)]
