"""The sizing questions, one function each: does a model fit a device (and in
which layout), the largest batch, the longest context. The what-fits page,
the sizing SQL functions and, through them, the canned queries all ask here.

Every argument is checked by its parameter's check (domain/parameters.py);
the answers are named records of decimal GB (formulas in docs/LLM_MATH.md).
"""

from dataclasses import dataclass

from . import parameters, sizing, speed
from .parameters import MAX_TP
from .schema import MAXIMA


@dataclass(frozen=True)
class DeviceFigures:
    """What a sizing question needs of an accelerator; None where unknown."""

    memory_gb: float                  # as the runtime sees it
    bandwidth_gbs: float | None = None
    dense_tflops: float | None = None  # dense matrix peak in the format the weights compute in
    link_gbs: float | None = None      # accelerator-to-accelerator bandwidth, one direction
    slug: str = ""
    bandwidth_share: float | None = None  # the best achieved bandwidth ÷ the datasheet's, where measured


@dataclass(frozen=True)
class Question:
    """One model, its weights, one device and a workload, each checked."""

    architecture: sizing.Architecture
    checkpoint: sizing.Checkpoint
    device: sizing.Device
    workload: sizing.Workload
    bandwidth_share: float | None = None


def device_figure(name, value, maximum, optional=True):
    """A device figure within the knowledge base's own bounds (schema.MAXIMA): a figure past them is no device,
    and would carry the arithmetic past the floats' range (a division by a time that rounds to 0)."""
    if value is None and optional:
        return None
    figure = parameters.number(name, value, positive=not optional)
    if figure > maximum:
        raise parameters.ParameterError(name, f"must be at most {maximum:,.0f}, got {figure:g}")
    return figure


def question(architecture: str, bits: str, device: DeviceFigures, context, batch, kv_bits, utilization=None,
             runtime=None, max_num_seqs=None) -> Question:
    """`architecture` and `bits`: the models and checkpoints tables' JSON columns."""
    return Question(parameters.architecture(architecture), parameters.bits(bits),
                    sizing.Device(device_figure("memory_gb", device.memory_gb, MAXIMA["memory_gb"], optional=False)
                                  * sizing.GB,
                                  device_figure("bandwidth_gbs", device.bandwidth_gbs, MAXIMA["memory_bandwidth_gbs"]),
                                  device_figure("dense_tflops", device.dense_tflops, MAXIMA["tflops"]),
                                  device_figure("link_gbs", device.link_gbs, MAXIMA["interconnect_gbs"]), device.slug or ""),
                    sizing.Workload(parameters.context(context), parameters.batch(batch),
                                    parameters.number("kv_bits", kv_bits, positive=True),
                                    parameters.usable_fraction(utilization), parameters.runtime(runtime),
                                    parameters.max_num_seqs(max_num_seqs)),
                    parameters.bandwidth_share(device.bandwidth_share))


def gb(value):
    return round(value / sizing.GB, 4)


@dataclass(frozen=True)
class Fit:
    """A deployment of one model on one accelerator, per device, in GB (rounded to 0.1 MB).

    `kv_gb_per_sequence` is one sequence's whole cache (as on one device, before any split or
    replication), the figure to compare with other tools. `smallest_*`: for a layout that does
    not fit, the first that does. Without a layout (`tp` None) only the checkpoint and one
    sequence's cache are known, and `problem` says why."""

    fits: int
    runtime: str
    weights_gb: float
    kv_gb_per_sequence: float
    problem: str | None = None
    tp: int | None = None
    pp: int | None = None
    devices: int | None = None
    weights_gb_per_device: float | None = None
    kv_gb_per_sequence_per_device: float | None = None
    kv_gb_per_device: float | None = None
    kv_pool_gb_per_device: float | None = None
    reserve_gb_per_device: float | None = None
    activation_gb_per_device: float | None = None
    overhead_gb_per_device: float | None = None
    headroom_gb_per_device: float | None = None
    memory_gb_per_device: float | None = None
    needed_gb_per_device: float | None = None
    usable_gb_per_device: float | None = None
    shortfall_gb_per_device: float | None = None
    tokens_per_s_per_sequence: float | None = None  # the decode ceiling, per sequence and for the batch
    tokens_per_s: float | None = None
    bound: str | None = None
    memory_ms: float | None = None
    compute_ms: float | None = None
    communication_ms: float | None = None
    first_token_ms: float | None = None
    # what the runtime can be expected to reach (domain/speed.py), per sequence and for the batch, and its basis
    expected_tokens_per_s_per_sequence: float | None = None
    expected_tokens_per_s: float | None = None
    expected_basis: str | None = None
    smallest_tp: int | None = None
    smallest_pp: int | None = None
    smallest_devices: int | None = None


