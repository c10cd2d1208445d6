"""Expected decode speed: the ceiling of domain/sizing.py turned into what runtimes reach, by a small model
fitted on published measurements (the speed_measurements table; docs/LLM_MATH.md, "Expected speed").

The ceiling counts what the device's limits allow. A runtime adds what they leave out:

- the **bandwidth** its kernels reach: the best achieved memory bandwidth measured on the accelerator
  (achieved_rates) where one is measured, else a fitted share of the datasheet figure;
- **compute** at a fitted share of the dense peak, for compute-bound steps and for the prefill;
- a **fixed cost per layer and step** per runtime (kernel launches, scheduling, sampling), and a cost per
  layer, step and sequence of the batch;
- a **latency per exchange** between tensor-parallel ranks (two all-reduces a layer) and pipeline stages;
- a **cost per expert a step runs** in each MoE layer (routing, the grouped products of each expert);
- llama.cpp runs several GPUs as a **layer split**: its stages run one after the other.

One decode step of a batch:

    step = max(weight bytes ÷ (bandwidth × share), weight FLOPs ÷ (peak × compute share))
           + max(cache bytes ÷ (bandwidth × share), attention FLOPs ÷ (peak × compute share)) + link bytes
           + exchanges × latency + layers × (fixed cost + batch × sequence cost) + experts run × expert cost

and a measured run of `batch` sequences of `input` prompt tokens and `output` generated tokens:

    tokens/s = batch × output ÷ (batch × prefill FLOPs ÷ (peak × compute share) + output × step)

The parameters are fitted by least squares on the logarithm of expected ÷ measured, one parameter at a time
(`fit`); `PARAMETERS` holds the fitted values, written down from `fit` over the measurements it names, and
`tests/test_speed.py` recomputes them and the leave-one-out error.
"""

import json
import math
from dataclasses import dataclass, replace

from . import sizing


@dataclass(frozen=True)
class Parameters:
    """The fitted parameters, in seconds or as shares."""

    llama_cpp_layer_s: float      # fixed cost per layer and step, llama.cpp
    tensorrt_llm_layer_s: float   # the same, TensorRT-LLM
    vllm_layer_s: float           # the same, vLLM
    sglang_layer_s: float         # the same, SGLang
    exchange_s: float             # latency of one all-reduce or pipeline hand-off (NVLink)
    moe_expert_s: float           # per distinct expert a step runs, per MoE layer (routing, grouped GEMM tiles)
    sequence_layer_s: float       # per sequence, layer and step (the batch's share of each layer's kernels)
    compute_share: float          # of the dense peak, prefill and compute-bound steps
    bandwidth_share: float        # of the datasheet bandwidth, where no achieved bandwidth is measured

    def layer_s(self, runtime: str) -> float:
        return getattr(self, f"{runtime.replace('-', '_')}_layer_s")


