"""Inference runtimes: what each keeps of a device's memory before the KV cache.

One home for the runtimes the sizing answers for (vLLM, SGLang, TensorRT-LLM,
llama.cpp): each rule is read from the runtime's own code or documentation at
the version named in its record, and docs/LLM_MATH.md shows the arithmetic.
A runtime gives, per device, three named parts besides weights and KV cache:

- `headroom`: memory outside the runtime's fraction (vLLM's
  `gpu_memory_utilization`, SGLang's `mem_fraction_static`, TensorRT-LLM's
  `free_gpu_memory_fraction`); the CUDA context, NCCL buffers and CUDA graphs
  live there;
- `activation`: the activation peak the runtime profiles (or reserves) inside
  its fraction before it sizes the KV cache;
- `overhead`: other memory inside the fraction (vLLM's "non-torch memory",
  llama.cpp's compute buffers).

The KV cache gets device − headroom − weights − activation − overhead.
"""

from collections.abc import Callable
from dataclasses import dataclass

GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class Model:
    """What a runtime's reserve depends on: the model's widths, on one tensor-parallel rank."""

    hidden_size: int
    q_width: int             # attention heads × head dimension (whole model)
    ffn_width: int           # widest FFN one token goes through (dense, or experts per token × expert width)
    vocab_size: int


@dataclass(frozen=True)
class Reserve:
    """Bytes a runtime keeps on one device besides the weights and the KV cache."""

    headroom: float
    activation: float
    overhead: float

    @property
    def total(self) -> float:
        return self.headroom + self.activation + self.overhead


@dataclass(frozen=True)
class Runtime:
    slug: str
    name: str
    version: str        # the release or commit its figures were read at
    fraction_name: str  # the setting a reader changes ("" where there is none)
    sequences_name: str  # the setting that limits the sequences run together
    plan: Callable[["Model", float, int, bool, float, "float | None", "int | None"], Reserve]


def forward_activation(model: Model, tokens: int, tp: int, bytes_per_value: float = 2) -> float:
    """Activation peak of one forward pass over `tokens` tokens on one rank: the
    residual stream and norms (4 × hidden), the query, key/value and output of
    attention and the FFN's gate and up projections (split by TP), in BF16."""
    return tokens * (4 * model.hidden_size + (2 * model.q_width + 2 * model.ffn_width) / tp) * bytes_per_value


# vLLM: gpu_memory_utilization defaults to 0.92 (vllm/config/cache.py at
# 002f10e0); the worker profiles one forward pass of max_num_batched_tokens and a
# sampler pass over max_num_seqs requests, and keeps the peak and the non-torch
# memory out of the KV cache. Defaults by device memory (vllm/engine/arg_utils.py
# at 99d7eb5d, OpenAI server): 8,192 tokens and 1,024 sequences on GPUs of
# 70 GiB or more other than A100, 2,048 and 256 below.
VLLM_UTILIZATION = 0.92
VLLM_LARGE_DEVICE = 70 * GIB
VLLM_BATCHED_TOKENS = {True: 8192, False: 2048}
VLLM_MAX_SEQS = {True: 1024, False: 256}
# The sampler pass holds the FP32 logits of max_num_seqs requests over the whole
# vocabulary (vLLM gathers the vocabulary-parallel logits on every rank) with
# the sampler's temporaries: llm-d's H100 runs measured a peak of 38.4-38.9
# bytes per logit for four vocabularies (gpt-oss 7.38 GiB, Llama 3.1 8B 4.76,
# Qwen3-0.6B 5.56, Qwen3-32B 5.64 GiB, at 1,024 sequences); their mean is kept.
VLLM_SAMPLER_BYTES_PER_LOGIT = 38.67
# Non-torch memory measured by the same runs: 0.13 GiB on one GPU, 0.55 GiB per
# GPU at TP=2 (NCCL's buffers).
VLLM_NON_TORCH = {1: 0.13 * GIB}
VLLM_NON_TORCH_PARALLEL = 0.55 * GIB


def vllm_large_device(device_bytes: float, device_slug: str) -> bool:
    return device_bytes >= VLLM_LARGE_DEVICE and "a100" not in device_slug


def vllm_plan(model: Model, device_bytes: float, tp: int, large: bool, weights: float,
              fraction: float | None, max_seqs: int | None = None) -> Reserve:
    forward = forward_activation(model, VLLM_BATCHED_TOKENS[large], tp)
    # the sampler pass is profiled over max_num_seqs requests: a lower limit shrinks it (gpt-oss-20b on 16 GB)
    sampler = (max_seqs or VLLM_MAX_SEQS[large]) * model.vocab_size * VLLM_SAMPLER_BYTES_PER_LOGIT
    return Reserve(headroom=device_bytes * (1 - (fraction or VLLM_UTILIZATION)),
                   activation=max(forward, sampler),
                   overhead=VLLM_NON_TORCH.get(tp, VLLM_NON_TORCH_PARALLEL))


