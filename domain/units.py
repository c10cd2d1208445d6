"""Quantities as people write them ("3.35 TB/s"), converted with pint.

pint knows bytes, watts and SI prefixes; the definitions below add what it lacks
for accelerators (FLOPS, OPS) and money. Each currency is its own dimension, so
"1999 EUR" can never be converted into a USD column.
"""

import math
import re
import sys
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

# The grammar of a quantity: a number (ASCII digits; Python's float() would also read Arabic-Indic or
# full-width digits) then one unit from the column's list, and nothing else. Parsing the two apart keeps
# pint's expression evaluator (which accepts "9**9**9") away from data files, and the list keeps pint from
# reading a second unit as a factor: it reads "80 GB GB" as 80 GB squared, "3.35 THz" as 3.35e12 / s and
# "8e13 percent" as 8e11, each convertible to some column by a dimensionless factor.
QUANTITY = re.compile(r"^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(.*?)\s*$")
NUMBER = re.compile(r"^\s*[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*$")
NON_ASCII_DIGIT = re.compile(r"(?![0-9])\d")  # a digit of another script

BYTES = ("B", "kB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "PiB")
FLOPS = ("GFLOPS", "TFLOPS", "PFLOPS", "EFLOPS")
OPS = ("GOPS", "TOPS", "POPS", "EOPS")  # integer throughput: never on a floating-point row
# Every precision of a throughput figure, in the order pages list them.
DENSE_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "int4")
INTEGER_PRECISIONS = ("int8", "int4")   # the precisions whose throughput is in OPS, all others in FLOPS
# {column unit: the units a value of that column may be written in}: capacities in bytes, bandwidths in
# bytes or bits per second, power in watts (not volt-amperes, which pint takes for watts).
UNIT_CHOICES = {
    "GB": BYTES,
    "GB/s": tuple(f"{unit}/s" for unit in BYTES) + ("kbit/s", "Mbit/s", "Gbit/s", "Tbit/s", "Pbit/s"),
    "W": ("W", "kW", "MW"),
    "TFLOPS": FLOPS + OPS,
    "USD": ("USD",),
    "USD/h": ("USD/h",),
}
ALL_UNITS = {unit for units in UNIT_CHOICES.values() for unit in units}

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


def choices(unit):
    return ", ".join(UNIT_CHOICES[unit])


def parsed(text, unit):
    """(number as written, unit as written) of `text` by the grammar of `unit`'s column, or UnitError."""
    if not isinstance(text, str):
        raise UnitError(f"write the value with its unit, e.g. '{text} {unit}'")
    match = QUANTITY.match(text)
    if match is None or not match.group(2):
        if NON_ASCII_DIGIT.search(text):
            raise UnitError(f"{text!r}: write the number with the digits 0-9")
        if "," in text:
            raise UnitError(f"{text!r}: write numbers without thousands separators, e.g. '1979 TFLOPS'")
        if NUMBER.match(text):
            raise UnitError(f"{text!r} has no unit: write it with its unit, e.g. '{text.strip()} {unit}'")
        raise UnitError(f"cannot read {text!r} as a quantity: write a number and one of {choices(unit)}")
    number, unit_text = match.groups()
    if unit_text.startswith((",", ".")):
        raise UnitError(f"{text!r}: write numbers without thousands separators, e.g. '1979 TFLOPS'")
    if unit_text not in UNIT_CHOICES[unit]:
        if unit_text in ALL_UNITS:
            raise UnitError(f"{text!r} is in {unit_text}, which cannot be converted to {unit} "
                            f"(write one of {choices(unit)})")
        raise UnitError(f"unknown unit {unit_text!r} in {text!r}: write one of {choices(unit)}")
    return number, unit_text


def binary_twin(unit):
    """The binary unit of the same prefix as `unit`: "GiB" for "GB"."""
    return f"{unit[0]}i{unit[1:]}"


@lru_cache(maxsize=4096)
def to_unit(text, unit, capacity=False):
    """Return the magnitude of `text` ("4.8 TB/s") in `unit` ("GB/s"), read by the grammar of `unit`'s column.

    A `capacity` (DRAM) is the number the vendor prints, whatever its label:
    "24 GiB" in GB is 24, as DRAM capacities are binary; a prefix converts within
    its label's base ("1 TiB" is 1024, "1 TB" 1000).

    Cached: data files repeat the same few strings, and pint parsing is the
    slowest step of validating a quantity.
    """
    number, unit_text = parsed(text, unit)
    value = float(number)
    if math.isinf(value) or (value != 0 and abs(value) < sys.float_info.min):
        raise UnitError(f"{text!r} is beyond the numbers a column stores (a float from "
                        f"{sys.float_info.min:.1e} to {sys.float_info.max:.1e}, or 0)")
    target = binary_twin(unit) if capacity and BINARY_PREFIX.search(unit_text) else unit
    magnitude = value * conversion_factor(unit_text, target)
    # 12 significant digits drop the binary noise of unit conversion (3.35 TB/s
    # is 3350 GB/s, not 3350.0000000000005).
    rounded = round(magnitude, DECIMALS[unit]) if unit in DECIMALS else float(f"{magnitude:.12g}")
    if rounded == 0 and value != 0:
        raise UnitError(f"{text!r} rounds to 0 {unit} (values of this column are kept to "
                        f"{DECIMALS.get(unit, 12)} {'decimals' if unit in DECIMALS else 'significant digits'})")
    return rounded


def typed_spelling(text, unit):
    """`text` ("3 tb/s") with its unit spelled as the column's list spells it ("3 TB/s"), for queries typed by
    readers, who do not mind case; None when no unit of the list matches.

    Data files keep the exact spelling the vendor prints: this is for filters only. Milli is not
    offered, so "mw" on a W column can only be MW.
    """
    match = QUANTITY.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    spellings = {spelling.lower(): spelling for spelling in UNIT_CHOICES[unit]}
    found = spellings.get(match.group(2).lower())
    return f"{match.group(1)} {found}" if found else None