# Fitted by `fit` on the 46 rows of data/measured/speed-measurements.yml (FITTED_ON), three significant
# digits; the measurements each parameter rests on:
# - llama_cpp_layer_s: the 19 llama.cpp rows (batch 1: Llama 2 7B in F16, Q8_0 and Q4_0, Llama 3 8B and 70B in
#   F16 and Q4_K_M, on one GPU, two RTX 4090 and Apple M2 Ultra: the part of a step that does not scale with
#   the bytes);
# - tensorrt_llm_layer_s: the 15 TensorRT-LLM rows; sglang_layer_s: the 3 SGLang rows (DeepSeek-V3);
# - vllm_layer_s: the 9 vLLM rows (its continuous benchmark: batch 8, 32 + 128 tokens, Llama 3.1 8B, Llama 3
#   70B at TP 4 and Mixtral 8x7B at TP 2 on A100, H100 and H200);
# - exchange_s: the TensorRT-LLM and vLLM rows with tensor parallelism, DeepSeek-V3 at TP 8 and the two-GPU
#   llama.cpp layer splits. It ends at the top of its range (30 µs; NVIDIA nccl issue #1259 measures 6 µs): the
#   rows cannot tell it from the runtimes' fixed costs;
# - moe_expert_s: the DeepSeek-V3 rows at batch 1, 8 and 32 (8, 57 and 160 experts a layer) and the Mixtral
#   8x7B rows. It ends at the bottom of its range: the runtimes' fixed costs per layer explain those rows alone;
# - sequence_layer_s: the TensorRT-LLM rows at batch 16 to 1,024 (the batch's share of each layer's kernels);
# - compute_share: the large batches and 2,048-token prompts of the TensorRT-LLM rows;
# - bandwidth_share: the rows on accelerators without an achieved bandwidth (RTX 3090, 3090 Ti, 4090, L40S,
#   A100 PCIe, H100 PCIe, M2 Ultra); H100 SXM, H200 and A100 SXM use their best measured kernel bandwidth
#   (achieved_rates).
PARAMETERS = Parameters(
    llama_cpp_layer_s=131e-6,
    tensorrt_llm_layer_s=171e-6,
    vllm_layer_s=74.1e-6,
    sglang_layer_s=456e-6,
    exchange_s=30.0e-6,
    moe_expert_s=0.0100e-6,
    sequence_layer_s=0.580e-6,
    compute_share=0.661,
    bandwidth_share=0.896,
)
FITTED_ON = 46         # measurements
TYPICAL_ERROR = 0.140  # median of |expected ÷ measured − 1| in leave-one-out


def basis() -> str:
    """The text shown with every expected figure."""
    return f"fitted on {FITTED_ON} measurements, typical error ±{TYPICAL_ERROR:.0%}"


@dataclass(frozen=True)
class Step:
    """The parts of one decode step (and of one prompt) that the parameters scale, at peak figures."""

    weights_s: float              # weight bytes read ÷ datasheet bandwidth
    cache_s: float                # KV cache bytes read ÷ datasheet bandwidth
    matmul_s: float               # FLOPs of the weights ÷ dense peak (0: peak unknown)
    attention_s: float            # FLOPs of attention over the cache ÷ dense peak (0: peak unknown)
    transfer_s: float             # hidden states over the links
    exchanges: int                # all-reduces and hand-offs
    layers: int
    moe_experts: float            # MoE layers × distinct experts the batch runs in each
    prefill_s: float              # one prompt's FLOPs ÷ dense peak (0: no prompt or peak unknown)
    achieved_share: float | None  # the accelerator's best achieved bandwidth ÷ datasheet, where measured
    runtime: str
    batch: int

    def seconds(self, p: Parameters) -> float:
        share = self.achieved_share or p.bandwidth_share
        # the weights' matrix products and attention over the cache are separate kernels: each is bound by
        # its own bytes or FLOPs, and they run one after the other
        return (max(self.weights_s / share, self.matmul_s / p.compute_share)
                + max(self.cache_s / share, self.attention_s / p.compute_share) + self.transfer_s
                + self.exchanges * p.exchange_s + self.layers * p.layer_s(self.runtime)
                + self.moe_experts * p.moe_expert_s + self.batch * self.layers * p.sequence_layer_s)


def execution_layout(layout: sizing.Layout, runtime: str) -> sizing.Layout:
    """llama.cpp splits layers over its GPUs (its default split mode), whatever TP is asked: one stage each."""
    return sizing.Layout(1, layout.devices) if runtime == "llama-cpp" and layout.tp > 1 else layout


