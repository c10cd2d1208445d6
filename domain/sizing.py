"""LLM deployment sizing: parameters, checkpoint bytes, tensor-parallel layouts,
KV cache per device, decode ceiling, and the longest context or largest batch
that fits (formulas and worked examples in docs/LLM_MATH.md).

Pure functions on named records, shared by the build (parameter counts of the
models table, the fields each model must give) and by the sizing questions of
`domain/fits.py`, which the what-fits page and the SQL functions ask. Byte counts are
exact integers where the inputs are; GB are decimal (10^9 bytes).

What the estimate leaves out is listed in docs/LLM_MATH.md: activations beyond
one prefill chunk, CUDA graphs, fragmentation, speculative-decoding heads.
"""

import math
from dataclasses import dataclass, fields
from functools import lru_cache

from . import runtimes

GB = 1e9
GIB = 2**30  # a printed DRAM capacity is binary: 24 "GB" of GDDR6 is 24 GiB
MIB = 2**20
GATED_FFN_MATRICES = 3  # gate, up and down projections (SwiGLU, GeGLU): every model here
ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla", "hybrid")
# Layers whose mixer keeps a fixed-size state per sequence instead of a KV cache.
# Both are counted with one shape (value heads × key dim × value dim of state,
# a causal convolution over 2 × key heads × key dim + value heads × value dim
# channels); they differ in the small per-head projections of their input:
# Gated DeltaNet projects two per value head (beta and the decay a), Mamba-2 one (dt).
LINEAR_ATTENTION_KINDS = {"gated-deltanet": 2, "mamba2": 1}
# Recurrent and convolution states in the model's BF16: vLLM keeps both in its
# mamba_cache_dtype and mamba_ssm_cache_dtype, "auto" (the model's dtype) unless set
# (vllm/model_executor/layers/mamba/mamba_utils.py); an FP8 KV cache does not shrink them.
STATE_BITS = 16
# DeepSeek's sparse-attention indexer caches its keys in FP8 E4M3 with one FP32
# scale per 128 values (DeepSeek-V3.2-Exp inference/model.py: k_cache float8_e4m3fn,
# k_scale_cache float32 per block_size 128): 8 + 32 / 128 bits a value.
INDEXER_KEY_BITS = 8 + 32 / 128
TENSOR_GROUPS = ("embedding", "output_head", "attention", "dense_ffn", "experts", "other")
OTHER_BITS = 16  # routers, norms and vision towers stay in BF16 in every checkpoint described here


class SizingError(ValueError):
    """Inputs that describe no possible deployment (a negative size, a TP that cannot split the heads)."""


