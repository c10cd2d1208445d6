"""LLM sizing as SQL functions, and the parameter checks of the canned queries.

The math is `domain/sizing.py` (formulas in docs/LLM_MATH.md); this plugin makes
it callable from SQL through Datasette's documented `prepare_connection` hook.
A nonsensical argument raises ValueError, which sqlite reports as a query
error: Datasette answers it with HTTP 400 (sqlite's own text, "user-defined
function raised exception"). The canned queries never let a bad value reach a
function: a magic parameter (the documented `register_magic_parameters`
hook), bound before the query runs, checks the request's parameters and
raises sqlite3.OperationalError with every problem in one message, which
Datasette shows as the query's error, the form kept, with a 400 (asgi_wrapper).

NULL in gives NULL out: a model with an unknown figure yields an unknown
answer, never a made-up one. GB are decimal (10^9 bytes).
"""

import functools
import inspect
import json
import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from datasette import hookimpl

from domain import sizing, speed
from domain.schema import MAXIMA, NUMERIC_KINDS, TABLES_BY_NAME
from serving.query_args import search_problem

# Effective bits per stored value. Plain formats store their element bits;
# block-scaled formats add one shared scale per block: element bits
# + scale bits / block size (OCP MX: 8-bit E8M0 scale per 32 elements;
# NVFP4: 8-bit E4M3 scale per 16 elements, per-tensor FP32 scale ignored).
ELEMENT_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "fp8-e4m3": 8,
                "fp8-e5m2": 8, "int8": 8, "int4": 4}
BLOCK_SCALED = {  # slug: (element bits, block size, scale bits)
    "mxfp8": (8, 32, 8), "mxfp6": (6, 32, 8), "mxfp4": (4, 32, 8), "nvfp4": (4, 16, 8),
}
MAX_TP = 8          # the layouts proposed stay within one 8-GPU node for tensor parallelism
REFUSALS = "computekb.refusals"  # key of the ASGI scope where a request collects refusals


def nullable(fn):
    """NULL in any argument gives NULL: an unknown figure makes an unknown answer."""
    @functools.wraps(fn)
    def wrapper(*args):
        if any(arg is None for arg in args):
            return None
        return fn(*args)
    return wrapper


