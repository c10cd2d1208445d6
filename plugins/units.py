"""Values with a unit, shown exactly as Datasette shows them ("3.35 TB/s"), for less.

Datasette 0.65 formats each cell of a column with a unit by parsing the unit
with pint, multiplying and calling `to_compact()`: about 0.3 ms per cell, the
largest cost of an accelerator's row page and 8 of them per accelerator row on
table pages. The same formula is used here, with the parsed unit kept and the
result cached per (value, unit): a column's values repeat (80 GB, 700 W), and
the data is immutable while served.
"""

from functools import lru_cache

from datasette import hookimpl
from datasette.views.base import ureg
from markupsafe import Markup


@lru_cache(maxsize=None)
def unit_quantity(unit):
    return ureg(unit)


def compact(value, unit):
    """What Datasette 0.65 shows for `value` in a column of `unit` (datasette/views/table.py)."""
    quantity = round((value * unit_quantity(unit)).to_compact(), 6)
    return Markup(f"{quantity:~P}".replace(" ", "&nbsp;"))


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