@dataclass(frozen=True)
class Architecture:
    """What a model's config file states, in the models table's names."""

    layers: int
    hidden_size: int
    attention_heads: int
    vocab_size: int
    attention: str = "gqa"
    kv_heads: int | None = None
    head_dim: int | None = None
    intermediate_size: int | None = None      # dense FFN width (dense layers of MoE models too)
    tied_embeddings: bool = False
    experts: int = 0                          # routed experts per MoE layer
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_intermediate_size: int | None = None  # width of one expert
    dense_layers: int = 0                     # MoE models: layers with a dense FFN instead of experts
    q_lora_rank: int | None = None            # MLA
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    sliding_window: int | None = None
    full_attention_layers: int | None = None
    full_attention_kv_heads: int | None = None    # when full-attention layers have their own KV heads
    full_attention_head_dim: int | None = None
    full_attention_kv_shared: bool = False        # full-attention layers cache one tensor (keys equal values)
    vision_params: int = 0                    # vision tower loaded with the model
    ffn_layers: int | None = None             # layers with an FFN, when not all (Nemotron-H alternates mixer and FFN blocks)
    ffn_matrices: int = GATED_FFN_MATRICES    # 3 gated (gate, up, down); 2 ungated (squared ReLU)
    attention_output_gate: bool = False       # the query projection also yields an output gate (Qwen3-Next)
    linear_attention: str | None = None       # kind of the fixed-state layers (LINEAR_ATTENTION_KINDS)
    linear_attention_layers: int = 0          # layers with linear attention or a state-space block, no KV cache
    linear_heads: int | None = None           # value heads (Mamba-2: heads)
    linear_key_heads: int | None = None       # query/key heads (Mamba-2: groups of B and C)
    linear_key_head_dim: int | None = None    # (Mamba-2: state size)
    linear_value_head_dim: int | None = None  # (Mamba-2: head dim)
    linear_conv_kernel: int | None = None     # width of the causal convolution
    indexer_heads: int | None = None          # sparse-attention indexer (DeepSeek-V3.2)
    indexer_head_dim: int | None = None

    @property
    def kv_heads_of_full_layers(self) -> int:
        return self.full_attention_kv_heads or self.kv_heads

    @property
    def head_dim_of_full_layers(self) -> int:
        return self.full_attention_head_dim or self.head_dim

    @property
    def attention_layers(self) -> int:
        """Layers with softmax attention (full, sliding or MLA), the ones with a KV cache."""
        return self.layers - self.linear_attention_layers

    @property
    def layers_with_ffn(self) -> int:
        return self.layers if self.ffn_layers is None else self.ffn_layers

    @property
    def moe_layers(self) -> int:
        return self.layers_with_ffn - self.dense_layers if self.experts else 0

    @classmethod
    def from_row(cls, row) -> "Architecture":
        """From a models row (a mapping); unknown keys are ignored, NULLs take the defaults."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in dict(row).items() if k in names and v is not None}
        if "vision_params_b" in row and row["vision_params_b"] is not None:
            values["vision_params"] = round(row["vision_params_b"] * 1e9)
        for flag in ("tied_embeddings", "full_attention_kv_shared", "attention_output_gate"):
            values[flag] = bool(values.get(flag, False))
        return cls(**values)


def missing_fields(row) -> list[str]:
    """The fields a models row must give to be sized, which it leaves empty.

    The build refuses such a row with its location, so no query meets it.
    """
    def absent(*names):
        return [n for n in names if row.get(n) is None]
    missing = absent("layers", "hidden_size", "attention_heads", "vocab_size", "attention")
    if row.get("attention") == "mla":
        missing += absent("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    else:
        missing += absent("kv_heads", "head_dim")
    if row.get("attention") == "hybrid":
        missing += absent("sliding_window", "full_attention_layers")
    if row.get("experts"):
        missing += absent("experts_per_token", "moe_intermediate_size")
    if not row.get("experts") or row.get("dense_layers"):
        missing += absent("intermediate_size")
    if row.get("linear_attention_layers"):
        missing += absent("linear_attention", "linear_heads", "linear_key_heads", "linear_key_head_dim",
                          "linear_value_head_dim", "linear_conv_kernel")
    if row.get("indexer_heads"):
        missing += absent("indexer_head_dim", "q_lora_rank")
    return missing


# Parameters

@dataclass(frozen=True)
class Parameters:
    """Parameter counts per tensor group (the groups a checkpoint gives formats for)."""

    embedding: int
    output_head: int
    attention: int        # all layers
    dense_ffn: int        # all dense FFN layers
    routed_experts: int   # all routed experts of all MoE layers
    shared_experts: int
    router: int
    vision: int

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self))

    @property
    def experts(self) -> int:
        return self.routed_experts + self.shared_experts

    @property
    def other(self) -> int:
        return self.router + self.vision


def attention_parameters(arch: Architecture) -> int:
    """Projection weights of one attention layer (norms and biases left out: < 0.1%),
    its sparse-attention indexer included."""
    return softmax_attention_parameters(arch) + indexer_parameters(arch)


def softmax_attention_parameters(arch: Architecture) -> int:
    if arch.attention == "mla":
        q_head = arch.qk_nope_head_dim + arch.qk_rope_head_dim
        q_out = arch.attention_heads * q_head
        q = (arch.hidden_size * arch.q_lora_rank + arch.q_lora_rank * q_out) if arch.q_lora_rank \
            else arch.hidden_size * q_out
        kv_down = arch.hidden_size * (arch.kv_lora_rank + arch.qk_rope_head_dim)
        kv_up = arch.kv_lora_rank * arch.attention_heads * (arch.qk_nope_head_dim + arch.v_head_dim)
        out = arch.attention_heads * arch.v_head_dim * arch.hidden_size
        return q + kv_down + kv_up + out
    return query_and_output_parameters(arch) + 2 * arch.hidden_size * arch.kv_heads * arch.head_dim


def query_and_output_parameters(arch: Architecture) -> int:
    """Query and output projections of a GQA/MHA layer; an output gate doubles the query's."""
    matrices = 3 if arch.attention_output_gate else 2
    return matrices * arch.hidden_size * arch.attention_heads * arch.head_dim


def indexer_parameters(arch: Architecture) -> int:
    """DeepSeek-V3.2's lightning indexer: queries from the compressed query
    (q_lora_rank × heads × head dim), one key (hidden × head dim) and one weight
    per head (hidden × heads)."""
    if not arch.indexer_heads:
        return 0
    return (arch.q_lora_rank * arch.indexer_heads * arch.indexer_head_dim
            + arch.hidden_size * arch.indexer_head_dim + arch.hidden_size * arch.indexer_heads)


