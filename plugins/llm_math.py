"""LLM memory and speed math as SQL functions (see docs/LLM_MATH.md).

Each function is tiny and pure so it can be tested by importing this module;
`prepare_connection` registers them on every Datasette connection. GB are
decimal (10^9 bytes), like every GB column of the database.

NULL in gives NULL out: a model with an unknown figure yields an unknown
answer, never a made-up one. A nonsensical argument raises ValueError. sqlite
only reports "user-defined function raised exception" for that, so the SQL
wrapper remembers the message and `startup` makes Datasette show it instead.

`raise_error(message)` lets a canned query refuse its parameters the same way:
Datasette answers HTTP 400 with the message (`asgi_wrapper` does it for CSV).
"""

import contextvars
import functools
import inspect
import math
import sqlite3
import threading

from datasette import hookimpl

GENERIC_ERROR = "user-defined function raised exception"
BYTES_PER_GB = 1e9

# Effective bits per stored value. Plain formats store their element bits;
# block-scaled formats add one shared scale per block: element bits
# + scale bits / block size (OCP MX: 8-bit E8M0 scale per 32 elements;
# NVFP4: 8-bit E4M3 scale per 16 elements, per-tensor FP32 scale ignored).
ELEMENT_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "fp8-e4m3": 8,
                "fp8-e5m2": 8, "int8": 8, "int4": 4}
BLOCK_SCALED = {  # slug: (element bits, block size, scale bits)
    "mxfp8": (8, 32, 8), "mxfp6": (6, 32, 8), "mxfp4": (4, 32, 8), "nvfp4": (4, 16, 8),
}

_failure = threading.local()  # error of the last failing call, per SQL thread
_refusal = contextvars.ContextVar("refusal", default=None)  # message of raise_error in this request


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


def cached_values_gb(layers, values_per_token, tokens, batch, bytes_per_value):
    """layers × values cached per token and layer × tokens × batch × bytes, in GB."""
    return layers * values_per_token * tokens * batch * bytes_per_value / BYTES_PER_GB


@nullable
def kv_cache_gb(layers, kv_heads, head_dim, tokens, batch, bytes_per_value):
    """MHA/GQA/MQA: one key and one value vector per KV head, layer and token."""
    kv_values = 2 * number("kv_heads", kv_heads, positive=True) * number("head_dim", head_dim, positive=True)
    return cached_values_gb(number("layers", layers, positive=True), kv_values, number("tokens", tokens),
                            number("batch", batch), number("bytes_per_value", bytes_per_value, positive=True))


@nullable
def kv_cache_mla_gb(layers, latent_dim, rope_dim, tokens, batch, bytes_per_value):
    """MLA (DeepSeek-V2/V3): one compressed latent plus the decoupled RoPE key per token and layer."""
    values = number("latent_dim", latent_dim, positive=True) + number("rope_dim", rope_dim)
    return cached_values_gb(number("layers", layers, positive=True), values, number("tokens", tokens),
                            number("batch", batch), number("bytes_per_value", bytes_per_value, positive=True))


@nullable
def kv_cache_swa_gb(layers, full_layers, kv_heads, head_dim, tokens, window, batch, bytes_per_value):
    """Sliding-window models: full-attention layers cache every token, the
    others at most `window` tokens."""
    layers, full_layers = number("layers", layers, positive=True), number("full_layers", full_layers)
    if full_layers > layers:
        raise ValueError(f"full_layers ({full_layers:g}) cannot exceed layers ({layers:g})")
    tokens, window = number("tokens", tokens), number("window", window, positive=True)
    kv_values = 2 * number("kv_heads", kv_heads, positive=True) * number("head_dim", head_dim, positive=True)
    cached_tokens = full_layers * tokens + (layers - full_layers) * min(tokens, window)
    return cached_values_gb(1, kv_values, cached_tokens, number("batch", batch),
                            number("bytes_per_value", bytes_per_value, positive=True))


@nullable
def decode_tokens_per_s(bandwidth_gbs, gb_read_per_token):
    """Memory-bound decode ceiling: every token reads its weights and KV cache once."""
    return number("bandwidth_gbs", bandwidth_gbs) / number("gb_read_per_token", gb_read_per_token, positive=True)