def number(name, value, positive=False):
    """`value` as a finite float. Numeric text is accepted: Datasette passes
    every query parameter as a string."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be positive, got {value:g}")
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value:g}")
    return value


def whole(name, value, minimum=1):
    value = number(name, value)
    if value != int(value) or value < minimum:
        raise ValueError(f"{name} must be a whole number of at least {minimum}, got {value:g}")
    return int(value)


# The simple formulas, for any SQL query

@nullable
def weights_gb(params_b, bits_per_weight):
    """Weight memory: billions of parameters × bits per weight / 8, in GB."""
    return number("params_b", params_b) * number("bits_per_weight", bits_per_weight, positive=True) / 8


@nullable
def bits_per_weight(format_slug):
    """Effective bits per value of a format slug (block scales included)."""
    slug = str(format_slug).strip().lower()
    if slug in ELEMENT_BITS:
        return float(ELEMENT_BITS[slug])
    if slug in BLOCK_SCALED:
        element, block, scale = BLOCK_SCALED[slug]
        return element + scale / block
    known = ", ".join(sorted(ELEMENT_BITS) + sorted(BLOCK_SCALED))
    raise ValueError(f"unknown format {format_slug!r}; known: {known} "
                     "(the number_formats table has effective_bits for more)")


def cache_architecture(layers, **attention):
    """An architecture with only what the KV cache depends on (the rest cannot matter)."""
    return sizing.Architecture(layers=whole("layers", layers), hidden_size=1, attention_heads=1, vocab_size=1,
                               **attention)


def cache_gb(architecture, tokens, batch, bytes_per_value):
    bits = number("bytes_per_value", bytes_per_value, positive=True) * 8
    return sizing.kv_bytes(architecture, number("tokens", tokens), number("batch", batch), bits) / sizing.GB


@nullable
def kv_cache_gb(layers, kv_heads, head_dim, tokens, batch, bytes_per_value):
    """MHA/GQA/MQA: one key and one value vector per KV head, layer and token."""
    architecture = cache_architecture(layers, kv_heads=number("kv_heads", kv_heads, positive=True),
                                      head_dim=number("head_dim", head_dim, positive=True))
    return cache_gb(architecture, tokens, batch, bytes_per_value)


@nullable
def kv_cache_mla_gb(layers, latent_dim, rope_dim, tokens, batch, bytes_per_value):
    """MLA (DeepSeek-V2/V3): one compressed latent plus the decoupled RoPE key per token and layer."""
    architecture = cache_architecture(layers, attention="mla", kv_lora_rank=number("latent_dim", latent_dim, positive=True),
                                      qk_rope_head_dim=number("rope_dim", rope_dim))
    return cache_gb(architecture, tokens, batch, bytes_per_value)


@nullable
def kv_cache_swa_gb(layers, full_layers, kv_heads, head_dim, tokens, window, batch, bytes_per_value):
    """Sliding-window models: full-attention layers cache every token, the others at most `window` tokens."""
    layers, full_layers = whole("layers", layers), number("full_layers", full_layers)
    if full_layers > layers:
        raise ValueError(f"full_layers ({full_layers:g}) cannot exceed layers ({layers:g})")
    architecture = cache_architecture(layers, attention="hybrid", kv_heads=number("kv_heads", kv_heads, positive=True),
                                      head_dim=number("head_dim", head_dim, positive=True), full_attention_layers=full_layers,
                                      sliding_window=number("window", window, positive=True))
    return cache_gb(architecture, tokens, batch, bytes_per_value)


def architecture_of(architecture):
    """A models.architecture JSON as an Architecture, each field within its range (checked_architecture)."""
    return checked_architecture(architecture)


@nullable
def llm_cache_gb(architecture, tokens, batch, kv_bits, tp):
    """What `batch` sequences of `tokens` tokens keep on one of `tp` ranks, all
    layers: the KV cache in `kv_bits`, a sparse-attention indexer's keys and the
    fixed state of linear-attention and state-space layers."""
    return sizing.kv_bytes(architecture_of(architecture), whole("tokens", tokens, minimum=0), whole("batch", batch),
                           number("kv_bits", kv_bits, positive=True), whole("tp", tp)) / sizing.GB


@nullable
def llm_state_gb(architecture, batch, tp):
    """The fixed-size state of the linear-attention and state-space layers of
    `batch` sequences on one of `tp` ranks, whatever the context (0 for a model without such layers)."""
    values = sizing.state_values_per_sequence(architecture_of(architecture), whole("tp", tp))
    return values * whole("batch", batch) * sizing.STATE_BITS / 8 / sizing.GB


@nullable
def decode_tokens_per_s(bandwidth_gbs, gb_read_per_token):
    """Memory-bound decode ceiling: every step reads its weights and KV cache once."""
    return number("bandwidth_gbs", bandwidth_gbs) / number("gb_read_per_token", gb_read_per_token, positive=True)


@nullable
def expected_experts(experts, experts_per_token, batch):
    """Distinct experts of one MoE layer a decode step of `batch` tokens reads (uniform routing)."""
    experts = whole("experts", experts)
    per_token = whole("experts_per_token", experts_per_token)
    if per_token > experts:
        raise ValueError(f"experts_per_token ({per_token}) cannot exceed experts ({experts})")
    return sizing.expected_distinct_experts(experts, per_token, whole("batch", batch))


# Deployments: the models and checkpoints tables' JSON columns in, JSON or a number out

@dataclass(frozen=True)
class Question:
    """The SQL arguments of a sizing function, read once."""

    architecture: sizing.Architecture
    checkpoint: sizing.Checkpoint
    device: sizing.Device
    workload: sizing.Workload
    bandwidth_share: float | None = None  # the device's best achieved bandwidth ÷ datasheet, where measured


# The models table's numeric fields: an architecture given in SQL is held to their ranges (domain/schema.py)
# before any loop runs over one of them (the divisors of the attention heads, the pipeline stages).
MODEL_NUMBERS = {f.name: f for f in TABLES_BY_NAME["models"].fields if f.kind in NUMERIC_KINDS}


def in_range(name, value, minimum, maximum):
    """`value` if it is a number from `minimum` (exclusive when None: above 0) to `maximum`, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not (value >= minimum if minimum is not None else value > 0) or value > maximum:
        low = f"from {minimum:g}" if minimum is not None else "above 0"
        raise ValueError(f"{name} must be a number {low} to {maximum:,.0f}, got {value!r}")
    return value


