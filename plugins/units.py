"""Values with a unit, shown exactly as Datasette shows them ("3.35 TB/s"), for less.

Datasette 0.65 formats each cell of a column with a unit by parsing the unit
with pint, multiplying and calling `to_compact()`: about 0.3 ms per cell, the
largest cost of an accelerator's row page, and 8 cells per accelerator on a
table page. Most of that work depends on the unit alone (parsing it, finding
its base units and the SI prefixes), so here it is done once per unit, and the
two conversions that depend on the value are left to pint, as `to_compact()`
does them (datasette/vendored/pint/facets/plain/qto.py). The results are also
cached per (value, unit): a column's values repeat (80 GB, 700 W), and the data
is immutable while served. tests/test_fast_paths.py compares the output with
Datasette's own code.
"""

import bisect
import math
from functools import lru_cache

from datasette import hookimpl
from datasette.vendored.pint.util import infer_base_unit
from datasette.views.base import ureg
from markupsafe import Markup


@lru_cache(maxsize=None)
def unit_quantity(unit):
    return ureg(unit)


@lru_cache(maxsize=None)
def si_prefixes():
    """(powers of ten, prefix names) of the registry's SI prefixes, sorted, as to_compact() lists them."""
    prefixes = {}
    for prefix in ureg._prefixes.values():
        scale = prefix.converter.scale
        if scale and int(math.log10(scale)) == math.log10(scale):
            prefixes[int(math.log10(scale))] = prefix.name
        elif not scale:
            prefixes[0] = ""  # the empty prefix (scale 1 also lands here, as 10**0)
    ordered = sorted(prefixes.items())
    return [power for power, _ in ordered], [name for _, name in ordered]


@lru_cache(maxsize=None)
def base_of(unit):
    """The base units of `unit`, and which of them takes the prefix, with its power."""
    base = infer_base_unit(unit_quantity(unit), registry=ureg)
    units = list(base.items())
    name, power = ([u for u in units if u[1] > 0] or units)[0]
    return base, name, power


@lru_cache(maxsize=None)
def prefixed(unit, exponent):
    """The units `unit` is shown in when its base magnitude is about 10**exponent."""
    base, name, _ = base_of(unit)
    powers, names = si_prefixes()
    index = bisect.bisect_left(powers, exponent)
    return base.rename(name, names[index if index < len(names) else -1] + name)


def compact(value, unit):
    """What Datasette 0.65 shows for `value` in a column of `unit` (datasette/views/table.py)."""
    quantity = value * unit_quantity(unit)
    magnitude = quantity.magnitude
    if magnitude != 0 and not math.isnan(magnitude) and not math.isinf(magnitude):
        base, _, power = base_of(unit)
        scale = math.log10(abs(quantity.to(base).magnitude)) / float(power) / 3
        exponent = (math.floor(scale) if power > 0 else math.ceil(scale)) * 3
        quantity = quantity.to(prefixed(unit, exponent))
    return Markup(f"{round(quantity, 6):~P}".replace(" ", "&nbsp;"))


# typed: pint shows 24 as "24 GB" and 24.0 as "24.0 GB"
cached_compact = lru_cache(maxsize=16384, typed=True)(compact)


def with_unit(value, unit):
    if value == 0:  # 0.0 and -0.0 are one cache key, but pint shows "-0.0 GB"; zero is quick anyway
        return compact(value, unit)
    return cached_compact(value, unit)


def column_units(metadata):
    """{(database, table, column): unit} from the served metadata, as Datasette reads it."""
    return {(database, table, column): unit
            for database, database_meta in (metadata.get("databases") or {}).items()
            for table, table_meta in (database_meta.get("tables") or {}).items()
            for column, unit in (table_meta.get("units") or {}).items()}


@hookimpl
def startup(datasette):
    datasette._computekb_units = column_units(datasette.metadata())


@hookimpl
def render_cell(value, column, table, database, datasette):
    unit = datasette._computekb_units.get((database, table, column))
    if unit is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None  # Datasette's own display
    return with_unit(value, unit)
