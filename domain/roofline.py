"""The decode ceiling of a benchmark result, from the sizing functions of domain/sizing.py.

A result of an LLM benchmark in tokens/s is set beside what the accelerator
allows for the same model and the benchmark's own workload: every decode step
reads the weights a tensor-parallel rank holds and the KV cache of the batch
(`sizing.size`, docs/LLM_MATH.md "Decode ceiling"), and every sample's prompt
is prefilled at the compute peak. The assumptions are the same for every
result, written here once and in docs/DATA.md:

- workload: the benchmark's mean output tokens per sample and, where
  published, mean prompt tokens (`benchmark_workloads`); a sequence holds on
  average its prompt and half its output while it decodes;
- weights: the format the submission ran (`weights_as_run` where its own
  documents state one), else the narrowest format the summary states, on every
  linear layer (a checkpoint at least that small: the ceiling is never below
  the real one for the weights' share);
- KV cache: FP8 (8 bits per value);
- layout: the tensor parallelism (a divisor of the attention heads, up to the
  node's accelerators and 8, one pipeline stage) that allows the most tokens
  per accelerator, the node's other accelerators running copies of the model;
- batch: large-batch scenarios (Offline, Server, Interactive) the largest batch
  that fits with the calculator's default runtime (vLLM: its memory fraction and
  reserve); SingleStream batch 1;
- device: what the calculator knows of it (memory as the runtime sees it where
  measured, else the printed capacity read as GiB; the dense matrix peak of the
  weights' width; half the interconnect bandwidth per direction), so the ceiling
  is the calculator's own: the slower of memory and compute, plus the
  tensor-parallel all-reduces, plus the prefill of each sample's prompt. A share
  of it is what turns the calculator's ceiling into an expected figure
  (`decode_efficiency`).

The ceiling is per accelerator: the layout's output tokens/s over its devices.
A result above it is not given a share (etl/transform.py): the format assumed
cannot be what ran.
"""

import re
from typing import NamedTuple

from . import sizing

KV_BITS = 8
MAX_TP = 8
LARGE_BATCH_SCENARIOS = ("Offline", "Server", "Interactive")
BATCH_ONE_SCENARIOS = ("SingleStream",)
# Spellings of the summaries' weight_data_types that are not number_formats slugs.
FORMAT_SPELLINGS = {"bfloat16": "bf16", "f32": "fp32", "f8_e4m3": "fp8-e4m3"}


class Candidate(NamedTuple):
    layout: sizing.Layout
    batch: int
    tokens_per_s: float  # of the layout's devices together

    @property
    def per_accelerator(self) -> float:
        return self.tokens_per_s / self.layout.devices


class BenchmarkWorkload(NamedTuple):
    """Mean tokens per sample of a benchmark (a benchmark_workloads row)."""

    output_tokens: float
    input_tokens: float | None  # None: not published; no prefill is counted

    @property
    def decode_context(self) -> int:
        """Tokens a sequence holds on average while it decodes: its prompt and half its output."""
        return max(1, round((self.input_tokens or 0) + self.output_tokens / 2))


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


def tensor_parallel(arch: sizing.Architecture, per_node: int | None) -> list[int]:
    """The tensor-parallel widths a node allows: the divisors of the heads up to its accelerators (and MAX_TP),
    narrowest first."""
    most = min(MAX_TP, per_node or 1)
    return [d for d in sizing.divisors(arch.attention_heads) if d <= most]


def peak_for(dense_tflops: dict, bits: float) -> float | None:
    """The dense matrix peak the weights compute in: the narrowest floating-point width at least as wide as
    the weights, else BF16/FP16 (as the what-fits query chooses it)."""
    widths = sorted(w for w in dense_tflops if w >= bits)
    return dense_tflops[widths[0]] if widths else dense_tflops.get(16)


def with_prefill(decode_tokens_per_s: float, prefill_s: float, output_tokens: float) -> float:
    """Output tokens/s of a layout that decodes at `decode_tokens_per_s` and spends `prefill_s` on each sample's
    prompt: a sample costs output_tokens / decode_tokens_per_s + prefill_s of the layout's time."""
    return output_tokens / (output_tokens / decode_tokens_per_s + prefill_s)


def ceiling(arch: sizing.Architecture, bits: float, figures, per_node: int | None, scenario: str,
            workload: BenchmarkWorkload) -> Ceiling | None:
    """The ceiling per accelerator of one result (the calculator's: memory, compute roof, tensor-parallel
    communication, the default runtime's reserve, the prefill of each prompt at the compute peak), or None when
    the model does not fit. `figures` is a transform.DeviceFigures."""
    regime = batch_regime(scenario)
    if regime is None:
        return None
    device = sizing.Device(figures.memory_gb * sizing.GB, figures.bandwidth_gbs,
                           peak_for(figures.dense_tflops, bits), figures.link_gbs, figures.slug)
    checkpoint = sizing.Checkpoint.uniform(bits)
    context = workload.decode_context
    # The width that allows the most tokens per accelerator (the node's other accelerators run copies of the
    # model: data parallelism, no all-reduce between them): a ceiling is the best layout's.
    best = None
    for tp in tensor_parallel(arch, per_node):
        layout = sizing.Layout(tp)
        most = sizing.largest_batch(arch, checkpoint, layout, device, sizing.Workload(context, 1, KV_BITS))
        batch = min(most, 1) if regime == "batch-1" else most
        if batch < 1:
            continue
        result = sizing.size(arch, checkpoint, layout, device, sizing.Workload(context, batch, KV_BITS))
        if not (result.fits and result.tokens_per_s is not None):
            continue
        tokens_per_s = result.tokens_per_s
        if workload.input_tokens and device.dense_tflops:
            prompt = sizing.size(arch, checkpoint, layout, device,
                                 sizing.Workload(round(workload.input_tokens), 1, KV_BITS))
            tokens_per_s = with_prefill(tokens_per_s, prompt.speed.prefill_s, workload.output_tokens)
        candidate = Candidate(layout, batch, tokens_per_s)
        if best is None or candidate.per_accelerator > best.per_accelerator:
            best = candidate
    if best is None:
        return None
    prefill = ("prefill of each prompt counted" if workload.input_tokens and device.dense_tflops
               else "no prefill (no dense peak)" if workload.input_tokens else "no prefill (no mean prompt length)")
    sample = f"{workload.output_tokens:g} output" + (f" and {workload.input_tokens:g} input" if workload.input_tokens else "")
    basis = (f"TP {best.layout.tp}, batch {best.batch} at {context} tokens; {sample} tokens per sample, {prefill}; "
             f"weights {bits:g} bits, KV {KV_BITS} bits, {figures.memory_gb:g} GB at {figures.bandwidth_gbs:g} GB/s")
    return Ceiling(best.per_accelerator, basis)