def linear_conv_channels(arch: Architecture, tp: int = 1) -> float:
    """Channels of the causal convolution of a linear-attention or Mamba-2 layer
    on one rank: queries and keys (Mamba-2: B and C) of the key heads, values (x) of the value heads."""
    return (2 * kv_heads_per_rank(arch.linear_key_heads, tp) * arch.linear_key_head_dim
            + kv_heads_per_rank(arch.linear_heads, tp) * arch.linear_value_head_dim)


def linear_attention_parameters(arch: Architecture) -> int:
    """Weights of one Gated DeltaNet or Mamba-2 layer: the input projection
    (q and k of the key heads, v and the output gate z of the value heads, and
    per value head two scalars for Gated DeltaNet or one for Mamba-2), the
    causal convolution, and the output projection. Per-head constants and norms left out."""
    values = arch.linear_heads * arch.linear_value_head_dim
    per_head = LINEAR_ATTENTION_KINDS[arch.linear_attention]
    in_proj = arch.hidden_size * (2 * arch.linear_key_heads * arch.linear_key_head_dim + 2 * values
                                  + per_head * arch.linear_heads)
    return in_proj + int(linear_conv_channels(arch)) * arch.linear_conv_kernel + values * arch.hidden_size


def mixer_parameters(arch: Architecture) -> int:
    """Attention and linear-attention (state-space) weights of all layers."""
    linear = arch.linear_attention_layers * linear_attention_parameters(arch) if arch.linear_attention_layers else 0
    return arch.attention_layers * attention_parameters(arch) + linear


def ffn_parameters(hidden_size: int, width: int, matrices: int = GATED_FFN_MATRICES) -> int:
    return matrices * hidden_size * width


@lru_cache(maxsize=256)  # the layout search sizes one architecture many times
def parameters(arch: Architecture) -> Parameters:
    """Parameter counts from the config fields: embedding and output head
    (one vocab × hidden matrix each, one when tied), attention, dense FFN,
    experts and router per layer, and a loaded vision tower."""
    embedding = arch.vocab_size * arch.hidden_size
    dense_layers = arch.dense_layers if arch.experts else arch.layers_with_ffn
    expert = ffn_parameters(arch.hidden_size, arch.moe_intermediate_size, arch.ffn_matrices) if arch.experts else 0
    return Parameters(
        embedding=embedding,
        output_head=0 if arch.tied_embeddings else embedding,
        attention=mixer_parameters(arch),
        dense_ffn=dense_layers * ffn_parameters(arch.hidden_size, arch.intermediate_size, arch.ffn_matrices)
        if dense_layers else 0,
        routed_experts=arch.moe_layers * arch.experts * expert,
        shared_experts=arch.moe_layers * arch.shared_experts * expert,
        router=arch.moe_layers * arch.experts * arch.hidden_size,
        vision=arch.vision_params,
    )


def active_parameters(arch: Architecture, counts: Parameters) -> int:
    """Parameters one token reads: everything but the embedding table (one row
    is looked up), the vision tower and the routed experts it is not sent to."""
    unused_experts = counts.routed_experts * (arch.experts - arch.experts_per_token) // arch.experts \
        if arch.experts else 0
    return counts.total - counts.embedding - counts.vision - unused_experts


# How makers count the active parameters they state, which none of the pages
# read says: what a token reads (the embedding table left out; agrees with
# OpenAI's, DeepSeek's and Moonshot's figures), the embedding table counted too
# (Mistral's), or the transformer blocks alone, embedding and output head both
# left out (Z.ai's). See docs/LLM_MATH.md.
ACTIVE_COUNTINGS = ("without-embedding", "with-embedding", "without-embedding-and-head")


def active_parameters_counted(arch: Architecture, counts: Parameters, counting: str = "without-embedding") -> int:
    """Active parameters counted as a maker counts them (one of ACTIVE_COUNTINGS),
    so a computed count can be checked against the maker's stated figure."""
    active = active_parameters(arch, counts)
    adjustment = {"without-embedding": 0, "with-embedding": counts.embedding,
                  "without-embedding-and-head": -counts.output_head}
    if counting not in adjustment:
        raise SizingError(f"unknown way of counting active parameters {counting!r}; known: {', '.join(ACTIVE_COUNTINGS)}")
    return active + adjustment[counting]


# Checkpoints

@dataclass(frozen=True)
class Checkpoint:
    """Effective bits per weight of each tensor group, block and group scales included."""

    embedding: float
    output_head: float
    attention: float
    dense_ffn: float
    experts: float
    other: float = OTHER_BITS

    @classmethod
    def uniform(cls, bits: float, other: float = OTHER_BITS) -> "Checkpoint":
        """Every linear layer in one format (embeddings and head too)."""
        return cls(bits, bits, bits, bits, bits, other)


