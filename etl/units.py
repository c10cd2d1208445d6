"""Quantities as people write them ("3.35 TB/s"), converted with pint.

pint knows bytes, watts and SI prefixes; the definitions below add what it lacks
for accelerators (FLOPS, OPS) and money. Each currency is its own dimension, so
"1999 EUR" can never be converted into a USD column.
"""

import re
from functools import lru_cache

import pint

DEFINITIONS = (
    "FLOP = [operation] = flop",
    "OP = FLOP = op",
    "FLOPS = FLOP / second",
    "OPS = OP / second",
    "USD = [currency_usd]",
    "EUR = [currency_eur]",
    "GBP = [currency_gbp]",
)

# A number then a unit. Parsing the two apart keeps pint's expression evaluator
# (which accepts "9**9**9") away from data files.
QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z][A-Za-z/ ]{0,30})\s*$")
NUMBER = re.compile(r"^\s*[-+]?[\d.]+\s*$")

REGISTRY = pint.UnitRegistry()
for _definition in DEFINITIONS:
    REGISTRY.define(_definition)


# A GB column holds decimal GB (10^9 bytes), rounded to this many decimals: a file
# size written in GiB is converted (1 GiB = 1.073741824 GB). A DRAM capacity is
# not: it is the number the vendor prints, GB or GiB alike (`to_unit(..., capacity=True)`).
DECIMALS = {"GB": 2}
# A binary prefix written in a unit ("GiB", "TiB/s").
BINARY_PREFIX = re.compile(r"[KMGTPE]i")


class UnitError(ValueError):
    """A value that is not a quantity in the expected unit."""


@lru_cache(maxsize=256)
def conversion_factor(unit_text, unit):
    """How many `unit` one `unit_text` is ("TB/s" in "GB/s": 1000).

    pint's own conversion is this factor times the number; computing it once
    per spelling of a unit keeps pint's parser out of the per-value path.
    """
    return float(REGISTRY.Quantity(1.0, REGISTRY.parse_units(unit_text)).to(unit).magnitude)


def binary_twin(unit):
    """The binary unit of the same prefix as `unit`: "GiB" for "GB"."""
    return f"{unit[0]}i{unit[1:]}"


@lru_cache(maxsize=4096)
def to_unit(text, unit, capacity=False):
    """Return the magnitude of `text` ("4.8 TB/s") in `unit` ("GB/s").

    A `capacity` (DRAM) is the number the vendor prints, whatever its label:
    "24 GiB" in GB is 24, as DRAM capacities are binary; a prefix converts within
    its label's base ("1 TiB" is 1024, "1 TB" 1000).

    Cached: data files repeat the same few strings, and pint parsing is the
    slowest step of validating a quantity.
    """
    if not isinstance(text, str):
        raise UnitError(f"write the value with its unit, e.g. '{text} {unit}'")
    match = QUANTITY.match(text)
    if match is None:
        if "," in text:
            raise UnitError(f"{text!r}: write numbers without thousands separators, e.g. '1979 TFLOPS'")
        if NUMBER.match(text):
            raise UnitError(f"{text!r} has no unit: write it with its unit, e.g. '{text.strip()} {unit}'")
        raise UnitError(f"cannot read {text!r} as a quantity: write a number and a unit, e.g. '80 {unit}'")
    number, unit_text = match.groups()
    target = binary_twin(unit) if capacity and BINARY_PREFIX.search(unit_text) else unit
    try:
        magnitude = float(number) * conversion_factor(unit_text, target)
    except pint.errors.DimensionalityError:
        raise UnitError(
            f"{text!r} is in {REGISTRY.parse_units(unit_text):~}, which cannot be converted to {unit}"
        ) from None
    except (pint.errors.PintError, ValueError, AttributeError, TypeError, SyntaxError,
            KeyError, IndexError, AssertionError) as error:
        raise UnitError(f"unknown unit {unit_text!r} in {text!r} ({error})") from None
    # 12 significant digits drop the binary noise of unit conversion (3.35 TB/s
    # is 3350 GB/s, not 3350.0000000000005).
    if unit in DECIMALS:
        return round(magnitude, DECIMALS[unit])
    return float(f"{magnitude:.12g}")


# Prefixes a reader may type before a column's base unit ("tb/s" on a GB/s column).
PREFIXES = ("", "k", "M", "G", "T", "P", "Ki", "Mi", "Gi", "Ti", "Pi")


def typed_spelling(text, unit):
    """`text` ("3 tb/s") with its unit spelled as pint knows it ("3 TB/s"), for queries typed by
    readers, who do not mind case; None when no spelling of `unit` with a prefix matches.

    Data files keep the exact spelling the vendor prints: this is for filters only. Milli is not
    offered, so "mw" on a W column can only be MW.
    """
    match = QUANTITY.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    base = next(unit[len(p):] for p in sorted(PREFIXES, key=len, reverse=True) if unit.startswith(p) and unit[len(p):])
    spellings = {f"{prefix}{base}".lower(): f"{prefix}{base}" for prefix in PREFIXES}
    found = spellings.get(match.group(2).strip().lower())
    return f"{match.group(1)} {found}" if found else None
