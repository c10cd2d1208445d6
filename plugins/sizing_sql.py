"""LLM sizing as SQL functions, through Datasette's documented `prepare_connection` hook.

The questions are asked of `domain/fits.py` and the formulas are
`domain/sizing.py` (docs/LLM_MATH.md); each argument is checked by its
parameter's check (domain/parameters.py), the same the what-fits page and the
canned queries use. NULL in gives NULL out: a model with an unknown figure
yields an unknown answer, never a made-up one. GB are decimal (10^9 bytes).
"""

import json
from dataclasses import asdict

from datasette import hookimpl

from domain import fits, parameters, sizing
from domain.parameters import number, whole
from serving.sql_functions import nullable, register

# Effective bits per stored value. Plain formats store their element bits;
# block-scaled formats add one shared scale per block: element bits
# + scale bits / block size (OCP MX: 8-bit E8M0 scale per 32 elements;
# NVFP4: 8-bit E4M3 scale per 16 elements, per-tensor FP32 scale ignored).
ELEMENT_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "fp8-e4m3": 8,
                "fp8-e5m2": 8, "int8": 8, "int4": 4}
BLOCK_SCALED = {  # slug: (element bits, block size, scale bits)
    "mxfp8": (8, 32, 8), "mxfp6": (6, 32, 8), "mxfp4": (4, 32, 8), "nvfp4": (4, 16, 8),
}


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


@nullable
def llm_cache_gb(architecture, tokens, batch, kv_bits, tp):
    """What `batch` sequences of `tokens` tokens keep on one of `tp` ranks, all
    layers: the KV cache in `kv_bits`, a sparse-attention indexer's keys and the
    fixed state of linear-attention and state-space layers."""
    return sizing.kv_bytes(parameters.architecture(architecture), whole("tokens", tokens, minimum=0),
                           parameters.batch(batch), number("kv_bits", kv_bits, positive=True),
                           whole("tp", tp)) / sizing.GB


@nullable
def llm_state_gb(architecture, batch, tp):
    """The fixed-size state of the linear-attention and state-space layers of
    `batch` sequences on one of `tp` ranks, whatever the context (0 for a model without such layers)."""
    values = sizing.state_values_per_sequence(parameters.architecture(architecture), whole("tp", tp))
    return values * parameters.batch(batch) * sizing.STATE_BITS / 8 / sizing.GB


# Deployments: the models and checkpoints tables' JSON columns in, JSON or a number out

def device_figures(device: dict) -> fits.DeviceFigures:
    """A JSON object {memory_gb, bandwidth_gbs, dense_tflops, link_gbs, slug, bandwidth_share} as the
    question's device."""
    return fits.DeviceFigures(device["memory_gb"], device.get("bandwidth_gbs"), device.get("dense_tflops"),
                              device.get("link_gbs"), str(device.get("slug") or ""), device.get("bandwidth_share"))


def as_json(answer: fits.Fit) -> str:
    return json.dumps(asdict(answer))


def llm_fit(architecture, bits, device, workload):
    """JSON: a deployment of one model on one accelerator (docs/LLM_MATH.md).

    `device`: {"memory_gb", "bandwidth_gbs", "dense_tflops", "link_gbs", "slug", "bandwidth_share"};
    `workload`: {"context", "batch", "kv_bits", "tp", "pp", "runtime", "fraction", "max_num_seqs"}
    (tp null: the layout proposed; runtime: vllm by default; fraction and max_num_seqs null: the runtime's own)."""
    if None in (architecture, bits, device, workload):
        return None
    device, workload = json.loads(device), json.loads(workload)
    if device.get("memory_gb") is None:
        return None
    q = fits.question(architecture, bits, device_figures(device), workload.get("context"), workload.get("batch", 1),
                      workload.get("kv_bits"), workload.get("fraction"), workload.get("runtime"),
                      workload.get("max_num_seqs"))
    return as_json(fits.fit(q, workload.get("tp"), workload.get("pp")))


def llm_size(architecture, bits, memory_gb, bandwidth_gbs, context, batch, kv_bits, tp, pp, utilization):
    """The arguments of the first release: vLLM with `utilization` as its
    gpu_memory_utilization, no compute peak or interconnect. Kept for saved
    queries; llm_fit answers the same with the runtime, compute and links."""
    if architecture is None or bits is None or memory_gb is None:
        return None
    q = fits.question(architecture, bits, fits.DeviceFigures(memory_gb, bandwidth_gbs), context, batch, kv_bits,
                      utilization)
    return as_json(fits.fit(q, tp, pp))


def llm_largest_batch(architecture, bits, memory_gb, context, kv_bits, tp, pp, utilization, runtime=None,
                      max_num_seqs=None):
    """The most sequences of `context` tokens that fit on `tp` × `pp` devices, at most the runtime's
    `max_num_seqs` (NULL: not a valid layout)."""
    if None in (architecture, bits, memory_gb):
        return None
    q = fits.question(architecture, bits, fits.DeviceFigures(memory_gb), context, 1, kv_bits, utilization, runtime,
                      max_num_seqs)
    return fits.largest_batch(q, tp, pp)


def llm_longest_context(architecture, bits, memory_gb, batch, kv_bits, tp, pp, utilization, max_context,
                        runtime=None, max_num_seqs=None):
    """The most tokens per sequence, up to `max_context`, that fit with `batch` sequences on `tp` × `pp`
    devices, the runtime's reserve sized for `max_num_seqs` (NULL: not a valid layout)."""
    if None in (architecture, bits, memory_gb, max_context):
        return None
    q = fits.question(architecture, bits, fits.DeviceFigures(memory_gb), 1, batch, kv_bits, utilization, runtime,
                      max_num_seqs)
    return fits.longest_context(q, tp, pp, max_context)


def uniform_bits(bits):
    """Checkpoint bits JSON for weights all in one format (a number format given instead of a checkpoint)."""
    return None if bits is None else json.dumps(vars(sizing.Checkpoint.uniform(number("bits", bits, positive=True))))


@nullable
def context_tokens(text):
    """Tokens of a context written as a reader writes it (32768, 32k, 128K, 1M; k = 1,024): the context
    parameter's one check, so the canned queries read `32k` as the page does."""
    return parameters.context(text)


FUNCTIONS = (context_tokens, weights_gb, bits_per_weight, kv_cache_gb, kv_cache_mla_gb, kv_cache_swa_gb, llm_cache_gb, llm_state_gb,
             llm_fit, llm_size, llm_largest_batch, llm_longest_context, uniform_bits)


@hookimpl
def prepare_connection(conn):
    register(conn, FUNCTIONS)