LAYER_GROUPS = ("attention", "dense_ffn", "experts")  # the groups every transformer layer has a share of


def with_layers_kept(checkpoint: Checkpoint, arch: Architecture, kept: int, bits: float = OTHER_BITS) -> Checkpoint:
    """The checkpoint once `kept` of the model's layers stay whole in `bits`
    (Meta's FP8 releases keep the first and last in BF16): each layer group's
    bits become the mean over layers, kept / layers of them at `bits`."""
    if not 0 <= kept <= arch.layers:
        raise SizingError(f"{kept} layers kept in higher precision: the model has {arch.layers}")
    share = kept / arch.layers
    mixed = {group: getattr(checkpoint, group) * (1 - share) + bits * share for group in LAYER_GROUPS}
    return Checkpoint(**{**vars(checkpoint), **mixed})


def group_bytes(counts: Parameters, checkpoint: Checkpoint) -> dict[str, float]:
    """Bytes of each tensor group: parameters × effective bits / 8."""
    sizes = {"embedding": counts.embedding, "output_head": counts.output_head, "attention": counts.attention,
             "dense_ffn": counts.dense_ffn, "experts": counts.experts, "other": counts.other}
    return {group: sizes[group] * getattr(checkpoint, group) / 8 for group in TENSOR_GROUPS}


def checkpoint_bytes(counts: Parameters, checkpoint: Checkpoint) -> float:
    return sum(group_bytes(counts, checkpoint).values())


# Tensor parallelism

@dataclass(frozen=True)
class Layout:
    tp: int        # tensor-parallel ranks: split heads, FFN width and experts
    pp: int = 1    # pipeline stages: split the layers

    @property
    def devices(self) -> int:
        return self.tp * self.pp