def checked_architecture(text):
    """The Architecture of a JSON object of the models table's fields, each within its range."""
    row = json.loads(text)
    if not isinstance(row, dict):
        raise ValueError("architecture must be a JSON object of the models table's fields")
    for name, value in row.items():
        if name in MODEL_NUMBERS and value is not None:
            field = MODEL_NUMBERS[name]
            in_range(name, value, field.minimum if field.kind == "int" else None, field.maximum)
            if field.kind == "int" and value != int(value):
                raise ValueError(f"{name} must be a whole number, got {value!r}")
    return sizing.Architecture.from_row(row)


def checked_bits(text):
    """The Checkpoint of a JSON object of bits per tensor group, each above 0 and at most MAXIMA["bits"]."""
    bits = json.loads(text)
    if not isinstance(bits, dict) or set(bits) - set(sizing.TENSOR_GROUPS):
        raise ValueError(f"bits must be a JSON object of bits per tensor group ({', '.join(sizing.TENSOR_GROUPS)})")
    return sizing.Checkpoint(**{group: in_range(f"{group} bits", value, None, MAXIMA["bits"])
                                for group, value in bits.items()})


def fraction_of(name, value):
    """A runtime's memory fraction: NULL for the runtime's own default, else in (0, 1]."""
    if value is None:
        return None
    if number(name, value, positive=True) > 1:
        raise ValueError(f"{name} must be in (0, 1], got {value}")
    return float(value)


def runtime_of(value):
    slug = sizing.runtimes.DEFAULT_RUNTIME if value is None else str(value).strip().lower()
    if slug not in sizing.runtimes.RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(sizing.runtimes.RUNTIMES)}, got {value!r}")
    return slug


def optional_number(name, value):
    return None if value is None else number(name, value)


def share_of(value):
    """An achieved share of the datasheet bandwidth: NULL when none is measured, else in (0, 1.5]."""
    if value is None:
        return None
    if number("bandwidth_share", value, positive=True) > 1.5:
        raise ValueError(f"bandwidth_share must be in (0, 1.5], got {value}")
    return float(value)


def max_seqs_of(value):
    """A runtime's sequence limit (vLLM's max_num_seqs): NULL for the runtime's own default."""
    return None if value is None else whole("max_num_seqs", value)


def question(architecture, bits, device, context, batch, kv_bits, utilization, runtime=None, max_num_seqs=None):
    """`device`: a mapping with memory_gb and, where known, bandwidth_gbs, dense_tflops, link_gbs, slug,
    bandwidth_share (the best achieved bandwidth ÷ datasheet)."""
    return Question(architecture_of(architecture), checked_bits(bits),
                    sizing.Device(number("memory_gb", device["memory_gb"], positive=True) * sizing.GB,
                                  optional_number("bandwidth_gbs", device.get("bandwidth_gbs")),
                                  optional_number("dense_tflops", device.get("dense_tflops")),
                                  optional_number("link_gbs", device.get("link_gbs")), str(device.get("slug") or "")),
                    sizing.Workload(whole("context", context), whole("batch", batch),
                                    number("kv_bits", kv_bits, positive=True), fraction_of("utilization", utilization),
                                    runtime_of(runtime), max_seqs_of(max_num_seqs)),
                    share_of(device.get("bandwidth_share")))


