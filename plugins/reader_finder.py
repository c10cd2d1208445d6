"""The accelerator finder, and the compact accelerators table: the dozen columns a reader filters on.

Datasette's accelerators table shows every column, a glossary and the facets
before the first row. This page asks Datasette's own table JSON for the same
filters (so the unit filters, facets and sort are Datasette's, and the full
table is the same query string on /computekb/accelerators) and shows the
answer compactly: human-readable headers with units, notes cut short with the
whole text on hover, formats as labels, facets as links that stay here.
The form's fields are Datasette's filter arguments, so every state is a permalink.

Datasette's own accelerators table shows the same columns by default
(templates/_table-computekb-accelerators.html, Datasette's override of a
table's rows), with the same headers and cells (templates/_reader_accelerator_row.html);
`?_view=full` there shows Datasette's table of every column.
"""

import json
import re
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit

from datasette import hookimpl
from datasette.utils.asgi import Response

from domain.schema import KIND_LABELS, TABLES_BY_NAME, TIER_LABELS
from serving.labels import FIELDS, FINDER_COLUMNS, FINDER_REQUEST, glossary
from serving.metadata import DATABASE, describe
from serving.table_json import EXTRAS, facet_results, row_count

PATH = "/-/accelerators"

# The table's page facets (domain/schema.py), as on Datasette's table, and the architecture family: the finder
# finds every product line of an architecture (GeForce RTX 50, GB10 and Jetson Thor under Blackwell).
OWN_FACETS = ("architecture_family", "weakest_tier")
# Facets of a source tier: their values are shown by the tier's label ("vendor figure, quoted").
TIER_FACETS = ("weakest_tier",)
FACETS = tuple((column, FIELDS[column].shown_label)
               for column in TABLES_BY_NAME["accelerators"].page_facets + OWN_FACETS)


class Sort(NamedTuple):
    """One choice of the form's "Sorted by": the `_sort_by` value, the column and its direction."""

    key: str
    column: str
    descending: bool
    label: str


SORTS = (
    Sort("memory_bandwidth_gbs", "memory_bandwidth_gbs", True, "bandwidth, highest first"),
    Sort("memory_gb", "memory_gb", True, "memory, highest first"),
    Sort("tdp_w", "tdp_w", True, "power, highest first"),
    Sort("launch_price_usd", "launch_price_usd", False, "list price, lowest first"),
    Sort("cheapest_gpu_hour_usd", "cheapest_gpu_hour_usd", False, "cloud price per GPU-hour, lowest first"),
    Sort("announced", "announced", True, "announcement date, latest first"),
    Sort("name", "name", False, "name"),
)
SORT_BY = "_sort_by"  # the form's sort field: this page's own argument, turned into Datasette's
# The form's control that lists systems (racks, whole computers) beside single devices; without it, or a scope
# filter, they are left out: a rack's memory is not one device's.
SYSTEMS = "_systems"
PER_DEVICE = ("scope__not", "system")
NOTE_CHARACTERS = 70
# Arguments of the JSON request that the reader's URL does not carry.
GLOSSARY = glossary(describe)
OWN_ARGUMENTS = {"_shape", "_size", "_col", "_nocol", "_facet", "_extra"}


# The columns a reader's filter may name (`memory_gb__gte=80`, `vendor=nvidia`): the table's own and derived.
FILTER_COLUMNS = {f.name for f in TABLES_BY_NAME["accelerators"].fields + TABLES_BY_NAME["accelerators"].derived}


def datasette_pairs(pairs):
    """The reader's arguments as Datasette's: `_sort_by` becomes `_sort` or `_sort_desc` (unknown: 400); a
    filter on no column of the table is refused (Datasette would answer it with no rows and no word)."""
    sorts = {sort.key: sort for sort in SORTS}
    unknown = sorted({key for key, _ in pairs if not key.startswith("_") and key.split("__")[0] not in FILTER_COLUMNS})
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a column of the accelerators table; filter on one, such as "
                         "memory_gb__gte=80 or vendor=nvidia")
    keys = {key for key, _ in pairs}
    out = [] if SYSTEMS in keys or any(key.split("__")[0] == "scope" for key in keys) else [PER_DEVICE]
    for key, value in pairs:
        if key == SYSTEMS:
            continue
        if key != SORT_BY:
            out.append((key, value))
        elif value in sorts:
            out.append(("_sort_desc" if sorts[value].descending else "_sort", sorts[value].column))
        else:
            raise ValueError(f"cannot sort by {value!r}: choose one of {', '.join(sorts)}")
    return out


