"""Columns with a unit: values shown with it ("3.35 TB/s"), filters that accept one
(`?memory_bandwidth_gbs__gt=3TB/s`), read by the grammar of data files (domain/units.py).

The unit of each column is the schema's (domain/schema.py), read with the
project's own pint registry (domain/units.py): nothing here depends on the `units`
of Datasette's metadata, which Datasette 1.0 no longer has.

Datasette reads every `column__lookup=value` argument as one of its filters
and compares the column with the value as written. A value with a unit must
therefore be a number in the column's unit by the time Datasette sees the
request: the ASGI wrapper rewrites `3TB/s` into `3000` on a GB/s column. A
value that is neither a number nor a quantity of the column's dimension is
left as written, and `filters_from_request` answers the page with a 400 that
says what was expected (Datasette's own error page, HTML or JSON).
"""

from functools import cache, lru_cache
from urllib.parse import parse_qsl, urlencode

from datasette import hookimpl
from datasette.filters import FilterArguments
from datasette.utils.asgi import BadRequest
from markupsafe import Markup

from domain.schema import CAPACITY_COLUMNS, COLUMN_UNITS
from domain.units import NUMBER, REGISTRY, UnitError, to_unit, typed_spelling
from serving import speedups
from serving.metadata import DATABASE, DISPLAY_UNITS
from serving.query_args import Filter, as_filter

# Lookups that compare the column with one number.
NUMBER_LOOKUPS = {"exact", "not", "gt", "gte", "lt", "lte"}
# Lookups that compare it with a comma-separated list of numbers.
LIST_LOOKUPS = {"in", "notin"}


@cache
def unit_quantity(unit: str):
    """One `unit`, parsed once."""
    return REGISTRY.Quantity(1, unit)


def with_unit(value: float, unit: str) -> Markup:
    """`value` in `unit` with the SI prefix that suits it, as Datasette 0.65 showed it: "3.35&nbsp;TB/s"."""
    # pint works in binary floating point: rounding keeps 3.35 from showing as 3.3500000000000005
    quantity = round((value * unit_quantity(unit)).to_compact(), 6)
    return Markup(f"{quantity:~P}".replace(" ", "&nbsp;"))


# A column's values repeat (80 GB, 700 W) and pint is slow to format each one.
# typed: pint shows 24 as "24 GB" and 24.0 as "24.0 GB".
remembered_with_unit = lru_cache(maxsize=16384, typed=True)(with_unit)


def shown_with_unit(value: float, unit: str) -> Markup:
    # 0.0 and -0.0 are one cache key, but pint shows "-0.0 GB"; zero is quick anyway
    if not speedups.enabled() or value == 0:
        return with_unit(value, unit)
    return remembered_with_unit(value, unit)


def is_number(text: str) -> bool:
    """A plain number by the quantity grammar (digits 0-9: not `nan`, `1_000` or digits of other scripts)."""
    return NUMBER.match(text) is not None


def in_column_unit(text: str, unit: str, capacity: bool) -> str:
    """`text` as a number in `unit`: unchanged when it is a number already, else converted (a capacity
    as the data stores it: "24 GiB" is 24); UnitError if neither."""
    if is_number(text):
        return text
    try:
        return repr(to_unit(text, unit, capacity))
    except UnitError:
        respelled = typed_spelling(text, unit)  # a reader's "3 tb/s"
        if respelled is None:
            raise
        return repr(to_unit(respelled, unit, capacity))


def converted(argument: Filter, unit: str, table: str) -> str:
    """The value of a filter on a column in `unit`, as Datasette must see it; UnitError with a clear message if it cannot be."""
    items = argument.value.split(",") if argument.lookup in LIST_LOOKUPS else [argument.value]
    capacity = argument.column in CAPACITY_COLUMNS.get(table, ())
    try:
        return ",".join(in_column_unit(item, unit, capacity) for item in items)
    except UnitError as error:
        raise UnitError(f"{argument.key}={argument.value!r}: expected a number (in {unit}) or a number and a unit, "
                        f"e.g. {argument.column}__gt=10 {unit}; {error}") from None


def unit_filters(pairs, units: dict):
    """The (filter, unit) of each argument in `pairs` that compares a column with a unit to numbers."""
    for key, value in pairs:
        argument = as_filter(key, value)
        if (argument and argument.column in units and value.strip() and not value.startswith("[")
                and argument.lookup in NUMBER_LOOKUPS | LIST_LOOKUPS):
            yield argument, units[argument.column]


def table_of(path: str) -> str | None:
    """The table a path of the knowledge base's database shows (`/computekb/accelerators.json`), or None."""
    parts = path.strip("/").split("/")
    if len(parts) != 2 or parts[0] != DATABASE:
        return None
    return parts[1].rsplit(".", 1)[0]


def with_values_in_column_units(query_string: str, table: str) -> str:
    """`query_string` with each convertible value of a unit filter on `table` as a number in its column's unit."""
    pairs = parse_qsl(query_string, keep_blank_values=True)
    changed = False
    for argument, unit in unit_filters(pairs, COLUMN_UNITS.get(table, {})):
        try:
            value = converted(argument, unit, table)
        except UnitError:
            continue  # left as written: filters_from_request refuses it with the reason
        if value != argument.value:
            index = pairs.index((argument.key, argument.value))
            pairs[index] = (argument.key, value)
            changed = True
    return urlencode(pairs) if changed else query_string


@hookimpl
def asgi_wrapper(datasette):
    def wrap(app):
        async def in_column_units(scope, receive, send):
            if scope["type"] == "http" and scope.get("query_string"):
                table = table_of(scope["path"]) or ""
                if table in COLUMN_UNITS:
                    query = scope["query_string"].decode("latin-1")
                    scope = dict(scope, query_string=with_values_in_column_units(query, table).encode("latin-1"))
            await app(scope, receive, send)
        return in_column_units
    return wrap


@hookimpl
def filters_from_request(request, database, table):
    """Refuse a unit filter whose value could not be read as a quantity of its column."""
    units = COLUMN_UNITS.get(table) if database == DATABASE else None
    pairs = [(key, value) for key in request.args for value in request.args.getlist(key)]
    for argument, unit in unit_filters(pairs, units or {}):
        try:
            converted(argument, unit, table)
        except UnitError as error:
            raise BadRequest(str(error)) from None
    return FilterArguments([])


@hookimpl
def render_cell(value, column, table, database):
    unit = COLUMN_UNITS.get(table, {}).get(column) if database == DATABASE else None
    if unit not in DISPLAY_UNITS or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None  # Datasette's own display
    return shown_with_unit(value, unit)
