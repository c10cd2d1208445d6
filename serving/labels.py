"""The reader pages' view of the accelerators table, read from its field definitions (domain/schema.py).

Labels, units, the finder's columns, the spec sheet's groups and the column glossary all come from the
`Field` and `Table` records: a field added there with a label and a group shows on the spec sheet, and one
named in the table's `finder` shows in the finder and Datasette's compact table, with no template touched.
"""

from typing import NamedTuple

from domain.schema import AUTHORED, CAPABILITY, NUMERIC_KINDS, SHEET_GROUPS, Field, Table

ACCELERATORS = AUTHORED["accelerators"]
FIELDS = {f.name: f for f in ACCELERATORS.columns}
# What a blank cell says when no figure is stored: a reason in words, never an empty cell.
NOT_STATED = "not stated"


class Column(NamedTuple):
    """One column of the compact accelerators table, as its template draws it."""

    name: str
    header: str           # label and unit: "Bandwidth (GB/s)"
    cell: str             # how a value is drawn: name, number, capability, labels, note or text
    folded: bool          # on a phone, shown under the name rather than in a column of its own
    marked_by: str | None  # a bool column saying the value is derived
    kind_by: str | None    # an enum column saying what kind of figure the value is (power_kind)
    unknown: str          # what an empty cell says


def cell_kind(field: Field, table: Table = ACCELERATORS) -> str:
    if field.name == table.label:
        return "name"
    if field.name == "note":
        return "note"
    if field.kind in NUMERIC_KINDS:
        return "number"
    if field.choices == CAPABILITY:
        return "capability"
    return "labels" if field.kind == "list" else "text"


def finder_columns(table: Table) -> tuple:
    """The compact table's columns, in the order the table's `finder` names them."""
    return tuple(Column(name, field.heading, cell_kind(field, table), name in table.finder_folded, field.marked_by,
                        field.kind_by, field.unknown or NOT_STATED)
                 for name, field in ((name, table.field(name)) for name in table.finder))


FINDER_COLUMNS = finder_columns(ACCELERATORS)
# Columns the compact table's JSON request asks for: its own, and the columns marking one of them derived.
FINDER_REQUEST = (tuple(c.name for c in FINDER_COLUMNS) + tuple(c.marked_by for c in FINDER_COLUMNS if c.marked_by)
                  + tuple(c.kind_by for c in FINDER_COLUMNS if c.kind_by) + ("scope",))


def label(name: str) -> str:
    """A field's reader label: "Memory bandwidth"."""
    return FIELDS[name].shown_label


def grouped(table: Table, group: str) -> tuple:
    """The names of the fields of one spec-sheet group, in the table's order."""
    return tuple(f.name for f in table.columns if f.group == group)


def sections(table: Table) -> tuple:
    """The spec sheet's sections after its head: (group, the names of its fields)."""
    return tuple((g, grouped(table, g.key)) for g in SHEET_GROUPS if g.key != "identity")


# The fields that say what a product is, rather than what it does: the spec sheet's head, a folded group on compare.
IDENTITY = grouped(ACCELERATORS, "identity")
SECTIONS = sections(ACCELERATORS)


class Term(NamedTuple):
    """One entry of the column glossary."""

    name: str
    heading: str
    description: str


def glossary(describe) -> tuple:
    """Every column of the table with its reader header and its description (`describe(field)`)."""
    return tuple(Term(f.name, f.heading, describe(f)) for f in ACCELERATORS.columns)