def divisors(n: int) -> list[int]:
    """The divisors of `n`, in order, from the pairs below its square root."""
    low = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return low + [n // d for d in reversed(low) if d * d != n]


def layout_problem(arch: Architecture, layout: Layout) -> str | None:
    """Why a layout cannot run the model, with the nearest ones that can; None when it can.

    Tensor parallelism gives each rank a whole number of attention heads, so
    TP must divide them; a pipeline stage needs at least one layer.
    """
    if layout.tp < 1 or layout.pp < 1:
        return f"tp and pp must be at least 1, got tp={layout.tp}, pp={layout.pp}"
    if layout.pp > arch.layers:
        return f"pp={layout.pp} exceeds the {arch.layers} layers"
    if arch.attention_heads % layout.tp:
        valid = divisors(arch.attention_heads)
        lower = max(d for d in valid if d < layout.tp)
        higher = [d for d in valid if d > layout.tp]
        options = f"tp={lower}" + (f" or tp={higher[0]}" if higher else "")
        return (f"tp={layout.tp} does not divide the {arch.attention_heads} attention heads; "
                f"the nearest valid layouts are {options}")
    return None


def kv_heads_per_rank(kv_heads: int, tp: int) -> float:
    """KV heads each rank caches: split when there are at least as many as
    ranks, else each rank holds (a replica of) one."""
    return max(kv_heads / tp, 1)


def attention_parameters_per_rank(arch: Architecture, tp: int) -> float:
    """One layer's attention weights on one rank: query and output split by
    heads; MLA's down-projections replicated; KV projections replicated with
    their heads when there are fewer KV heads than ranks."""
    indexer = indexer_parameters(arch)  # its key and weights are small and kept whole on every rank
    if arch.attention == "mla":
        replicated = arch.hidden_size * ((arch.q_lora_rank or 0) + arch.kv_lora_rank + arch.qk_rope_head_dim)
        return replicated + (softmax_attention_parameters(arch) - replicated) / tp + indexer
    return (query_and_output_parameters(arch) / tp + indexer
            + 2 * arch.hidden_size * arch.head_dim * kv_heads_per_rank(arch.kv_heads, tp))


def mixer_parameters_per_rank(arch: Architecture, tp: int) -> float:
    """Attention and linear-attention weights of all layers on one rank; the
    linear layers split by heads."""
    linear = arch.linear_attention_layers * linear_attention_parameters(arch) / tp \
        if arch.linear_attention_layers else 0
    return arch.attention_layers * attention_parameters_per_rank(arch, tp) + linear


# KV cache

def kv_values_per_token(arch: Architecture, tokens: int, tp: int = 1) -> float:
    """Values one rank caches for one sequence of `tokens` tokens, all layers.

    GQA/MHA/MQA: a key and a value vector per KV head held by the rank.
    MLA: the latent and the RoPE key, whole on every rank (it is not split by head).
    Sliding-window layers hold at most `sliding_window` tokens.
    Linear-attention and state-space layers cache nothing per token
    (their fixed state is `state_values_per_sequence`).
    """
    if arch.attention == "mla":
        return arch.attention_layers * (arch.kv_lora_rank + arch.qk_rope_head_dim) * tokens
    per_token_layer = 2 * kv_heads_per_rank(arch.kv_heads, tp) * arch.head_dim
    if not (arch.sliding_window and arch.full_attention_layers is not None):
        return per_token_layer * arch.attention_layers * tokens
    full_per_token_layer = (1 if arch.full_attention_kv_shared else 2) * arch.head_dim_of_full_layers \
        * kv_heads_per_rank(arch.kv_heads_of_full_layers, tp)
    windowed = arch.attention_layers - arch.full_attention_layers
    return (full_per_token_layer * arch.full_attention_layers * tokens
            + per_token_layer * windowed * min(tokens, arch.sliding_window))


def indexer_values_per_token(arch: Architecture, tokens: int) -> float:
    """Keys a sparse-attention indexer caches for one sequence, all layers: one
    key of indexer_head_dim per token and layer, whole on every rank (DeepSeek-V3.2)."""
    return arch.attention_layers * (arch.indexer_head_dim or 0) * tokens if arch.indexer_heads else 0


def state_values_per_sequence(arch: Architecture, tp: int = 1) -> float:
    """Values of the fixed-size state one rank keeps per sequence in its
    linear-attention or Mamba-2 layers, whatever the context: per layer the
    recurrent state (value heads × key dim × value dim) and the last
    kernel − 1 inputs of the causal convolution; heads split over TP."""
    if not arch.linear_attention_layers:
        return 0
    recurrent = kv_heads_per_rank(arch.linear_heads, tp) * arch.linear_key_head_dim * arch.linear_value_head_dim
    convolution = (arch.linear_conv_kernel - 1) * linear_conv_channels(arch, tp)
    return arch.linear_attention_layers * (recurrent + convolution)


def kv_bytes(arch: Architecture, tokens: int, batch: int, kv_bits: float, tp: int = 1) -> float:
    """What `batch` sequences of `tokens` tokens keep on one tensor-parallel
    rank (all layers): the KV cache in `kv_bits`, the indexer's keys in
    INDEXER_KEY_BITS and the linear layers' state in STATE_BITS."""
    per_sequence = (kv_values_per_token(arch, tokens, tp) * kv_bits
                    + indexer_values_per_token(arch, tokens) * INDEXER_KEY_BITS
                    + state_values_per_sequence(arch, tp) * STATE_BITS)
    return per_sequence * batch / 8


# MoE decode

def expected_distinct_experts(experts: int, per_token: int, batch: int) -> float:
    """Experts of one layer that a decode step of `batch` tokens reads, on average,
    when each token picks `per_token` of `experts` uniformly:
    E × (1 − (1 − k/E)^B). Mixtral (8, top-2) at batch 8: 8 × (1 − 0.75^8) = 7.20."""
    if not experts:
        return 0.0
    return experts * (1 - (1 - per_token / experts) ** batch)


# A deployment

@dataclass(frozen=True)
class Device:
    memory_bytes: float      # as the runtime sees it
    bandwidth_gbs: float | None
    dense_tflops: float | None = None   # dense matrix peak in the format the weights compute in
    link_gbs: float | None = None       # accelerator-to-accelerator bandwidth, one direction
    slug: str = ""                      # runtimes choose some defaults by device (vLLM: not on an A100)


@dataclass(frozen=True)
class Workload:
    context: int             # tokens per sequence
    batch: int               # sequences decoded together
    kv_bits: float
    utilization: float | None = None  # the runtime's fraction; None: the runtime's own default
    runtime: str | None = runtimes.DEFAULT_RUNTIME  # None: no runtime, `utilization` of the memory for weights and cache
    max_seqs: int | None = None       # the runtime's sequence limit (vLLM's max_num_seqs); None: its default


@dataclass(frozen=True)
class Sizing:
    """Per-device answer for one model, checkpoint, layout and device."""

    layout: Layout
    weights_bytes: float          # the whole checkpoint
    weights_per_device: float
    kv_per_sequence: float        # on one device
    kv_per_device: float
    reserve: runtimes.Reserve     # what the runtime keeps besides weights and KV cache
    memory_per_device: float
    fits: bool
    step_bytes_per_device: float  # read per decode step, summed over pipeline stages
    speed: "Speed | None"         # None: the device's bandwidth is unknown

    @property
    def reserve_per_device(self) -> float:
        """The runtime's reserve inside its fraction: activation peak and other memory."""
        return self.reserve.activation + self.reserve.overhead

    @property
    def usable_per_device(self) -> float:
        """Memory the runtime fills: the device less the headroom outside its fraction."""
        return self.memory_per_device - self.reserve.headroom

    @property
    def needed_per_device(self) -> float:
        return self.weights_per_device + self.kv_per_device + self.reserve_per_device

    @property
    def kv_pool_per_device(self) -> float:
        """Memory the runtime gives the KV cache: what is left once weights and reserve are placed."""
        return self.usable_per_device - self.weights_per_device - self.reserve_per_device

    @property
    def shortfall_per_device(self) -> float:
        return max(self.needed_per_device - self.usable_per_device, 0.0)

    @property
    def tokens_per_s_per_sequence(self) -> float | None:
        return self.speed.per_sequence if self.speed else None

    @property
    def tokens_per_s(self) -> float | None:
        return self.speed.batch_tokens_per_s if self.speed else None


def stage_share(arch: Architecture, pp: int) -> float:
    """Share of the layers the busiest pipeline stage holds."""
    return math.ceil(arch.layers / pp) / arch.layers


def weights_per_device(arch: Architecture, counts: Parameters, checkpoint: Checkpoint, layout: Layout) -> float:
    """Checkpoint bytes one device holds: layer weights split over TP and
    pipeline stages (replicated attention parts counted whole), embedding and
    head split over TP (vocabulary-parallel), each on its own stage."""
    sizes = group_bytes(counts, checkpoint)
    attention = mixer_parameters_per_rank(arch, layout.tp) * checkpoint.attention / 8
    layered = attention + (sizes["dense_ffn"] + sizes["experts"] + sizes["other"]) / layout.tp
    ends = sizes["embedding"] + sizes["output_head"] if layout.pp == 1 else max(sizes["embedding"], sizes["output_head"])
    return layered * stage_share(arch, layout.pp) + ends / layout.tp


def query_width(arch: Architecture) -> int:
    return arch.attention_heads * (arch.head_dim or (arch.qk_nope_head_dim or 0) + (arch.qk_rope_head_dim or 0))


def runtime_model(arch: Architecture) -> runtimes.Model:
    """The widths a runtime's activation reserve depends on."""
    ffn_width = max(arch.intermediate_size or 0, (arch.moe_intermediate_size or 0) * max(arch.experts_per_token, 1))
    return runtimes.Model(arch.hidden_size, query_width(arch), ffn_width, arch.vocab_size)


def runtime_reserve(arch: Architecture, device: Device, workload: Workload, tp: int, weights: float) -> runtimes.Reserve:
    """What the workload's runtime keeps on one device (docs/LLM_MATH.md, domain/runtimes.py)."""
    if workload.runtime is None:
        return runtimes.Reserve(device.memory_bytes * (1 - (workload.utilization or 1)), 0.0, 0.0)
    large = runtimes.vllm_large_device(device.memory_bytes, device.slug)
    return runtimes.runtime(workload.runtime).plan(runtime_model(arch), device.memory_bytes, tp, large, weights,
                                                   workload.utilization, workload.max_seqs)


def step_bytes(arch: Architecture, counts: Parameters, checkpoint: Checkpoint, layout: Layout,
               batch: int, kv_per_device: float) -> float:
    """Bytes one tensor-parallel rank reads per decode step over all its
    pipeline stages: the weights the batch uses (dense parts once, routed
    experts for the expected number of distinct experts the batch touches)
    plus the whole KV cache of the batch."""
    sizes = group_bytes(counts, checkpoint)
    if arch.experts:
        routed = sizes["experts"] * counts.routed_experts / counts.experts
        touched = expected_distinct_experts(arch.experts, arch.experts_per_token, batch) / arch.experts
        expert_read = routed * touched + (sizes["experts"] - routed)
    else:
        expert_read = 0.0
    attention = mixer_parameters_per_rank(arch, layout.tp) * checkpoint.attention / 8
    layered = attention + (sizes["dense_ffn"] + expert_read) / layout.tp
    router = counts.router * checkpoint.other / 8 / layout.tp
    head = sizes["output_head"] or sizes["embedding"]  # a tied head reads the embedding matrix
    return layered + router + head / layout.tp + kv_per_device * layout.pp


# Speed: the ceiling the device's limits allow

# One all-reduce of a few kB costs about 6 µs on two H100s over NVLink with CUDA
# graphs (NVIDIA nccl issue #1259); the same figure is used for every link.
ALLREDUCE_LATENCY_S = 6e-6
ACTIVATION_BYTES = 2  # the hidden state crosses links in BF16


@dataclass(frozen=True)
class Speed:
    """Seconds of one decode step on one device, by what limits it, and the prefill of one prompt."""

    batch: int
    memory_s: float                # step bytes over the memory bandwidth
    compute_s: float | None        # step FLOPs over the dense peak (None: peak unknown)
    communication_s: float         # tensor-parallel all-reduces and pipeline hand-offs
    prefill_s: float | None        # time to first token for a prompt of `context` tokens (compute-bound)

    @property
    def step_s(self) -> float:
        return max(self.memory_s, self.compute_s or 0.0) + self.communication_s

    @property
    def bound(self) -> str:
        return "compute" if (self.compute_s or 0.0) > self.memory_s else "memory"

    @property
    def per_sequence(self) -> float:
        return 1 / self.step_s

    @property
    def batch_tokens_per_s(self) -> float:
        return self.batch / self.step_s


def weights_used_per_token(arch: Architecture, counts: Parameters, tp: int) -> float:
    """Parameters one rank multiplies per token over all layers: attention (its
    replicated parts whole), dense FFN, shared experts and router split by TP,
    the routed experts the token is sent to, and the output head."""
    routed = counts.routed_experts * arch.experts_per_token / arch.experts if arch.experts else 0
    split = counts.dense_ffn + routed + counts.shared_experts + counts.router + (counts.output_head or counts.embedding)
    return mixer_parameters_per_rank(arch, tp) + split / tp


def attention_flops_per_token(arch: Architecture, tp: int, attended: float) -> float:
    """Scores and weighted values of one query token over `attended` cached tokens, in every softmax-attention
    layer, on one rank (linear-attention and state-space layers update a fixed state instead)."""
    return 4 * arch.attention_layers * query_width(arch) / tp * attended


def collectives(arch: Architecture, layout: Layout) -> int:
    """Exchanges of one forward pass: two all-reduces per layer (after attention and after the FFN) across
    the TP ranks, and one hand-off per pipeline boundary; each costs a latency besides its bytes."""
    return (2 * arch.layers if layout.tp > 1 else 0) + layout.pp - 1


def transfer_s(arch: Architecture, layout: Layout, device: Device, tokens: int) -> float:
    """Seconds the hidden states of `tokens` tokens spend on the links in one forward pass (ring all-reduce:
    2 (tp − 1) / tp of the bytes cross each link; a pipeline hand-off moves them once); 0 without a link figure."""
    if not device.link_gbs:
        return 0.0
    hidden_bytes = tokens * arch.hidden_size * ACTIVATION_BYTES
    moved = 2 * arch.layers * 2 * (layout.tp - 1) / layout.tp * hidden_bytes + (layout.pp - 1) * hidden_bytes
    return moved / (device.link_gbs * GB)


def communication_s(arch: Architecture, layout: Layout, device: Device, tokens: int) -> float:
    """The exchanges of one forward pass of `tokens` tokens: their bytes over the link and a fixed latency each."""
    return transfer_s(arch, layout, device, tokens) + collectives(arch, layout) * ALLREDUCE_LATENCY_S


def prefill_flops(arch: Architecture, counts: Parameters, tp: int, context: int) -> float:
    """FLOPs one rank spends on a prompt of `context` tokens (a causal prompt attends on average to half of itself)."""
    return context * (2 * weights_used_per_token(arch, counts, tp) + attention_flops_per_token(arch, tp, context / 2))


def speed(arch: Architecture, counts: Parameters, layout: Layout, device: Device, workload: Workload,
          read: float) -> Speed | None:
    """The decode step of the batch (each sequence at `context` tokens) and the
    prefill of one prompt of `context` tokens; None when the bandwidth is unknown."""
    if not device.bandwidth_gbs:
        return None
    peak = device.dense_tflops * 1e12 if device.dense_tflops else None
    used = weights_used_per_token(arch, counts, layout.tp)
    step_flops = workload.batch * (2 * used + attention_flops_per_token(arch, layout.tp, workload.context))
    prompt_flops = prefill_flops(arch, counts, layout.tp, workload.context)
    return Speed(
        batch=workload.batch,
        memory_s=read / (device.bandwidth_gbs * GB),
        compute_s=step_flops / peak if peak else None,
        communication_s=communication_s(arch, layout, device, workload.batch),
        prefill_s=prompt_flops / peak + communication_s(arch, layout, device, workload.context) if peak else None,
    )


def size(arch: Architecture, checkpoint: Checkpoint, layout: Layout, device: Device, workload: Workload) -> Sizing:
    """Whether the deployment fits on every device with the workload's runtime, and how fast it can decode."""
    problem = layout_problem(arch, layout)
    if problem:
        raise SizingError(problem)
    counts = parameters(arch)
    weights = weights_per_device(arch, counts, checkpoint, layout)
    kv_sequence = kv_bytes(arch, workload.context, 1, workload.kv_bits, layout.tp) * stage_share(arch, layout.pp)
    kv_device = kv_sequence * workload.batch
    reserve = runtime_reserve(arch, device, workload, layout.tp, weights)
    read = step_bytes(arch, counts, checkpoint, layout, workload.batch, kv_device)
    fits = weights + kv_device + reserve.activation + reserve.overhead <= device.memory_bytes - reserve.headroom
    return Sizing(layout, checkpoint_bytes(counts, checkpoint), weights, kv_sequence, kv_device, reserve,
                  device.memory_bytes, fits, read, speed(arch, counts, layout, device, workload, read))


def smallest_layout(arch: Architecture, checkpoint: Checkpoint, device: Device, workload: Workload,
                    max_tp: int = 8) -> Sizing | None:
    """The first layout that fits, in the order a deployment grows: tensor
    parallelism within one node first (the divisors of the attention heads up
    to `max_tp`), then pipeline stages across nodes, each stage with the
    smallest TP that fits. None when nothing fits.

    More stages never need more memory a device, so the fewest stages that fit
    at the widest TP are found by bisection (a model of 126 layers is sized a
    few times, not 126 × the TPs), then the narrowest TP that fits with them."""
    tps = [d for d in divisors(arch.attention_heads) if d <= max_tp]

    def fits_at(pp):  # the most tensor parallelism needs the least memory per device
        return size(arch, checkpoint, Layout(tps[-1], pp), device, workload).fits

    # Each device needs no more with more stages, nor with more TP: the fewest stages that fit at all
    # are found by bisection (a model that fits nowhere costs one sizing per halving, not one per layout).
    if not fits_at(arch.layers):
        return None
    low, high = 0, arch.layers  # no fit with `low` stages (0: none), a fit with `high`
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits_at(middle) else (middle, high)
    return next(sizing for tp in tps if (sizing := size(arch, checkpoint, Layout(tp, high), device, workload)).fits)


# Backwards

def free_for_kv(arch: Architecture, checkpoint: Checkpoint, layout: Layout, device: Device, workload: Workload) -> float:
    """Bytes left on each device for the KV cache once weights and reserve are placed."""
    return size(arch, checkpoint, layout, device, workload).kv_pool_per_device


def largest_batch(arch: Architecture, checkpoint: Checkpoint, layout: Layout, device: Device, workload: Workload) -> int:
    """The most sequences of `workload.context` tokens that fit (0: not even one)."""
    free = free_for_kv(arch, checkpoint, layout, device, workload)
    per_sequence = size(arch, checkpoint, layout, device, workload).kv_per_sequence
    if free < 0:
        return 0
    most = free / per_sequence if per_sequence else 0
    if not math.isfinite(most):  # memory near the float's limit, or a cache of a vanishing size per value
        raise ValueError(f"no count of sequences: {free:g} bytes free over {per_sequence:g} bytes per sequence "
                         "(check the memory and the KV cache's bits)")
    most = math.floor(most)
    return min(most, workload.max_seqs) if workload.max_seqs else most  # the runtime runs no more than its limit


def longest_context(arch: Architecture, checkpoint: Checkpoint, layout: Layout, device: Device,
                    workload: Workload, max_context: int) -> int:
    """The most tokens per sequence (at `workload.batch` sequences, up to
    `max_context`) whose KV cache fits (0: the weights alone do not fit).
    The cache grows with the tokens, so a bisection finds the boundary."""
    free = free_for_kv(arch, checkpoint, layout, device, workload)
    share = stage_share(arch, layout.pp)

    def cache(tokens):
        return kv_bytes(arch, tokens, workload.batch, workload.kv_bits, layout.tp) * share

    if free < 0:
        return 0
    if cache(max_context) <= free:
        return max_context
    low, high = 0, max_context  # cache(low) fits, cache(high) does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if cache(middle) <= free else (low, middle)
    return low


# Dense models by size: their measured decode reaches different shares of the ceiling (a 405B model's
# benchmark is long-context and prefill-heavy, an 8B one's sampler and scheduling weigh more).
DENSE_CLASS_LIMITS_B = ((20, "dense-small"), (200, "dense-medium"))


def model_class(arch: Architecture, total_params_b: float) -> str:
    """The class decode efficiency is calibrated by: moe, or dense by total parameters (schema MODEL_CLASSES)."""
    if arch.experts:
        return "moe"
    return next((name for limit, name in DENSE_CLASS_LIMITS_B if total_params_b < limit), "dense-large")