def layout_of(tp, pp):
    return sizing.Layout(whole("tp", tp), whole("pp", pp))


def gb(value):
    return round(value / sizing.GB, 4)


def speed_answer(speed: sizing.Speed | None) -> dict:
    """The decode ceiling (per sequence and for the batch), what bounds it, and the time to first token."""
    if speed is None:
        return {"tokens_per_s_per_sequence": None, "tokens_per_s": None}
    return {"tokens_per_s_per_sequence": speed.per_sequence, "tokens_per_s": speed.batch_tokens_per_s,
            "bound": speed.bound, "memory_ms": speed.memory_s * 1e3,
            "compute_ms": None if speed.compute_s is None else speed.compute_s * 1e3,
            "communication_ms": speed.communication_s * 1e3,
            "first_token_ms": None if speed.prefill_s is None else speed.prefill_s * 1e3}


def expected_answer(q: Question, s: sizing.Sizing) -> dict:
    """The speed the runtime can be expected to reach (domain/speed.py), beside the ceiling, and its basis."""
    step = speed.step(q.architecture, q.checkpoint, s.layout, q.device, q.workload.batch, q.workload.context,
                      q.workload.kv_bits, q.workload.runtime, q.bandwidth_share)
    if step is None:
        return {"expected_tokens_per_s_per_sequence": None, "expected_tokens_per_s": None}
    e = speed.expected(step)
    return {"expected_tokens_per_s_per_sequence": e.tokens_per_s_per_sequence,
            "expected_tokens_per_s": e.batch_tokens_per_s, "expected_basis": e.basis}


def answer(q: Question, sizing_result: sizing.Sizing | None, problem: str | None = None,
           smallest: sizing.Sizing | None = None) -> str:
    """The JSON object the queries read their columns from (GB rounded to 0.1 MB).

    `kv_gb_per_sequence` is one sequence's whole cache (as on one device,
    before any split or replication), the figure to compare with other tools.
    `smallest_*`: for a layout that does not fit, the first that does."""
    whole_cache = sizing.kv_bytes(q.architecture, q.workload.context, 1, q.workload.kv_bits)
    fits_instead = {"smallest_tp": smallest.layout.tp, "smallest_pp": smallest.layout.pp,
                    "smallest_devices": smallest.layout.devices} if smallest else {}
    if sizing_result is None:  # no layout: the checkpoint and one sequence's cache are still known
        weights = sizing.checkpoint_bytes(sizing.parameters(q.architecture), q.checkpoint)
        return json.dumps({"fits": 0, "problem": problem, "weights_gb": gb(weights), "kv_gb_per_sequence": gb(whole_cache),
                           "runtime": q.workload.runtime, **fits_instead})
    s = sizing_result
    return json.dumps({
        "kv_gb_per_sequence": gb(whole_cache),
        "tp": s.layout.tp, "pp": s.layout.pp, "devices": s.layout.devices, "fits": int(s.fits),
        "runtime": q.workload.runtime,
        "weights_gb": gb(s.weights_bytes),
        "weights_gb_per_device": gb(s.weights_per_device),
        "kv_gb_per_sequence_per_device": gb(s.kv_per_sequence),
        "kv_gb_per_device": gb(s.kv_per_device),
        "kv_pool_gb_per_device": gb(s.kv_pool_per_device),
        "reserve_gb_per_device": gb(s.reserve_per_device),
        "activation_gb_per_device": gb(s.reserve.activation),
        "overhead_gb_per_device": gb(s.reserve.overhead),
        "headroom_gb_per_device": gb(s.reserve.headroom),
        "memory_gb_per_device": gb(s.memory_per_device),
        "needed_gb_per_device": gb(s.needed_per_device),
        "usable_gb_per_device": gb(s.usable_per_device),
        "shortfall_gb_per_device": gb(s.shortfall_per_device),
        **speed_answer(s.speed), **expected_answer(q, s),
        "problem": problem, **fits_instead,
    })


