"""The parameter checks of the canned queries, and their 400s.

A magic parameter (the documented `register_magic_parameters` hook), bound
before the query runs, checks the request's parameters, each with its one check
(domain/parameters.py, the checks the what-fits page and the SQL functions
use), and raises sqlite3.OperationalError with every problem in one message,
which Datasette shows as the query's error, the form kept, with a 400
(`asgi_wrapper`).
"""

import sqlite3
from pathlib import Path

from datasette import hookimpl

from domain import parameters
from domain.parameters import Check, ParameterError
from serving.query_args import COST_DEFAULTS, search_problem

REFUSALS = "computekb.refusals"  # key of the ASGI scope where a request collects refusals


class Lookup:
    """The slugs the checks compare parameters with, read from the query's database."""

    def __init__(self, path):
        self.conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)

    def values(self, sql, *params):
        return {row[0] for row in self.conn.execute(sql, params)}

    def names(self, sql, *params) -> dict[str, str]:
        """{slug: name} of a query of two columns."""
        return dict(self.conn.execute(sql, params).fetchall())

    def close(self):
        self.conn.close()


def given(args, name, default=""):
    value = args.get(name, "").strip()
    return value if value else default


def problem_of(check, *args):
    """The problem a check finds, as a message, or None."""
    try:
        check(*args)
    except ParameterError as error:
        return str(error)
    return None


FORMATS_WITH_BITS = "select slug, name from number_formats where coalesce(effective_bits, bits) is not null"
MODELS = "select slug, name from models"


def choice_problem(args, name, known, what, default=""):
    return problem_of(parameters.choice, name, given(args, name, default), known, what)


def weights_problems(args, lookup):
    """A checkpoint of the model, or one number format for every weight."""
    model, checkpoint, weight_format = given(args, "model"), given(args, "checkpoint"), given(args, "weight_format")
    if checkpoint:
        known = lookup.names("select slug, name from checkpoints where model = ?", model)
        return [choice_problem(args, "checkpoint", known, f"checkpoints of model {model!r}"),
                "give checkpoint or weight_format, not both" if weight_format else None]
    return [choice_problem(args, "weight_format", lookup.names(FORMATS_WITH_BITS), "number formats with known bits")]


def sizing_problems(args, lookup, checks):
    """Problems of a sizing query's parameters: the model, its weights, the KV format and `checks`."""
    _values, found = parameters.problems(args, [*checks, Check("runtime", parameters.runtime)])
    return [choice_problem(args, "model", lookup.names(MODELS), "models"), *weights_problems(args, lookup),
            choice_problem(args, "kv_format", lookup.names(FORMATS_WITH_BITS), "number formats with known bits"),
            *(str(error) for error in found)]


BATCH = Check("batch", parameters.batch, "1")
PP = Check("pp", parameters.pipeline_stages)
FRACTION = Check("usable_fraction", parameters.usable_fraction)
CONTEXT = Check("context", parameters.context)
SEQUENCES = Check("max_num_seqs", parameters.max_num_seqs)

CHECKS = {
    "what-fits": lambda args, lookup: sizing_problems(args, lookup, (
        CONTEXT, BATCH, Check("tp", parameters.devices), PP, FRACTION, SEQUENCES)),
    "longest-context": lambda args, lookup: sizing_problems(args, lookup, (
        BATCH, PP, Check("max_context", lambda v: v and parameters.context(v)), FRACTION, SEQUENCES))
        + [max_context_problem(args, lookup)],
    "largest-batch": lambda args, lookup: sizing_problems(args, lookup, (CONTEXT, PP, FRACTION, SEQUENCES)),
    "cost-per-million-tokens": lambda args, lookup: [
        choice_problem(args, "model", lookup.names(MODELS), "models", COST_DEFAULTS["model"]),
        choice_problem(args, "weight_format", lookup.names(FORMATS_WITH_BITS), "number formats with known bits",
                       COST_DEFAULTS["weight_format"]),
        *(str(e) for e in parameters.problems(args, (
            Check("batch", parameters.batch, COST_DEFAULTS["batch"]),
            Check("context", parameters.context, COST_DEFAULTS["context"]), FRACTION,
            SEQUENCES, Check("runtime", parameters.runtime)))[1])],
    "per-dollar-per-watt": lambda args, lookup: [device_class_problem(given(args, "device_class"), lookup)],
    "articles-about": lambda args, lookup: [
        choice_problem(args, "accelerator", lookup.names("select slug, name from accelerators"), "accelerators")],
    "search-articles": lambda args, lookup: [search_query_problem(search_words(args.get("q", "")))],
}
CHECKS.update({
    name: lambda args, lookup: benchmark_problems(args, lookup)
    for name in ("measured-vs-roofline", "best-result-per-accelerator")})