def step(arch: sizing.Architecture, checkpoint: sizing.Checkpoint, layout: sizing.Layout, device: sizing.Device,
         batch: int, context: int, kv_bits: float, runtime: str, achieved_share: float | None = None,
         prompt: int = 0) -> Step | None:
    """The step of `batch` sequences at `context` tokens (None when the bandwidth is unknown), with the prefill
    of one prompt of `prompt` tokens."""
    if not device.bandwidth_gbs:
        return None
    layout = execution_layout(layout, runtime)
    counts = sizing.parameters(arch)
    workload = sizing.Workload(context, batch, kv_bits, runtime=None)
    sized = sizing.size(arch, checkpoint, layout, device, workload)
    bandwidth = device.bandwidth_gbs * sizing.GB
    cache = sized.kv_per_device * layout.pp  # the stages run one after the other
    peak = device.dense_tflops * 1e12 if device.dense_tflops else math.inf
    matmul = batch * 2 * sizing.weights_used_per_token(arch, counts, layout.tp)
    attention = batch * sizing.attention_flops_per_token(arch, layout.tp, context)
    prefill = sizing.prefill_flops(arch, counts, layout.tp, prompt) / peak if prompt else 0.0
    experts = arch.moe_layers * sizing.expected_distinct_experts(arch.experts, arch.experts_per_token, batch)
    return Step((sized.step_bytes_per_device - cache) / bandwidth, cache / bandwidth, matmul / peak,
                attention / peak, sizing.transfer_s(arch, layout, device, batch),
                sizing.collectives(arch, layout), arch.layers, experts, prefill, achieved_share, runtime, batch)


@dataclass(frozen=True)
class Expected:
    tokens_per_s_per_sequence: float
    batch_tokens_per_s: float
    basis: str


def expected(s: Step, p: Parameters = PARAMETERS) -> Expected:
    """The decode speed a runtime can be expected to reach in steady decoding."""
    seconds = s.seconds(p)
    return Expected(1 / seconds, s.batch / seconds, basis())


# Measurements

@dataclass(frozen=True)
class Case:
    """One published measurement and the step the model computes for it."""

    slug: str
    measured: float        # tokens/s of the run
    ceiling: float         # the calculator's decode ceiling for the batch (tokens/s), no prompt counted
    step: Step
    output_tokens: int

    def run_tokens_per_s(self, p: Parameters) -> float:
        """Expected tokens/s of the run: its prompts' prefill and its decode steps."""
        s = self.step
        seconds = s.batch * s.prefill_s / p.compute_share + self.output_tokens * s.seconds(p)
        return s.batch * self.output_tokens / seconds


# The columns a case is built from: the measurement, its model's architecture, its weights' bits, and the
# device as the what-fits query reads it (dense peak of the weights' floating-point width, else BF16/FP16;
# half the interconnect per direction; the best achieved bandwidth share).
CASES_SQL = """
select s.slug, s.runtime, s.batch, s.input_tokens, s.output_tokens, s.tp, s.pp, s.tokens_per_s,
  m.architecture, coalesce(c.bits, (select json_object('embedding', b, 'output_head', b, 'attention', b,
    'dense_ffn', b, 'experts', b) from (select coalesce(f.effective_bits, f.bits) as b from number_formats f
    where f.slug = s.weight_format))) as bits,
  coalesce(k.effective_bits, k.bits) as kv_bits, a.slug as accelerator, a.memory_bandwidth_gbs as bandwidth_gbs,
  a.interconnect_gbs / 2 as link_gbs,
  coalesce(
    (select max(t.tflops) from throughput t join number_formats n on n.slug = t.precision
     where t.accelerator = a.slug and t.sparsity = 'dense' and t.engine = 'matrix' and n.kind in ('float', 'family')
       and n.bits = (select min(n2.bits) from throughput t2 join number_formats n2 on n2.slug = t2.precision
                     where t2.accelerator = a.slug and t2.sparsity = 'dense' and t2.engine = 'matrix'
                       and n2.kind in ('float', 'family')
                       and n2.bits >= coalesce((select min(w.bits) from number_formats w
                                                where w.slug = s.weight_format and w.kind in ('float', 'family')), 16))),
    (select max(t.tflops) from throughput t where t.accelerator = a.slug and t.sparsity = 'dense'
       and t.engine = 'matrix' and t.precision in ('bf16', 'fp16'))) as dense_tflops,
  (select max(r.bandwidth_gbs) / a.memory_bandwidth_gbs from achieved_rates r
   where r.accelerator = a.slug and r.measure = 'memory-bandwidth') as achieved_share
from speed_measurements s join models m on m.slug = s.model
  left join checkpoints c on c.slug = s.checkpoint
  join number_formats k on k.slug = s.kv_format join accelerators a on a.slug = s.accelerator
order by s.slug
"""