def smallest_or_problem(q: Question):
    found = sizing.smallest_layout(q.architecture, q.checkpoint, q.device, q.workload, MAX_TP)
    return found, None if found else (f"does not fit with tensor parallelism up to {MAX_TP} "
                                      "and any number of pipeline stages")


def fit(q: Question, tp, pp) -> str:
    """The deployment on `tp` × `pp` devices, or (tp NULL) the fitting layout with the fewest devices."""
    if tp is None:
        found, problem = smallest_or_problem(q)
        return answer(q, found, problem)
    layout = layout_of(tp, 1 if pp is None else pp)
    problem = sizing.layout_problem(q.architecture, layout)
    if problem:
        return answer(q, None, problem)
    sized = sizing.size(q.architecture, q.checkpoint, layout, q.device, q.workload)
    return answer(q, sized, smallest=None if sized.fits else smallest_or_problem(q)[0])


def llm_fit(architecture, bits, device, workload):
    """JSON: a deployment of one model on one accelerator (docs/LLM_MATH.md).

    `device`: {"memory_gb", "bandwidth_gbs", "dense_tflops", "link_gbs", "slug"};
    `workload`: {"context", "batch", "kv_bits", "tp", "pp", "runtime", "fraction"}
    (tp null: the layout proposed; runtime: vllm by default; fraction null: the runtime's default)."""
    if None in (architecture, bits, device, workload):
        return None
    device, workload = json.loads(device), json.loads(workload)
    if device.get("memory_gb") is None:
        return None
    q = question(architecture, bits, device, workload.get("context"), workload.get("batch", 1),
                 workload.get("kv_bits"), workload.get("fraction"), workload.get("runtime"),
                 workload.get("max_num_seqs"))
    return fit(q, workload.get("tp"), workload.get("pp"))


def llm_size(architecture, bits, memory_gb, bandwidth_gbs, context, batch, kv_bits, tp, pp, utilization):
    """The arguments of the first release: vLLM with `utilization` as its
    gpu_memory_utilization, no compute peak or interconnect. Kept for saved
    queries; llm_fit answers the same with the runtime, compute and links."""
    if architecture is None or bits is None or memory_gb is None:
        return None
    q = question(architecture, bits, {"memory_gb": memory_gb, "bandwidth_gbs": bandwidth_gbs}, context, batch,
                 kv_bits, utilization)
    return fit(q, tp, pp)


def llm_largest_batch(architecture, bits, memory_gb, context, kv_bits, tp, pp, utilization, runtime=None,
                      max_num_seqs=None):
    """The most sequences of `context` tokens that fit on `tp` × `pp` devices, at most the runtime's
    `max_num_seqs` (NULL: not a valid layout)."""
    if None in (architecture, bits, memory_gb):
        return None
    q = question(architecture, bits, {"memory_gb": memory_gb}, context, 1, kv_bits, utilization, runtime,
                 max_num_seqs)
    layout = layout_of(tp, pp)
    if sizing.layout_problem(q.architecture, layout):
        return None
    return sizing.largest_batch(q.architecture, q.checkpoint, layout, q.device, q.workload)


def llm_longest_context(architecture, bits, memory_gb, batch, kv_bits, tp, pp, utilization, max_context,
                        runtime=None, max_num_seqs=None):
    """The most tokens per sequence, up to `max_context`, that fit with `batch`
    sequences on `tp` × `pp` devices, the runtime's reserve sized for `max_num_seqs` (NULL: not a valid layout)."""
    if None in (architecture, bits, memory_gb, max_context):
        return None
    q = question(architecture, bits, {"memory_gb": memory_gb}, 1, batch, kv_bits, utilization, runtime,
                 max_num_seqs)
    layout = layout_of(tp, pp)
    if sizing.layout_problem(q.architecture, layout):
        return None
    return sizing.longest_context(q.architecture, q.checkpoint, layout, q.device, q.workload,
                                  whole("max_context", max_context))