CHECKS["energy-per-accelerator"] = lambda args, lookup: benchmark_problems(args, lookup) + [
    str(e) for e in parameters.problems(args, (Check("kwh_usd", parameters.usd_per_kwh),))[1]]
# no parameter is required: an empty form is an answer
ALWAYS_CHECKED = {"per-dollar-per-watt", "cost-per-million-tokens"}


# The measured queries: a benchmark is required; scenario, accuracy target and round narrow it when given.
BENCHMARK_FILTERS = ("scenario", "accuracy_target", "round")


def benchmark_problems(args, lookup):
    benchmarks = lookup.values("select distinct benchmark from benchmark_results")
    problems = [choice_problem(args, "benchmark", {b: b for b in benchmarks},
                               "benchmarks of benchmark_results")]
    for name in BENCHMARK_FILTERS:
        value = given(args, name)
        if name in args and value:
            known = lookup.values(f"select distinct {name} from benchmark_results where {name} is not null")
            problems.append(None if value in known else
                            f"{name} {value!r} is not one of: {', '.join(sorted(known))} (leave it empty for all)")
    return problems


def max_context_problem(args, lookup):
    """The longest context is searched up to the model's maximum: one must be known."""
    model, given_max = given(args, "model"), given(args, "max_context")
    if given_max or not lookup.values("select slug from models where slug = ? and max_context is null", model):
        return None
    return f"max_context is required: model {model!r} states no maximum context"


def device_class_problem(device_class, lookup):
    classes = sorted(lookup.values("select distinct device_class from accelerators"))
    if device_class == "" or device_class in classes:
        return None
    return f"device_class {device_class!r} is not one of: {', '.join(classes)} (leave it empty for all)"


def search_words(q):
    """What the search query searches for: q cut at a NUL character (where FTS5 stops reading), whitespace trimmed."""
    return q.split("\x00", 1)[0].strip()


def search_query_problem(q):
    """A search needs words, and no more than a search may hold (serving/query_args.py)."""
    return search_problem(q, q.split()) if q else "q is required: words to search for"


def check_parameters(query, request, database_path):
    """1 when the query's parameters are fine, 0 for a blank form (every
    parameter empty: the first visit answers no rows); raises
    sqlite3.OperationalError with every problem otherwise."""
    # Datasette's own arguments (`_size`, `_shape`, `_nofacet` ...) are not the query's parameters
    args = {name: request.args.get(name, "") for name in request.args if not name.startswith("_")}
    if query not in ALWAYS_CHECKED and not any(value for value in args.values()):
        return 0
    lookup = Lookup(database_path)
    try:
        problems = [p for p in CHECKS[query](args, lookup) if p]
    finally:
        lookup.close()
    if problems:
        message = "; ".join(problems)
        refusals = request.scope.get(REFUSALS)
        if refusals is not None:
            refusals.append(message)
        raise sqlite3.OperationalError(message)
    return 1


@hookimpl
def register_magic_parameters(datasette):
    """`:_checked_<query>` (hyphens as underscores) in a canned query's SQL checks its parameters."""
    def checked(key, request):
        query = key.replace("_", "-")
        if query not in CHECKS:
            raise KeyError(key)
        database = datasette.get_database(request.url_vars["database"])
        return check_parameters(query, request, database.path)
    return [("checked", checked)]


def refusing(send, refusals, as_text):
    """`send` where a refused query answers 400: with the message as plain text instead of
    the CSV when `as_text` (whatever type `_trace` asked for), else with Datasette's own body."""
    refused = False

    async def send_or_refuse(event):
        nonlocal refused
        if event["type"] == "http.response.start" and refusals and as_text:
            refused = True
            headers = [(name, value) for name, value in event.get("headers", [])
                       if name.lower() not in (b"content-type", b"content-length")]
            await send(dict(event, status=400, headers=headers + [(b"content-type", b"text/plain; charset=utf-8")]))
            await send({"type": "http.response.body", "body": (refusals[0] + "\n").encode()})
        elif event["type"] == "http.response.start" and refusals:
            await send(dict(event, status=400))
        elif not refused:  # the rest of Datasette's answer (for CSV, empty)
            await send(event)
    return send_or_refuse


@hookimpl
def asgi_wrapper():
    """A refused canned query answers 400 in every format. Datasette 0.65 answers
    the CSV of a failed query with 200 and an empty body, so the CSV says what is
    wrong as plain text; Datasette 1.0 shows the error on the HTML page with a
    200. The check records its message in a list this wrapper puts in the ASGI scope."""
    def wrap(app):
        async def refusals_400(scope, receive, send):
            if scope["type"] != "http":
                return await app(scope, receive, send)
            refusals = []
            await app(dict(scope, **{REFUSALS: refusals}), receive,
                      refusing(send, refusals, as_text=scope["path"].endswith(".csv")))
        return refusals_400
    return wrap