def case(row) -> Case:
    """A measurement row of CASES_SQL as a Case: its step at the mean context of its decoding."""
    arch = sizing.Architecture.from_row(json.loads(row["architecture"]))
    checkpoint = sizing.Checkpoint(**json.loads(row["bits"]))
    device = sizing.Device(1e15, row["bandwidth_gbs"], row["dense_tflops"], row["link_gbs"], row["accelerator"])
    layout = sizing.Layout(row["tp"], row["pp"])
    context = row["input_tokens"] + row["output_tokens"] // 2
    s = step(arch, checkpoint, layout, device, row["batch"], context, row["kv_bits"], row["runtime"],
             row["achieved_share"], row["input_tokens"])
    ceiling = sizing.size(arch, checkpoint, layout, device,
                          sizing.Workload(context, row["batch"], row["kv_bits"], runtime=None)).tokens_per_s
    return Case(row["slug"], row["tokens_per_s"], ceiling, s, row["output_tokens"])


def cases(conn) -> list[Case]:
    """Every measurement of the database whose accelerator has a bandwidth figure, as a Case (`conn` with
    sqlite3.Row rows). The others cannot be modelled and are left out of the fit."""
    return [case(row) for row in conn.execute(CASES_SQL) if row["bandwidth_gbs"]]


# The fit

BOUNDS = {  # the range each parameter is searched in (log scale)
    "llama_cpp_layer_s": (1e-7, 1e-3), "tensorrt_llm_layer_s": (1e-7, 1e-3), "vllm_layer_s": (1e-7, 1e-3),
    "sglang_layer_s": (1e-7, 1e-3),
    "exchange_s": (2e-6, 3e-5), "moe_expert_s": (1e-8, 1e-4), "sequence_layer_s": (1e-10, 1e-5), "compute_share": (0.05, 1.0),
    "bandwidth_share": (0.2, 1.0),
}
START = Parameters(5e-6, 5e-6, 5e-6, 5e-6, 6e-6, 1e-6, 1e-8, 0.5, 0.7)


def error(cases_: list[Case], p: Parameters) -> float:
    """Sum of squared log(expected ÷ measured)."""
    return sum(math.log(c.run_tokens_per_s(p) / c.measured) ** 2 for c in cases_)


def golden(f, low: float, high: float, steps: int = 40) -> float:
    """The minimum of a unimodal `f` on [low, high] by golden-section search."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(steps):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit(cases_: list[Case], sweeps: int = 12) -> Parameters:
    """Least squares on log ratios, one parameter at a time on a log scale (coordinate descent)."""
    p = START
    for _ in range(sweeps):
        for name, (low, high) in BOUNDS.items():
            def f(x, name=name, p=p):
                return error(cases_, replace(p, **{name: math.exp(x)}))
            p = replace(p, **{name: math.exp(golden(f, math.log(low), math.log(high)))})
    return p


@dataclass(frozen=True)
class Check:
    """One measurement against the model fitted without it."""

    slug: str
    measured: float
    ceiling: float
    expected: float

    @property
    def ratio(self) -> float:
        return self.expected / self.measured


def leave_one_out(cases_: list[Case]) -> list[Check]:
    """Each measurement against the model fitted on all the others."""
    return [Check(c.slug, c.measured, c.ceiling, c.run_tokens_per_s(fit([o for o in cases_ if o is not c])))
            for c in cases_]


def typical_error(checks: list[Check]) -> float:
    """The median of |expected ÷ measured − 1|, the figure shown as ± with every expected speed."""
    errors = sorted(abs(c.ratio - 1) for c in checks)
    middle = len(errors) // 2
    return errors[middle] if len(errors) % 2 else (errors[middle - 1] + errors[middle]) / 2