def nulls_last(rows, pairs):
    """Rows without a value in the ascending sort column moved after the others (SQLite sorts nulls
    first going up; going down they already come last), and how many there are."""
    column = dict(pairs).get("_sort") or dict(pairs).get("_sort_desc")
    if column is None:
        return rows, 0
    valued = [row for row in rows if row.get(column) is not None]
    empty = [row for row in rows if row.get(column) is None]
    return valued + empty, len(empty)


# Price filters drop the rows without a price (SQL's comparison with null is never true): the page counts them.
PRICE_COLUMNS = ("launch_price_usd", "cheapest_gpu_hour_usd")


class LeftOut(NamedTuple):
    """Rows a price filter drops because they have no price at all: how many, and a link to them."""

    column: str
    label: str
    count: int
    href: str


def without_price_filter(pairs, column):
    """The reader's arguments with `column`'s filters taken away and rows with no `column` asked for instead."""
    return [(k, v) for k, v in pairs if k.split("__")[0] != column] + [(f"{column}__isnull", "1")]


async def left_out(datasette, pairs, query):
    """For each price column the reader filters on, the rows matching every other filter that have no price."""
    found = []
    for column in PRICE_COLUMNS:
        if not any(k.split("__")[0] == column for k, _ in query):
            continue
        others = without_price_filter(query, column)
        answer = await datasette.client.get(f"/{DATABASE}/accelerators.json?" + urlencode(
            [*others, ("_size", "0"), ("_nofacet", "1"), ("_extra", "count")]))
        count = row_count(answer.json()) if answer.status_code == 200 else None
        if count:
            href = datasette.urls.path(PATH) + "?" + urlencode(without_price_filter(pairs, column))
            found.append(LeftOut(column, FIELDS[column].shown_label.lower(), count, href))
    return found


@dataclass
class Facet:
    column: str
    title: str
    values: list          # [{"label", "count", "selected", "href"}]


def reader_pairs(query_string):
    """The reader's filter arguments: blank form fields dropped (a blank field is no filter)."""
    return [(k, v) for k, v in parse_qsl(query_string, keep_blank_values=True)
            if v.strip() and k not in OWN_ARGUMENTS]


def json_path(pairs):
    extra = [("_shape", "objects"), ("_size", "max"), *(("_col", c) for c in FINDER_REQUEST),
             *(("_facet", c) for c in OWN_FACETS)]
    return f"/{DATABASE}/accelerators.json?" + urlencode(pairs + extra + EXTRAS)


def here(datasette, query):
    """A link to this page for the query string of one of Datasette's toggle URLs."""
    return datasette.urls.path(PATH) + "?" + urlencode(reader_pairs(query))


def facets(datasette, results):
    """The reader's facets, each value a link to this page with that filter toggled."""
    return [Facet(column, title, [
        {"label": TIER_LABELS.get(r["label"], r["label"]) if column in TIER_FACETS else r["label"],
         "count": r["count"], "selected": r["selected"],
         "href": here(datasette, urlsplit(r["toggle_url"]).query)}
        for r in results.get(column, {}).get("results", [])]) for column, title in FACETS]


FILTER = re.compile(r'\b(?P<column>[a-z][a-z0-9_]*) (?P<op>[≥≤<>=]|!=|contains) (?P<value>"[^"]*"|-?[0-9.]+)')
# The default filter of the finder, in the reader's words.
PER_DEVICE_WORDS = "not a system"
SORTED = re.compile(r"(?P<lead>^| )sorted by (?P<column>[a-z][a-z0-9_]*)(?P<descending> descending)?$")


def number_text(value):
    """3000.0 -> 3,000; 2.5 -> 2.5."""
    return f"{float(value):,.10g}"


