"""One check per parameter of the sizing questions, shared by the what-fits page,
the canned queries' parameter checks and the SQL functions.

Each check takes the value as it comes (a query parameter's text, a number from
SQL) and returns it typed, or raises ParameterError naming the parameter and
saying in words what it must be. `problems` runs every check of a question and
collects all the problems at once, so a reader sees them together.
"""

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from . import runtimes, sizing
from .matching import closest
from .schema import MAXIMA, NUMERIC_KINDS, TABLES_BY_NAME

MAX_CONTEXT = 16 * 1024 * 1024  # 16M tokens: beyond every model's window
MAX_BATCH = 999_999_999  # nine digits: what the queries cast to an integer without overflow
MAX_TP = 8  # tensor parallelism stays within one 8-device node
# 32k = 32 x 1024 tokens: context lengths are counted in binary thousands (Llama's 128K is 131072).
CONTEXT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")
MULTIPLIERS = {"": 1, "k": 1024, "m": 1024 * 1024}


class ParameterError(ValueError):
    """A parameter the question cannot use: `name` is the parameter, `problem` what is wrong, in words."""

    def __init__(self, name: str, problem: str, near: tuple[tuple[str, str], ...] = ()):
        """`near`: the closest known (slug, name) pairs to a value that is not known, best first."""
        offer = f"; did you mean {', '.join(f'{label} ({slug})' for slug, label in near)}?" if near else ""
        super().__init__(f"{name} {problem}{offer}")
        self.name, self.problem, self.near = name, problem, near


def number(name, value, positive=False):
    """`value` as a finite float. Numeric text is accepted: Datasette passes
    every query parameter as a string."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ParameterError(name, f"must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(name, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ParameterError(name, f"must be finite, got {value}")
    if positive and value <= 0:
        raise ParameterError(name, f"must be positive, got {value:g}")
    if value < 0:
        raise ParameterError(name, f"must not be negative, got {value:g}")
    return value


def whole(name, value, minimum=1, maximum=None):
    """A whole number from `minimum` (to `maximum` when given)."""
    try:
        typed = number(name, value)
    except ParameterError:
        typed = math.nan
    if not typed == int(typed if math.isfinite(typed) else 0) or typed < minimum or (maximum and typed > maximum):
        upper = f" to {maximum:,}" if maximum else ""
        low = f"from {minimum:,}{upper}" if maximum else f"of at least {minimum:,}"
        raise ParameterError(name, f"must be a whole number {low}, got {value!r}")
    return int(typed)


def context(value) -> int:
    """Tokens per sequence, as a reader writes them: 32768, 32k, 128K, 1M (k = 1,024)."""
    match = CONTEXT.match(str(value)) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    tokens = float(match.group(1)) * MULTIPLIERS[match.group(2).lower()] if match else math.nan
    if not (1 <= tokens <= MAX_CONTEXT and tokens.is_integer()):
        raise ParameterError("context", f"must be a whole number of tokens from 1 to {MAX_CONTEXT:,} (16M), "
                                        f"such as 32768, 32k or 128K; got {value!r}")
    return int(tokens)


def batch(value) -> int:
    """Sequences decoded together."""
    return whole("batch", value, maximum=MAX_BATCH)


def devices(value) -> int | None:
    """Devices of tensor parallelism asked for, within one node; empty: the fewest that fit."""
    return None if value in (None, "") else whole("tp", value, maximum=MAX_TP)


def pipeline_stages(value) -> int:
    """Pipeline stages; empty: one."""
    return 1 if value in (None, "") else whole("pp", value, maximum=int(MAXIMA["layers"]))


def usable_fraction(value) -> float | None:
    """A runtime's memory fraction, in (0, 1]; empty: the runtime's own default."""
    if value in (None, ""):
        return None
    try:
        fraction = number("usable_fraction", value, positive=True)
    except ParameterError:
        fraction = math.nan
    if not 0 < fraction <= 1:
        raise ParameterError("usable_fraction", f"must be a number above 0 and at most 1, got {value!r}")
    return float(fraction)


def max_num_seqs(value) -> int | None:
    """The runtime's limit of sequences run together (vLLM's max_num_seqs); empty: the runtime's own."""
    return None if value in (None, "") else whole("max_num_seqs", value, maximum=MAX_BATCH)