# SGLang: when --mem-fraction-static is not given, _handle_gpu_memory_settings
# (python/sglang/srt/server_args.py at 001067ff) picks the chunked prefill size
# and the decode CUDA graphs' largest batch by device memory (MiB), reserves
# 512 MiB + 1.5 MiB per prefill token + tp × pp / 8 GiB + 2 MiB per graph batch,
# at least 10 GiB on devices above 60 GiB, and sets the fraction to
# (memory − reserved) / memory, rounded to 3 decimals. The prefill CUDA graphs'
# reserve (8 MiB per captured size, 1.5 GiB with MLA) is left out: whether
# they are on by default was not read.
@dataclass(frozen=True)
class SglangDefaults:
    below_mib: float
    chunked_prefill: int
    graph_batch: int            # decode CUDA graphs' largest batch below TP=4
    graph_batch_tp4: int        # from TP=4


SGLANG_DEFAULTS = (
    SglangDefaults(20 * 1024, 2048, 8, 8),
    SglangDefaults(35 * 1024, 2048, 24, 80),
    SglangDefaults(60 * 1024, 4096, 32, 160),
    SglangDefaults(160 * 1024, 8192, 256, 512),
    SglangDefaults(float("inf"), 16384, 512, 512),
)
SGLANG_FLOOR_ABOVE_MIB = 60 * 1024
SGLANG_FLOOR_MIB = 10 * 1024


def sglang_fraction(device_bytes: float, tp: int) -> float:
    memory_mib = device_bytes / MIB
    defaults = next(d for d in SGLANG_DEFAULTS if memory_mib < d.below_mib)
    graph_batch = defaults.graph_batch if tp < 4 else defaults.graph_batch_tp4
    reserved = 512 + max(defaults.chunked_prefill, 2048) * 1.5 + tp / 8 * 1024 + graph_batch * 2
    if memory_mib > SGLANG_FLOOR_ABOVE_MIB:
        reserved = max(reserved, SGLANG_FLOOR_MIB)
    return round((memory_mib - reserved) / memory_mib, 3)


def sglang_plan(model: Model, device_bytes: float, tp: int, large: bool, weights: float,
                fraction: float | None, max_seqs: int | None = None) -> Reserve:
    return Reserve(headroom=device_bytes * (1 - (fraction or sglang_fraction(device_bytes, tp))),
                   activation=0.0, overhead=0.0)


# TensorRT-LLM: the KV cache takes free_gpu_memory_fraction (0.9, KvCacheConfig
# in the 1.4.0rc4 documentation) of the memory still free once the weights and
# the activation buffers are allocated; the buffers are sized for
# max_num_tokens, 8,192 in NVIDIA's deployment wrapper of its LLM API.
TRTLLM_FREE_FRACTION = 0.9
TRTLLM_MAX_NUM_TOKENS = 8192


def trtllm_plan(model: Model, device_bytes: float, tp: int, large: bool, weights: float,
                fraction: float | None, max_seqs: int | None = None) -> Reserve:
    activation = forward_activation(model, TRTLLM_MAX_NUM_TOKENS, tp)
    free = max(device_bytes - weights - activation, 0.0)
    return Reserve(headroom=free * (1 - (fraction or TRTLLM_FREE_FRACTION)), activation=activation, overhead=0.0)


# llama.cpp: no fraction; besides weights and KV cache it allocates compute
# buffers for one micro-batch (n_ubatch, 512 in common/common.h at de93b991):
# the FP32 activations of the micro-batch and its FP32 logits over the vocabulary.
LLAMA_CPP_UBATCH = 512


def llama_cpp_plan(model: Model, device_bytes: float, tp: int, large: bool, weights: float,
                   fraction: float | None, max_seqs: int | None = None) -> Reserve:
    logits = LLAMA_CPP_UBATCH * model.vocab_size * 4
    return Reserve(headroom=device_bytes * (1 - fraction) if fraction else 0.0,
                   activation=forward_activation(model, LLAMA_CPP_UBATCH, tp, 4), overhead=logits)


# The sequence limits: vLLM's max_num_seqs (its sampler reserve follows it), SGLang's max_running_requests,
# TensorRT-LLM's max_batch_size and llama.cpp's parallel slots (-np). Each caps the largest batch; only
# vLLM's changes a reserve the sizing counts.
RUNTIMES = {r.slug: r for r in (
    Runtime("vllm", "vLLM", "vllm-project/vllm 002f10e0 (cache.py), 99d7eb5d (arg_utils.py)",
            "gpu_memory_utilization", "max_num_seqs", vllm_plan),
    Runtime("sglang", "SGLang", "sgl-project/sglang 001067ff (server_args.py)", "mem_fraction_static",
            "max_running_requests", sglang_plan),
    Runtime("tensorrt-llm", "TensorRT-LLM", "TensorRT-LLM 1.4.0rc4 documentation (KvCacheConfig)",
            "free_gpu_memory_fraction", "max_batch_size", trtllm_plan),
    Runtime("llama-cpp", "llama.cpp", "ggml-org/llama.cpp de93b991 (common/common.h)", "", "n_parallel",
            llama_cpp_plan),
)}
DEFAULT_RUNTIME = "vllm"


class UnknownRuntime(ValueError):
    pass


def runtime(slug: str) -> Runtime:
    if slug not in RUNTIMES:
        raise UnknownRuntime(f"unknown runtime {slug!r}; known: {', '.join(RUNTIMES)}")
    return RUNTIMES[slug]
