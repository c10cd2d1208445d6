"""The memory-bound decode ceiling of a benchmark result, from the sizing functions of etl/sizing.py.

A result of an LLM benchmark in tokens/s is set beside what the accelerator's
memory bandwidth allows for the same model: every decode step reads the
weights a tensor-parallel rank holds and the KV cache of the batch
(`sizing.size`, docs/LLM_MATH.md "Decode ceiling"). The assumptions are the
same for every result, written here once and in docs/DATA.md:

- weights: the narrowest format the result states, on every linear layer
  (a checkpoint at least that small: the ceiling is never below the real one
  for the weights' share);
- KV cache: FP8 (8 bits per value), every sequence `CONTEXT_TOKENS` long;
- layout: tensor parallelism over the node's accelerators, up to 8 and a
  divisor of the attention heads, one pipeline stage;
- batch: large-batch scenarios (Offline, Server, Interactive) the largest batch
  that fits at 90% of device memory (the sizing default); SingleStream batch 1;
- memory: as the runtime sees it where known (runtime_memory), else the
  vendor's figure.

The ceiling is per accelerator: the layout's tokens/s over its devices. A
result above it is not given a share (etl/transform.py): the stated format
cannot be what ran.
"""

import re
from typing import NamedTuple

from . import sizing

CONTEXT_TOKENS = 2048
KV_BITS = 8
MAX_TP = 8
LARGE_BATCH_SCENARIOS = ("Offline", "Server", "Interactive")
BATCH_ONE_SCENARIOS = ("SingleStream",)
# Spellings of the summaries' weight_data_types that are not number_formats slugs.
FORMAT_SPELLINGS = {"bfloat16": "bf16", "f32": "fp32", "f8_e4m3": "fp8-e4m3"}


class Ceiling(NamedTuple):
    tokens_per_s: float  # per accelerator
    basis: str


def batch_regime(scenario: str) -> str | None:
    if scenario in LARGE_BATCH_SCENARIOS:
        return "large-batch"
    return "batch-1" if scenario in BATCH_ONE_SCENARIOS else None


def weight_bits(stated: str | None, bits_of: dict[str, float]) -> float | None:
    """Bits per weight of the narrowest number format named in `stated` ('fp8', 'fp8,bf16', 'BF16/F32/F8_E4M3')."""
    if not stated:
        return None
    names = (FORMAT_SPELLINGS.get(token, token) for token in re.split(r"[^a-z0-9_-]+", stated.lower()))
    found = [bits_of[name] for name in names if name in bits_of]
    return min(found) if found else None


def tensor_parallel(arch: sizing.Architecture, per_node: int | None) -> int:
    """The largest divisor of the heads up to the node's accelerators (and MAX_TP)."""
    most = min(MAX_TP, per_node or 1)
    return max(d for d in sizing.divisors(arch.attention_heads) if d <= most)


def ceiling(arch: sizing.Architecture, bits: float, memory_gb: float, bandwidth_gbs: float,
            per_node: int | None, scenario: str) -> Ceiling | None:
    """The decode ceiling per accelerator of one result, or None when the model does not fit."""
    regime = batch_regime(scenario)
    if regime is None:
        return None
    layout = sizing.Layout(tensor_parallel(arch, per_node))
    device = sizing.Device(memory_gb * sizing.GB, bandwidth_gbs)
    checkpoint = sizing.Checkpoint.uniform(bits)
    batch = 1 if regime == "batch-1" else sizing.largest_batch(
        arch, checkpoint, layout, device, sizing.Workload(CONTEXT_TOKENS, 1, KV_BITS))
    if batch < 1:
        return None
    result = sizing.size(arch, checkpoint, layout, device, sizing.Workload(CONTEXT_TOKENS, batch, KV_BITS))
    if not result.fits:
        return None
    basis = (f"TP {layout.tp}, batch {batch} of {CONTEXT_TOKENS} tokens, weights {bits:g} bits, KV {KV_BITS} bits, "
             f"{memory_gb:g} GB at {bandwidth_gbs:g} GB/s")
    return Ceiling(result.tokens_per_s / layout.devices, basis)