def uniform_bits(bits):
    """Checkpoint bits JSON for weights all in one format (a number format given instead of a checkpoint)."""
    return None if bits is None else json.dumps(vars(sizing.Checkpoint.uniform(number("bits", bits, positive=True))))


FUNCTIONS = (weights_gb, bits_per_weight, kv_cache_gb, kv_cache_mla_gb, kv_cache_swa_gb, llm_cache_gb, llm_state_gb,
             decode_tokens_per_s, expected_experts, llm_fit, llm_size, llm_largest_batch, llm_longest_context,
             uniform_bits)


def arities(fn):
    """Every argument count a function takes: SQLite registers one name per count,
    so an argument added with a default keeps the older calls working."""
    parameters = inspect.signature(inspect.unwrap(fn)).parameters.values()
    required = sum(1 for p in parameters if p.default is inspect.Parameter.empty)
    return range(required, len(parameters) + 1)


def efficiency_of(conn):
    """`decode_efficiency_of(family, model_class, regime)`: the measured share of the
    ceiling as JSON {efficiency, basis, results}, NULL when the database holds no
    decode_efficiency table or no row for the case (then there is no expected
    figure). The table is read once, when the connection opens: the database is
    immutable, and a lookup must not run a query inside the query that calls it."""
    try:
        rows = conn.execute("select accelerator_family, model_class, batch_regime, efficiency, basis, results "
                            "from decode_efficiency").fetchall()
    except sqlite3.Error:  # no such table (before the results are built, or another database)
        rows = []
    table = {(family, model_class, regime): json.dumps({"efficiency": efficiency, "basis": basis, "results": results})
             for family, model_class, regime, efficiency, basis, results in rows}

    def lookup(family, model_class, regime):
        return table.get((family, model_class, regime))
    return lookup


@hookimpl
def prepare_connection(conn):
    for fn in FUNCTIONS:
        for count in arities(fn):
            conn.create_function(fn.__name__, count, fn, deterministic=True)
    conn.create_function("decode_efficiency_of", 3, efficiency_of(conn), deterministic=True)


# Parameter checks of the canned queries

class Lookup:
    """Slugs the checks compare parameters with, read from the query's database."""

    def __init__(self, path):
        self.conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)

    def values(self, sql, *params):
        return {row[0] for row in self.conn.execute(sql, params)}

    def close(self):
        self.conn.close()


def given(args, name, default=""):
    value = args.get(name, "").strip()
    return value if value else default


LARGEST_WHOLE = 999_999_999  # nine digits: what the queries cast to an integer without overflow


def whole_problem(name, value, required=True):
    if value == "" and not required:
        return None
    if value == "" or not value.isascii() or not value.isdigit() or len(value) > 9 or int(value) < 1:
        return f"{name} must be a whole number from 1 to {LARGEST_WHOLE:,}, got {value!r}"
    return None


def fraction_problem(name, value):
    """A runtime's memory fraction; empty: the runtime's own default."""
    if value == "":
        return None
    try:
        fraction = float(value)
    except ValueError:
        fraction = math.nan
    if not value.isascii() or not 0 < fraction <= 1:
        return f"{name} must be a number in (0, 1], got {value!r}"
    return None


def runtime_problem(value):
    if value == "" or value.lower() in sizing.runtimes.RUNTIMES:
        return None
    return f"runtime {value!r} is not one of: {', '.join(sizing.runtimes.RUNTIMES)} (leave it empty for vllm)"


def slug_problem(name, value, known, what):
    if value in known:
        return None
    return (f"{name} is required: " if value == "" else f"{name} {value!r} is not ") + what


FORMATS_WITH_BITS = "select slug from number_formats where coalesce(effective_bits, bits) is not null"