def readable(description):
    """Datasette's description of the filters in the reader's words: "memory_bandwidth_gbs ≥ 3000.0 sorted by
    memory_bandwidth_gbs descending" becomes "Bandwidth ≥ 3,000 GB/s sorted by bandwidth, highest first"."""
    if not description:
        return description
    def one_filter(match):
        field = FIELDS.get(match["column"])
        if field is None:
            return match[0]
        if (match["column"], match["op"], match["value"]) == (PER_DEVICE[0].split("__")[0], "!=", f'"{PER_DEVICE[1]}"'):
            return PER_DEVICE_WORDS
        words, value = field.header or field.shown_label, match["value"]
        if match["column"].startswith("native_") and match["op"] == "=":
            return f"native {words}" if value == '"yes"' else f"{words} {value.strip(chr(34))}"
        if value.startswith('"'):
            return f"{words.lower()} {match['op']} {value}"
        return f"{words} {match['op']} {number_text(value)}{' ' + field.unit if field.unit else ''}"

    def sorted_by(match):
        sort = next((s for s in SORTS if s.column == match["column"] and s.descending == bool(match["descending"])), None)
        return f"{match['lead']}sorted by {sort.label}" if sort else match[0]
    return SORTED.sub(sorted_by, FILTER.sub(one_filter, description))


def short_note(note):
    if not note or len(note) <= NOTE_CHARACTERS:
        return note
    return note[:NOTE_CHARACTERS].rsplit(" ", 1)[0] + "…"


def json_list(raw):
    """A list column's labels (the column holds a JSON array)."""
    return json.loads(raw) if raw else []


async def finder(request, datasette):
    pairs = reader_pairs(request.query_string)
    if len(pairs) != len(parse_qsl(request.query_string, keep_blank_values=True)):
        # blank fields of a submitted form: the permalink is the tidy URL
        return Response.redirect(datasette.urls.path(PATH) + ("?" + urlencode(pairs) if pairs else ""))
    try:
        query = datasette_pairs(pairs)  # unsorted: the table's own default, by bandwidth (domain/schema.py sort_desc)
    except ValueError as error:
        context = {"pairs": dict(pairs), "sorts": SORTS, "error": str(error)}
        html = await datasette.render_template("reader_finder.html", context, request=request)
        return Response.html(html, status=400)
    answer = await datasette.client.get(json_path(query))
    data = answer.json()
    context = {
        "pairs": dict(pairs), "sorts": SORTS, "systems_left_out": PER_DEVICE in query,
        "with_systems": datasette.urls.path(PATH) + "?" + urlencode([*pairs, (SYSTEMS, "include")]),
        "full_table": datasette.urls.table(DATABASE, "accelerators") + "?" + urlencode([*query, ("_view", "full")]),
        "error": data.get("error") if answer.status_code != 200 else None,
    }
    if context["error"] is None:
        rows, unpriced = nulls_last(data["rows"], query)
        rows = [{**row, "href": datasette.urls.row(DATABASE, "accelerators", row["slug"])} for row in rows]
        sort = next((sort for sort in SORTS if sort.column in (dict(query).get("_sort"), dict(query).get("_sort_desc"))), None)
        context.update(rows=rows, count=row_count(data), without=unpriced, left_out=await left_out(datasette, pairs, query),
                       sort_label=sort.label.split(",")[0] if sort else None,
                       described=readable(data.get("human_description_en")),
                       facets=facets(datasette, facet_results(data)),
                       compare=datasette.urls.path("/-/compare?ids=" + ",".join(r["slug"] for r in rows[:8])))
    html = await datasette.render_template("reader_finder.html", context, request=request)
    return Response.html(html, status=answer.status_code if context["error"] else 200)


@hookimpl
def register_routes():
    return [(rf"^{PATH}$", finder)]


@hookimpl
def extra_template_vars(datasette):
    return {"finder_path": datasette.urls.path(PATH), "finder_sorts": SORTS, "accelerator_columns": FINDER_COLUMNS,
            "finder_classes": FIELDS["device_class"].choices,
            "accelerator_glossary": GLOSSARY, "kind_labels": KIND_LABELS}


@hookimpl
def prepare_jinja2_environment(env):
    """The filters the compact rows and the cited values need, on every page alike."""
    env.filters["short_note"] = short_note
    env.filters["json_list"] = json_list
    env.filters["tier_label"] = lambda tier: TIER_LABELS.get(tier, tier)