def bandwidth_share(value) -> float | None:
    """The best achieved bandwidth ÷ the datasheet's, in (0, 1.5]; empty: none measured."""
    if value in (None, ""):
        return None
    share = number("bandwidth_share", value, positive=True)
    if share > 1.5:
        raise ParameterError("bandwidth_share", f"must be a number above 0 and at most 1.5, got {value!r}")
    return float(share)


def usd_per_kwh(value) -> float | None:
    """A price of electricity in USD per kWh, above 0 and at most 10; empty: the default price."""
    if value in (None, ""):
        return None
    price = number("kwh_usd", value, positive=True)
    if price > 10:
        raise ParameterError("kwh_usd", f"must be a price in USD per kWh above 0 and at most 10, got {value!r}")
    return float(price)


def runtime(value) -> str:
    """A runtime's slug; empty: the default runtime."""
    slug = runtimes.DEFAULT_RUNTIME if value in (None, "") else str(value).strip().lower()
    if slug not in runtimes.RUNTIMES:
        raise ParameterError("runtime", f"must be one of {', '.join(runtimes.RUNTIMES)}, got {value!r}")
    return slug


def choice(name: str, value: str, known: dict[str, str], plural: str) -> str:
    """One of `known` ({slug: name as a reader reads it}, `plural` naming them); else the problem,
    with the closest names offered (the 404 page's matcher)."""
    if value in known:
        return value
    if value == "":
        raise ParameterError(name, f"is required: choose one of the {plural}")
    near = tuple((slug, known[slug]) for slug in closest(value, list(known)))
    raise ParameterError(name, f"{value!r} is not one of the {plural} here", near)


def in_range(name, value, minimum, maximum):
    """`value` if it is a number from `minimum` (exclusive when None: above 0) to `maximum`, else ParameterError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not (value >= minimum if minimum is not None else value > 0) or value > maximum:
        low = f"from {minimum:g}" if minimum is not None else "above 0"
        raise ParameterError(name, f"must be a number {low} to {maximum:,.0f}, got {value!r}")
    return value


# The models table's numeric fields: an architecture given in SQL is held to their ranges (domain/schema.py)
# before any loop runs over one of them (the divisors of the attention heads, the pipeline stages).
MODEL_NUMBERS = {f.name: f for f in TABLES_BY_NAME["models"].fields if f.kind in NUMERIC_KINDS}


def architecture(text) -> sizing.Architecture:
    """The Architecture of a JSON object of the models table's fields, each within its range."""
    row = json.loads(text)
    if not isinstance(row, dict):
        raise ParameterError("architecture", "must be a JSON object of the models table's fields")
    for name, value in row.items():
        if name in MODEL_NUMBERS and value is not None:
            field = MODEL_NUMBERS[name]
            in_range(name, value, field.minimum if field.kind == "int" else None, field.maximum)
            if field.kind == "int" and value != int(value):
                raise ParameterError(name, f"must be a whole number, got {value!r}")
    return sizing.Architecture.from_row(row)


def bits(text) -> sizing.Checkpoint:
    """The Checkpoint of a JSON object of bits per tensor group, each above 0 and at most MAXIMA["bits"]."""
    groups = json.loads(text)
    if not isinstance(groups, dict) or set(groups) - set(sizing.TENSOR_GROUPS):
        raise ParameterError("bits", f"must be a JSON object of bits per tensor group ({', '.join(sizing.TENSOR_GROUPS)})")
    return sizing.Checkpoint(**{group: in_range(f"{group} bits", value, None, MAXIMA["bits"])
                                for group, value in groups.items()})


@dataclass(frozen=True)
class Check:
    """One parameter of a question: its name, its check, and its value when the parameter is empty."""

    name: str
    check: Callable
    default: str = ""


def problems(args: dict[str, str], checks: Iterable[Check]) -> tuple[dict, list[ParameterError]]:
    """Every parameter of `args` through its check: the typed values, and every problem at once."""
    values, found = {}, []
    for c in checks:
        try:
            values[c.name] = c.check(args.get(c.name, "").strip() or c.default)
        except ParameterError as error:
            found.append(error)
    return values, found