def sizing_problems(args, lookup, numbers):
    """Problems of a sizing query's parameters: the model, its weights
    (a checkpoint of the model or one number format), the KV format and the
    whole-number and fraction parameters named in `numbers`."""
    model = given(args, "model")
    problems = [slug_problem("model", model, lookup.values("select slug from models"), "a slug of the models table")]
    checkpoint, weight_format = given(args, "checkpoint"), given(args, "weight_format")
    if checkpoint:
        known = lookup.values("select slug from checkpoints where model = ?", model)
        problems.append(slug_problem("checkpoint", checkpoint, known, f"a checkpoint of model {model!r} "
                                     "(a slug of the checkpoints table)"))
        if weight_format:
            problems.append("give checkpoint or weight_format, not both")
    else:
        problems.append(slug_problem("weight_format", weight_format, lookup.values(FORMATS_WITH_BITS),
                                     "a slug of number_formats with known bits"))
    problems.append(slug_problem("kv_format", given(args, "kv_format"), lookup.values(FORMATS_WITH_BITS),
                                 "a slug of number_formats with known bits"))
    for name, required, default in numbers:
        if name == "usable_fraction":
            problems.append(fraction_problem(name, given(args, name, default)))
        else:
            problems.append(whole_problem(name, given(args, name, default), required))
    return problems + [runtime_problem(given(args, "runtime"))]


CHECKS = {
    "what-fits": lambda args, lookup: sizing_problems(args, lookup, (
        ("context", True, ""), ("batch", True, "1"), ("tp", False, ""), ("pp", False, ""),
        ("usable_fraction", False, ""), ("max_num_seqs", False, ""))),
    "longest-context": lambda args, lookup: sizing_problems(args, lookup, (
        ("batch", True, "1"), ("pp", True, "1"), ("max_context", False, ""), ("usable_fraction", False, ""),
        ("max_num_seqs", False, ""))) + [max_context_problem(args, lookup)],
    "largest-batch": lambda args, lookup: sizing_problems(args, lookup, (
        ("context", True, ""), ("pp", True, "1"), ("usable_fraction", False, ""), ("max_num_seqs", False, ""))),
    "cost-per-million-tokens": lambda args, lookup: [
        slug_problem("model", given(args, "model"), lookup.values("select slug from models"), "a slug of the models table"),
        slug_problem("weight_format", given(args, "weight_format"), lookup.values(FORMATS_WITH_BITS),
                     "a slug of number_formats with known bits"),
        whole_problem("batch", given(args, "batch", "1")), whole_problem("context", given(args, "context", "2048")),
        whole_problem("max_num_seqs", given(args, "max_num_seqs"), required=False),
        fraction_problem("usable_fraction", given(args, "usable_fraction")), runtime_problem(given(args, "runtime"))],
    "per-dollar-per-watt": lambda args, lookup: [device_class_problem(given(args, "device_class"), lookup)],
    "articles-about": lambda args, lookup: [
        slug_problem("accelerator", given(args, "accelerator"), lookup.values("select slug from accelerators"),
                     "a slug of the accelerators table")],
    "search-articles": lambda args, lookup: [search_query_problem(search_words(args.get("q", "")))],
}
CHECKS.update({
    name: lambda args, lookup: benchmark_problems(args, lookup)
    for name in ("measured-vs-roofline", "best-result-per-accelerator")})
ALWAYS_CHECKED = {"per-dollar-per-watt"}  # no parameter is required: an empty form is an answer


# The measured queries: a benchmark is required; scenario, accuracy target and round narrow it when given.
BENCHMARK_FILTERS = ("scenario", "accuracy_target", "round")


def benchmark_problems(args, lookup):
    problems = [slug_problem("benchmark", given(args, "benchmark"),
                             lookup.values("select distinct benchmark from benchmark_results"),
                             "a benchmark of benchmark_results (llama2-70b, mixtral-8x7b...)")]
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