@nullable
def accelerators_needed(required_gb, memory_gb, usable_fraction):
    """Devices needed to hold `required_gb` when each can use `usable_fraction` of its memory."""
    usable_fraction = number("usable_fraction", usable_fraction, positive=True)
    if usable_fraction > 1:
        raise ValueError(f"usable_fraction must be in (0, 1], got {usable_fraction:g}")
    ratio = number("required_gb", required_gb) / (number("memory_gb", memory_gb, positive=True) * usable_fraction)
    # 22.8 / (24 × 0.95) is 1.0000000000000002 in floating point: round before
    # ceil so an exact fit is not counted as one more device.
    return math.ceil(round(ratio, 9))


FUNCTIONS = (weights_gb, bits_per_weight, kv_cache_gb, kv_cache_mla_gb, kv_cache_swa_gb,
             decode_tokens_per_s, accelerators_needed)


class Refusal(sqlite3.OperationalError):
    """A query stopped by raise_error: its parameters were refused."""


def raise_error(message):
    """SQL `raise_error(message)`: stop the query with `message`; NULL stops nothing and gives 1.

    A canned query passes `group_concat(error, '; ')` of what is wrong with its
    parameters, NULL when nothing is. Datasette answers the failed query with
    HTTP 400: its query page with the form and the message, or
    {"ok": false, "error": message} in JSON.
    """
    if message is None:
        return 1
    _failure.error = Refusal(str(message))
    raise ValueError(message)


def reporting(fn):
    """The SQL version of `fn`: remembers the message of a ValueError for `explain_errors`."""
    def sql_function(*args):
        try:
            return fn(*args)
        except ValueError as error:
            _failure.error = sqlite3.OperationalError(f"{fn.__name__}(): {error}")
            raise
    return sql_function


def arity(fn):
    return len(inspect.signature(inspect.unwrap(fn)).parameters)


@hookimpl
def prepare_connection(conn):
    for fn in FUNCTIONS:
        conn.create_function(fn.__name__, arity(fn), reporting(fn), deterministic=True)
    conn.create_function("raise_error", 1, raise_error, deterministic=True)


def explain_errors(database):
    """Replace sqlite's generic function error by the message the function gave.

    Datasette runs each query in a worker thread and shows str(error) with a
    400; the failing function stored its error in that same thread, so the
    wrapper around the threaded call can swap it in before Datasette sees it.
    A refusal is also noted for the request, which `refusing` reads.
    """
    execute_fn = database.execute_fn

    async def execute_fn_explained(fn):
        def explained(conn):
            _failure.error = None
            try:
                return fn(conn)
            except sqlite3.OperationalError as error:
                if str(error) == GENERIC_ERROR and _failure.error:
                    raise _failure.error from error
                raise
        try:
            return await execute_fn(explained)
        except Refusal as refusal:
            _refusal.set(str(refusal))
            raise

    database.execute_fn = execute_fn_explained


@hookimpl
def startup(datasette):
    for database in datasette.databases.values():
        explain_errors(database)


def refusing(send):
    """`send` for a CSV response: a refused query gets 400 and the message as
    plain text instead of the CSV (whatever type `_trace` asked for)."""
    refused = False

    async def send_or_refuse(event):
        nonlocal refused
        if event["type"] == "http.response.start" and _refusal.get() is not None:
            refused = True
            headers = [(name, value) for name, value in event.get("headers", [])
                       if name.lower() not in (b"content-type", b"content-length")]
            await send(dict(event, status=400, headers=headers + [(b"content-type", b"text/plain; charset=utf-8")]))
            await send({"type": "http.response.body", "body": (_refusal.get() + "\n").encode()})
        elif not refused:  # the rest of Datasette's (empty) CSV
            await send(event)
    return send_or_refuse


@hookimpl
def asgi_wrapper():
    """Datasette 0.65 answers the CSV of a failed query with 200 and an empty
    body; a refused canned query must say what is wrong, in CSV too."""
    def wrap(app):
        async def csv_refusals(scope, receive, send):
            if scope["type"] != "http":
                return await app(scope, receive, send)
            token = _refusal.set(None)  # a request may run inside another (datasette.client)
            try:
                await app(scope, receive, refusing(send) if scope["path"].endswith(".csv") else send)
            finally:
                _refusal.reset(token)
        return csv_refusals
    return wrap