def speed_fields(speed: sizing.Speed | None) -> dict:
    """The decode ceiling (per sequence and for the batch), what bounds it, and the time to first token."""
    if speed is None:
        return {}
    return {"tokens_per_s_per_sequence": speed.per_sequence, "tokens_per_s": speed.batch_tokens_per_s,
            "bound": speed.bound, "memory_ms": speed.memory_s * 1e3,
            "compute_ms": None if speed.compute_s is None else speed.compute_s * 1e3,
            "communication_ms": speed.communication_s * 1e3,
            "first_token_ms": None if speed.prefill_s is None else speed.prefill_s * 1e3}


def expected_fields(q: Question, s: sizing.Sizing) -> dict:
    """The expected speed of the deployment beside its ceiling (none where the bandwidth is unknown)."""
    step = speed.step(q.architecture, q.checkpoint, s.layout, q.device, q.workload.batch, q.workload.context,
                      q.workload.kv_bits, q.workload.runtime, q.bandwidth_share)
    if step is None:
        return {}
    e = speed.expected(step)
    return {"expected_tokens_per_s_per_sequence": e.tokens_per_s_per_sequence,
            "expected_tokens_per_s": e.batch_tokens_per_s, "expected_basis": e.basis}


def answer(q: Question, s: sizing.Sizing | None, problem: str | None = None,
           smallest: sizing.Sizing | None = None) -> Fit:
    whole_cache = sizing.kv_bytes(q.architecture, q.workload.context, 1, q.workload.kv_bits)
    fits_instead = {"smallest_tp": smallest.layout.tp, "smallest_pp": smallest.layout.pp,
                    "smallest_devices": smallest.layout.devices} if smallest else {}
    if s is None:  # no layout: the checkpoint and one sequence's cache are still known
        weights = sizing.checkpoint_bytes(sizing.parameters(q.architecture), q.checkpoint)
        return Fit(fits=0, runtime=q.workload.runtime, weights_gb=gb(weights), kv_gb_per_sequence=gb(whole_cache),
                   problem=problem, **fits_instead)
    return Fit(
        fits=int(s.fits), runtime=q.workload.runtime, weights_gb=gb(s.weights_bytes),
        kv_gb_per_sequence=gb(whole_cache), problem=problem,
        tp=s.layout.tp, pp=s.layout.pp, devices=s.layout.devices,
        weights_gb_per_device=gb(s.weights_per_device),
        kv_gb_per_sequence_per_device=gb(s.kv_per_sequence),
        kv_gb_per_device=gb(s.kv_per_device),
        kv_pool_gb_per_device=gb(s.kv_pool_per_device),
        reserve_gb_per_device=gb(s.reserve_per_device),
        activation_gb_per_device=gb(s.reserve.activation),
        overhead_gb_per_device=gb(s.reserve.overhead),
        headroom_gb_per_device=gb(s.reserve.headroom),
        memory_gb_per_device=gb(s.memory_per_device),
        needed_gb_per_device=gb(s.needed_per_device),
        usable_gb_per_device=gb(s.usable_per_device),
        shortfall_gb_per_device=gb(s.shortfall_per_device),
        **speed_fields(s.speed), **expected_fields(q, s), **fits_instead)


def smallest_or_problem(q: Question):
    found = sizing.smallest_layout(q.architecture, q.checkpoint, q.device, q.workload, MAX_TP)
    return found, None if found else (f"does not fit with tensor parallelism up to {MAX_TP} "
                                      "and any number of pipeline stages")


def layout_of(tp, pp) -> sizing.Layout:
    """A layout as the SQL functions take it: any tensor parallelism (a rental offer's
    GPU count), where the `devices` parameter asks for one within a node."""
    return sizing.Layout(parameters.whole("tp", tp), parameters.pipeline_stages(pp))


def fit(q: Question, tp=None, pp=None) -> Fit:
    """The deployment on `tp` × `pp` devices, or (tp None) the fitting layout with the fewest devices."""
    if tp is None:
        found, problem = smallest_or_problem(q)
        return answer(q, found, problem)
    layout = layout_of(tp, pp)
    problem = sizing.layout_problem(q.architecture, layout)
    if problem:
        return answer(q, None, problem)
    sized = sizing.size(q.architecture, q.checkpoint, layout, q.device, q.workload)
    return answer(q, sized, smallest=None if sized.fits else smallest_or_problem(q)[0])


def largest_batch(q: Question, tp, pp) -> int | None:
    """The most sequences of the question's context that fit on `tp` × `pp` devices (None: not a valid layout)."""
    layout = layout_of(tp, pp)
    if sizing.layout_problem(q.architecture, layout):
        return None
    return sizing.largest_batch(q.architecture, q.checkpoint, layout, q.device, q.workload)


def longest_context(q: Question, tp, pp, max_context) -> int | None:
    """The most tokens per sequence, up to `max_context`, that fit with the question's batch
    on `tp` × `pp` devices (None: not a valid layout)."""
    layout = layout_of(tp, pp)
    if sizing.layout_problem(q.architecture, layout):
        return None
    return sizing.longest_context(q.architecture, q.checkpoint, layout, q.device, q.workload,
                                  parameters.context(max_context))
