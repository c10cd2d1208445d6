"""Validate stage: records in, clean rows out, every problem located.

Per record, a pydantic model generated from `schema.py` checks types, units,
enums and bounds. Across records, the checks pydantic cannot do: slugs unique
per table, references that resolve, and a citation for every number.
"""

import datetime
import re
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Literal, Optional

from pydantic import (BeforeValidator, ConfigDict, Field as PydanticField,
                      StrictBool, StrictInt, StringConstraints, ValidationError, create_model)

from .problems import Problem
from .schema import CITATION_KINDS, NUMERIC_KINDS, SLUG_PATTERN, TABLES, TABLES_BY_NAME
from .units import UnitError, to_unit

DATE_PATTERN = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
CITATION_KEYS = {"value", "source", "kind", "note"}

Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, max_length=120)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=20_000)]
Url = Annotated[str, StringConstraints(pattern=r"^https?://\S+$", max_length=2000)]


def _partial_date(value):
    """YYYY, YYYY-MM or YYYY-MM-DD, checked against the calendar."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not DATE_PATTERN.match(value):
        raise ValueError("expected a date as YYYY, YYYY-MM or YYYY-MM-DD")
    parts = [int(p) for p in value.split("-")] + [1, 1]
    try:
        datetime.date(*parts[:3])
    except ValueError as error:
        raise ValueError(f"not a real date ({error})") from None
    return value


def _quantity(unit):
    def convert(value):
        if isinstance(value, (list, dict)):  # to_unit is cached: it takes hashable values only
            raise ValueError(f"expected one quantity such as '80 {unit}', not a {type(value).__name__}")
        try:
            return to_unit(value, unit)
        except UnitError as error:
            raise ValueError(str(error)) from None
    return convert


def _annotation(field):
    """The pydantic type of one schema field."""
    kind = field.kind
    if kind in ("slug", "ref"):
        return Slug
    if kind == "refs":
        return list[Slug]
    if kind == "list":
        return list[Text]
    if kind == "text":
        return Text
    if kind == "url":
        return Url
    if kind == "enum":
        return Literal[field.choices]
    if kind == "bool":
        return StrictBool
    if kind == "date":
        return Annotated[str, BeforeValidator(_partial_date)]
    if kind == "int":
        return Annotated[StrictInt, PydanticField(ge=field.minimum if field.minimum is not None else 1)]
    if kind == "number":
        return Annotated[float, PydanticField(gt=0, strict=True, allow_inf_nan=False)]
    if kind == "quantity":
        return Annotated[float, BeforeValidator(_quantity(field.unit)), PydanticField(gt=0, allow_inf_nan=False)]
    raise AssertionError(kind)


@cache
def model_for(table_name):
    """The pydantic model of one table, generated from its field definitions."""
    table = TABLES_BY_NAME[table_name]
    fields = {}
    for field in table.fields:
        annotation = _annotation(field)
        fields[field.name] = (annotation, ...) if field.required else (Optional[annotation], None)
    if table.slug_from:
        fields["slug"] = (Optional[Slug], None)
    return create_model(f"{table_name}_record", __config__=ConfigDict(extra="forbid"), **fields)


@dataclass
class Citation:
    """Who says a number (or a format-support claim) of one row."""

    table: str
    row: str
    field: str
    value: object
    as_written: object
    source: str | None
    kind: str | None
    note: str | None
    path: str
    line: int
    explicit: bool  # the value names its own source (the row's source is checked with the row)


@dataclass
class Row:
    """A validated row and where it came from."""

    table: str
    values: dict
    path: str
    line: int
    lines: dict

    @property
    def slug(self):
        return self.values["slug"]

    def line_of(self, field):
        return self.lines.get(field, self.line)


def _message(error):
    if error["type"] == "extra_forbidden":
        return "unknown field (a typo? see docs/DATA.md for the fields of this table)"
    if error["type"] == "missing":
        return "required field is missing"
    if error["type"] == "literal_error":
        return f"{error['input']!r} is not allowed; {error['msg'].replace('Input should be', 'expected')}"
    if error["type"] == "string_pattern_mismatch" and "a-z0-9" in str(error["ctx"]):
        return f"{error['input']!r} is not a valid slug: use lower-case letters, digits and single hyphens"
    if error["type"] == "string_pattern_mismatch" and "https?" in str(error["ctx"]):
        return f"{error['input']!r} is not an http(s) URL: write https://... with no spaces"
    message = error["msg"]
    return message.removeprefix("Value error, ")


def split_citations(record):
    """Separate `{value, source, kind, note}` mappings from plain values.

    Returns (plain values, {field: citation mapping}, problems).
    """
    table = TABLES_BY_NAME[record.table]
    values, cited, problems = {}, {}, []
    for key, value in record.data.items():
        if isinstance(value, dict):
            field = next((f for f in table.fields if f.name == key), None)
            if field is None or field.kind not in NUMERIC_KINDS:
                problems.append(Problem(record.path, record.line_of(key), key, "expected a single value, not a mapping"))
                continue
            unknown = set(value) - CITATION_KEYS
            if unknown or "value" not in value:
                problems.append(Problem(record.path, record.line_of(key), key,
                                        f"a cited value is a mapping of value, source, kind, note (got {', '.join(sorted(value))})"))
                continue
            cited[key] = value
            value = value["value"]
        values[key] = value
    return values, cited, problems


def validate_record(record):
    """Validate one record; return (Row or None, [Citation], [Problem])."""
    table = TABLES_BY_NAME[record.table]
    values, cited, problems = split_citations(record)
    try:
        clean = model_for(record.table).model_validate(values).model_dump()
    except ValidationError as error:
        for e in error.errors():
            field = str(e["loc"][0]) if e["loc"] else "-"
            problems.append(Problem(record.path, record.line_of(field), field, _message(e)))
        return None, [], problems
    if table.slug_from and not clean.get("slug"):
        clean["slug"] = "-".join(clean[name] for name in table.slug_from)
    row = Row(record.table, clean, record.path, record.line, record.data.lines)
    citations, more = citations_of(row, values, cited) if table.cited else ([], [])
    return row, citations, problems + more


def citations_of(row, written, cited):
    """One citation per non-null number (and per format-support claim)."""
    table = TABLES_BY_NAME[row.table]
    numeric = [f.name for f in table.fields if f.kind in NUMERIC_KINDS and row.values.get(f.name) is not None]
    if row.table == "format_support":
        numeric = ["format"]
    citations, problems = [], []
    for name in numeric:
        meta = cited.get(name, {})
        source = meta.get("source") or row.values.get("source")
        if not source:
            problems.append(Problem(row.path, row.line_of(name), name,
                                    "number without a citation: give the record a `source:` or write {value: ..., source: ...}"))
            continue
        kind = meta.get("kind")
        if kind is not None and kind not in CITATION_KINDS:
            problems.append(Problem(row.path, row.line_of(name), name,
                                    f"citation kind {kind!r} is not one of {', '.join(CITATION_KINDS)}"))
        for key in ("source", "note"):
            if key in meta and not isinstance(meta[key], str):
                problems.append(Problem(row.path, row.line_of(name), name, f"citation {key} must be text"))
        citations.append(Citation(row.table, row.slug, name, row.values[name], written.get(name),
                                  str(source), kind, meta.get("note"), row.path, row.line_of(name),
                                  "source" in meta))
    return citations, problems


def check_unique(rows):
    """A slug names one row of its table, across all files."""
    seen, problems = {}, []
    for row in rows:
        key = (row.table, row.slug)
        if key in seen:
            first = seen[key]
            problems.append(Problem(row.path, row.line_of("slug"), "slug",
                                    f"duplicate {row.table} slug {row.slug!r} (first defined at {first.path}:{first.line_of('slug')})"))
        else:
            seen[key] = row
    return problems


def check_references(rows, citations):
    """Every ref, refs item and citation source names an existing row."""
    slugs = {t.name: set() for t in TABLES}
    for row in rows:
        slugs[row.table].add(row.slug)
    problems = []
    for row in rows:
        for field in TABLES_BY_NAME[row.table].fields:
            value = row.values.get(field.name)
            targets = value if field.kind == "refs" else [value] if field.kind == "ref" else []
            for target in targets or []:
                if target is not None and target not in slugs[field.ref]:
                    problems.append(Problem(row.path, row.line_of(field.name), field.name,
                                            f"{target!r} is not a known {field.ref} slug"))
    for citation in citations:
        if citation.explicit and citation.source not in slugs["sources"]:
            problems.append(Problem(citation.path, citation.line, citation.field,
                                    f"citation source {citation.source!r} is not a known sources slug"))
    return problems


def partial_row(record):
    """The slug and references of a record that failed validation.

    Checking them too means one run reports a dangling reference or a
    duplicate slug even in a record that has other faults.
    """
    table = TABLES_BY_NAME[record.table]
    values = {}
    for field in table.fields:
        value = record.data.get(field.name)
        if field.kind in ("slug", "ref") and isinstance(value, str):
            values[field.name] = value
        elif field.kind == "refs" and isinstance(value, list):
            values[field.name] = [v for v in value if isinstance(v, str)]
    if "slug" not in values:
        return None
    return Row(record.table, values, record.path, record.line, record.data.lines)


def validate_records(records):
    """Validate each record on its own; return (rows, partial rows, citations, problems).

    Records of different files do not depend on each other here, so files can
    be validated in parallel and their results cached; `check_across` follows.
    """
    rows, partial, citations, problems = [], [], [], []
    for record in records:
        row, cites, found = validate_record(record)
        problems += found
        if row is not None:
            rows.append(row)
            citations += cites
        elif (row := partial_row(record)) is not None:
            partial.append(row)
    return rows, partial, citations, problems


def check_across(rows, partial, citations):
    """The checks across records: unique slugs, references that resolve."""
    return check_unique(rows + partial) + check_references(rows + partial, citations)


def validate(records):
    """Validate all records; return (rows, citations, problems)."""
    rows, partial, citations, problems = validate_records(records)
    return rows, citations, problems + check_across(rows, partial, citations)
