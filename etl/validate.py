"""Validate stage: records in, clean rows out, every problem located.

Per record, a pydantic-core validator generated from `schema.py` checks types, units,
enums and bounds. Across records, the checks pydantic cannot do: slugs unique
per table, references that resolve, and a citation for every number.
"""

import datetime
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from functools import cache, lru_cache

from pydantic_core import SchemaValidator, ValidationError, core_schema

from domain import sizing
from domain.schema import (
    CITATION_KINDS,
    MEMORY_KIND_OF_TYPE,
    MIN_DEVICE_PRICE,
    MIN_MEMORY_GB,
    MIN_PRICE_PER_GPU_HOUR,
    NUMERIC_KINDS,
    ON_CHIP_MEMORY_CLASSES,
    SCOPES,
    SLUG_PATTERN,
    TABLES,
    TABLES_BY_NAME,
    derived_slug,
)
from domain.units import INTEGER_PRECISIONS, OPS, UNIT_CHOICES, UnitError, parsed, to_unit

from . import consistency
from .problems import Problem

DATE_PATTERN = re.compile(r"[0-9]{4}(?:-[0-9]{2}(?:-[0-9]{2})?)?\Z")  # ASCII digits only; \Z: no trailing newline
CITATION_KEYS = {"value", "source", "kind", "scope", "note", "basis"}

SLUG = core_schema.str_schema(pattern=SLUG_PATTERN, max_length=120)
TEXT = core_schema.str_schema(strip_whitespace=True, min_length=1, max_length=20_000)
URL = core_schema.str_schema(pattern=r"^https?://\S+$", max_length=2000)


def _partial_date(value):
    """YYYY, YYYY-MM or YYYY-MM-DD, checked against the calendar."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(DATE_FORMAT_ERROR)
    return _calendar_date(value)


DATE_FORMAT_ERROR = "expected a date as YYYY, YYYY-MM or YYYY-MM-DD"


@lru_cache(maxsize=4096)
def _calendar_date(value):
    """`_partial_date` of a string; cached, as the same dates come back in many records."""
    if not DATE_PATTERN.match(value):
        raise ValueError(DATE_FORMAT_ERROR)
    parts = [int(p) for p in value.split("-")] + [1, 1]
    try:
        datetime.date(*parts[:3])
    except ValueError as error:
        raise ValueError(f"not a real date ({error})") from None
    return value


def _quantity(field):
    unit = field.unit

    def convert(value):
        if isinstance(value, (list, dict)):  # to_unit is cached: it takes hashable values only
            raise ValueError(f"expected one quantity such as '80 {unit}', not a {type(value).__name__}")
        try:
            magnitude = to_unit(value, unit, field.capacity)
        except UnitError as error:
            raise ValueError(str(error)) from None
        if magnitude > field.maximum:
            raise ValueError(f"{value!r} is more than the largest plausible {field.name} ({field.maximum:,.0f} {unit}): "
                             f"check the number and the unit (one of {', '.join(UNIT_CHOICES[unit])})")
        return magnitude
    return convert


def _normal(value):
    """A float stored with its full precision: a subnormal one (below 2.2e-308) is a slip, not a figure."""
    if value < sys.float_info.min:
        raise ValueError(f"{value!r} is below the smallest normal float ({sys.float_info.min:.1e})")
    return value


def _field_schema(field):
    """The pydantic-core schema of one schema field."""
    kind = field.kind
    if kind in ("slug", "ref"):
        return SLUG
    if kind in ("refs", "list"):
        return core_schema.list_schema(SLUG if kind == "refs" else TEXT)
    if kind in ("text", "url"):
        return TEXT if kind == "text" else URL
    if kind == "enum":
        return core_schema.literal_schema(list(field.choices))
    if kind == "bool":
        return core_schema.bool_schema(strict=True)
    if kind == "date":
        return core_schema.no_info_before_validator_function(_partial_date, core_schema.str_schema())
    if kind == "int":
        return core_schema.int_schema(strict=True, ge=field.minimum if field.minimum is not None else 1,
                                      le=int(field.maximum))
    if kind == "number":
        return core_schema.no_info_after_validator_function(
            _normal, core_schema.float_schema(strict=True, gt=0, le=field.maximum, allow_inf_nan=False))
    if kind == "quantity":
        return core_schema.no_info_before_validator_function(
            _quantity(field), core_schema.float_schema(gt=0, allow_inf_nan=False))
    raise AssertionError(kind)


def _optional(schema):
    return core_schema.typed_dict_field(core_schema.with_default_schema(core_schema.nullable_schema(schema), default=None),
                                        required=False)


@cache
def validator_for(table_name):
    """Validate one record of a table: its values in, the clean row's values out (a dict).

    A pydantic-core validator built from the table's field definitions: the
    checks and messages of a pydantic model with these fields and no extra
    field allowed, without building a model class, which pydantic would do
    per table in every process that validates.
    """
    table = TABLES_BY_NAME[table_name]
    fields = {field.name: core_schema.typed_dict_field(_field_schema(field)) if field.required
              else _optional(_field_schema(field)) for field in table.fields}
    if table.slug_from:
        fields["slug"] = _optional(SLUG)
    return SchemaValidator(core_schema.typed_dict_schema(fields, extra_behavior="forbid")).validate_python


# Fields whose value carries a citation: every number, and the few other values
# marked `cited` in the schema (an accelerator's dates).
CITED_FIELDS = {t.name: [f.name for f in t.fields if f.kind in NUMERIC_KINDS or f.cited] for t in TABLES}


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
    scope: str | None
    note: str | None
    path: str
    line: int
    explicit: bool  # the value names its own source (the row's source is checked with the row)
    basis: tuple = ()  # the other sources a derived value rests on (the ratio of a dense-from-sparse figure)


@dataclass
class Row:
    """A validated row and where it came from."""

    table: str
    values: dict
    path: str
    line: int
    lines: dict
    cited_sources: tuple = ()  # (field, source) of the cited values of a record that failed validation

    @property
    def slug(self):
        return self.values.get("slug")

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
    values, cited, problems = dict(record.data), {}, []
    for key in [key for key, value in values.items() if isinstance(value, dict)]:  # usually none
        value = values[key]
        if key not in CITED_FIELDS[record.table]:
            problems.append(Problem(record.path, record.line_of(key), key, "expected a single value, not a mapping"))
            del values[key]
            continue
        unknown = set(value) - CITATION_KEYS
        if unknown or "value" not in value:
            problems.append(Problem(record.path, record.line_of(key), key,
                                    f"a cited value is a mapping of value, source, kind, scope, note (got {', '.join(sorted(value))})"))
            del values[key]
            continue
        cited[key] = value
        values[key] = value["value"]
    return values, cited, problems


def validate_record(record):
    """Validate one record; return (Row or None, [Citation], [Problem])."""
    table = TABLES_BY_NAME[record.table]
    values, cited, problems = split_citations(record)
    try:
        clean = validator_for(record.table)(values)
    except ValidationError as error:
        for e in error.errors():
            field = str(e["loc"][0]) if e["loc"] else "-"
            problems.append(Problem(record.path, record.line_of(field), field, _message(e)))
        return None, [], problems
    if table.one_of and all(clean.get(name) is None for name in table.one_of):
        given = ", ".join(table.one_of)
        return None, [], problems + [Problem(record.path, record.line, table.one_of[0], f"give at least one of: {given}")]
    problems += list(date_order(record, clean))
    for field in table.fields:
        if field.default is not None and clean.get(field.name) is None:
            clean[field.name] = field.default
    if table.slug_from and not clean.get("slug"):
        clean["slug"] = derived_slug(table, clean)
    found = [Problem(record.path, record.line_of(field), field, message)
             for field, message in note_problems(record.table, clean, cited)]
    if record.table in ROW_CHECKS:
        found += [Problem(record.path, record.line_of(field), field, message)
                  for field, message in ROW_CHECKS[record.table](clean, values)]
    if found:
        return None, [], problems + found
    row = Row(record.table, clean, record.path, record.line, record.data.lines)
    citations, more = citations_of(row, values, cited) if table.cited else ([], [])
    return row, citations, problems + more


# Pairs of dates of one row where the first never comes after the second.
DATE_ORDER = {"accelerators": (("announced", "available"),)}


def after(first, second):
    """Whether partial date `first` is certainly after `second` (YYYY, YYYY-MM, YYYY-MM-DD):
    compared on the parts both give, so 2024-03 is not after 2024."""
    common = min(len(first), len(second))
    return first[:common] > second[:common]


def date_order(record, clean):
    for first, second in DATE_ORDER.get(record.table, ()):
        if clean.get(first) and clean.get(second) and after(clean[first], clean[second]):
            yield Problem(record.path, record.line_of(first), first,
                          f"{clean[first]} is after {second} {clean[second]}: a product is announced before it is available")


def model_problems(model, _written):
    """A model the sizing cannot use: each field its attention and FFN need that it leaves empty."""
    for name in sizing.missing_fields(model):
        yield name, f"required to size this model (attention {model.get('attention')!r}); see docs/LLM_MATH.md"
    if model.get("experts") and model.get("experts_per_token") and model["experts_per_token"] > model["experts"]:
        yield "experts_per_token", f"{model['experts_per_token']} exceeds the {model['experts']} experts"
    for name in ("kv_heads", "full_attention_kv_heads"):
        heads, kv_heads = model.get("attention_heads"), model.get(name)
        if heads and kv_heads and (kv_heads > heads or heads % kv_heads):
            yield name, (f"{kv_heads} does not divide the {heads} attention heads: each key-value head serves a "
                         "whole group of query heads (as many or fewer, a divisor)")
    layers = model.get("layers")
    for name in ("full_attention_layers", "dense_layers", "linear_attention_layers"):
        if layers and model.get(name) is not None and model[name] > layers:
            yield name, f"{model[name]} exceeds the {layers} layers"
    attending = (layers or 0) - (model.get("linear_attention_layers") or 0)
    if layers and model.get("full_attention_layers") is not None and model["full_attention_layers"] > attending:
        yield "full_attention_layers", (f"{model['full_attention_layers']} exceeds the {attending} layers "
                                        "left once the linear-attention layers are counted")


def checkpoint_problems(checkpoint, _written):
    """Every tensor group needs its bits: a format (its effective bits) or a figure."""
    for group in sizing.TENSOR_GROUPS[:-1]:
        if checkpoint.get(f"{group}_format") is None and checkpoint.get(f"{group}_bits") is None:
            yield f"{group}_format", f"give {group}_format or {group}_bits (the bits of {group.replace('_', ' ')} weights)"


# Precision families of formats whose every element is a float with its own exponent.
FLOAT_ELEMENT_FAMILIES = ("fp8", "fp6", "fp4")


def number_format_problems(number_format, _written):
    """A block floating point format (elements share one exponent and have none of their own, as
    Tenstorrent's BFP8/BFP4) is a precision of its own, never counted as FP8, FP6 or FP4."""
    if (number_format.get("kind") == "block-scaled-float" and number_format.get("exponent_bits") == 0
            and number_format.get("family") in FLOAT_ELEMENT_FAMILIES):
        yield "family", (f"{number_format['family']!r}: the elements have no exponent of their own (a shared-exponent "
                         "block format), so it is a family of its own (bfp), not a float family")


# Tiers only the maker's own documents have.
VENDOR_TIERS = ("vendor-primary", "vendor-secondary")


def source_problems(source, _written):
    """A page read through a mirror keeps the maker's tier only as a verbatim copy of a named vendor
    document: its title names the document; any other copy is third-party. A vendor figure read through
    a quote (vendor-quoted) names the vendor document, the quoting page and a second witness."""
    if source.get("read_via") and source["tier"] in VENDOR_TIERS and not source.get("title"):
        yield "tier", (f"{source['tier']} read through a mirror (read_via) needs the title of the vendor document it "
                       "copies verbatim; an unnamed copy is third-party")
    if source["tier"] == QUOTED_TIER:
        for name, what in (("title", "the title of the vendor document quoted"),
                           ("read_via", "the address of the page that quotes it"),
                           ("witness", "another source that states the same figures")):
            if not source.get(name):
                yield name, f"a vendor-quoted source needs {what} ({name})"
    if source.get("witness") is not None and source["witness"] == source["slug"]:
        yield "witness", "a source cannot be its own witness: name another source that states the same figures"
    elif source.get("witness") and source["tier"] != QUOTED_TIER:
        yield "witness", f"only a vendor-quoted source names a witness (this one is {source['tier']})"


QUOTED_TIER = "vendor-quoted"
# A note saying that the page cited was not read, or that the value was copied from Epoch's dataset while
# another page is credited: such a value cites what was read (Epoch's dataset, tier reference-dataset).
NOT_READ = re.compile(r"\b(?:page|article|report|post|press release|source|listing|announcement|copy)s? "
                      r"(?:was|were|is|are|has|have) (?:never|not)(?: been)? (?:read|opened|seen)\b"
                      r"|\bnot read here\b|\bread (?:only )?(?:through|via|from) Epoch", re.IGNORECASE)
# Tables whose row holds one value, so the row's note speaks of that value.
ONE_VALUE_TABLES = ("sources", "prices", "throughput", "format_support", "cloud_offers", "achieved_rates")
# A dense 16-bit figure printed for FP16 accumulate, and one printed for FP32 accumulate.
FP16_ACCUMULATE = re.compile(r"\bFP16[- ]accumulat", re.IGNORECASE)
FP32_ACCUMULATE = re.compile(r"\bFP32[- ]accumulat", re.IGNORECASE)
SIXTEEN_BITS = ("fp16", "bf16")


def note_problems(table, row, cited):
    """What the notes of a row and of its cited values say against its values: a page not read, and an
    FP16-accumulate figure stored as the comparable (FP32-accumulate) one."""
    notes = [(name, meta["note"]) for name, meta in cited.items() if isinstance(meta.get("note"), str)]
    if table in ONE_VALUE_TABLES and row.get("note"):
        notes.append(("note", row["note"]))
    for name, text in notes:
        if found := NOT_READ.search(text):
            yield name, (f"the note says {found.group(0)!r}: a value cites the page that was read (a value copied "
                         "from Epoch AI's dataset cites the dataset, tier reference-dataset), never one that was not")
    if table == "throughput" and row["precision"] in SIXTEEN_BITS and row["accumulate"] == "fp32":
        for name, text in notes:
            if FP16_ACCUMULATE.search(text) and not FP32_ACCUMULATE.search(text):
                yield name, ("its note gives an FP16-accumulate figure: store it with accumulate: fp16 (dense "
                             "BF16/FP16 means FP32 accumulate, the comparable figure)")
                break




def throughput_problems(row, written):
    """Integer throughput in OPS, floating-point throughput in FLOPS: the two never share a column's meaning."""
    integer = row["precision"] in INTEGER_PRECISIONS
    unit = parsed(written["tflops"], "TFLOPS")[1]
    if (unit in OPS) != integer:
        expected = "OPS (TOPS...)" if integer else "FLOPS (TFLOPS...)"
        yield "tflops", (f"{written['tflops']!r}: {row['precision']} is {'an integer' if integer else 'a floating-point'} "
                         f"precision, whose throughput is written in {expected}")


def price_problems(price, _written):
    """A price dated by its product's launch names the source of that date; a price dated by its own source
    names none (the date's source is then the price's). A price per device is at least MIN_DEVICE_PRICE."""
    if price["amount"] / (price.get("devices") or 1) < MIN_DEVICE_PRICE:
        yield "amount", (f"{price['amount']:g} {price['currency']} for {price.get('devices') or 1} device(s) is below "
                         f"{MIN_DEVICE_PRICE} per device, far under any price in the data: check the unit and the digits")
    if price["date_basis"] == "launch" and not price.get("date_source"):
        yield "date_source", ("date_basis launch dates the price by the product's launch or announcement: name the "
                              "source of that date")
    if price["date_basis"] != "launch" and price.get("date_source"):
        yield "date_source", (f"date_basis {price['date_basis']}: the price's own source gives the date, so "
                              "date_source is only for date_basis launch")


def offer_problems(offer, _written):
    """Each price of an offer is at least MIN_PRICE_PER_GPU_HOUR per GPU."""
    for name in ("price_per_hour", "spot_price_per_hour"):
        if offer.get(name) is not None and offer[name] / offer["gpu_count"] < MIN_PRICE_PER_GPU_HOUR:
            yield name, (f"{offer[name]:g} {offer['currency']} for {offer['gpu_count']} GPU(s) is below "
                         f"{MIN_PRICE_PER_GPU_HOUR} per GPU-hour, far under any offer in the data: check the unit "
                         "and the digits")


def accelerator_problems(row, _written):
    """The kinds of a row's memory and power describe values it has, and agree with them; memory of a
    device that is not an on-chip-memory class is at least MIN_MEMORY_GB."""
    if (row.get("memory_gb") is not None and row["memory_gb"] < MIN_MEMORY_GB
            and row.get("device_class") not in ON_CHIP_MEMORY_CLASSES):
        yield "memory_gb", (f"{row['memory_gb']:g} GB is below {MIN_MEMORY_GB} GB, the least a {row['device_class']} "
                            "holds (only chips whose memory is on the die, ai-asic and npu, hold less): check the unit")
    kinds = MEMORY_KIND_OF_TYPE.get(row.get("memory_type"))
    if row.get("memory_kind") and kinds and row["memory_kind"] not in kinds:
        yield "memory_kind", (f"{row['memory_kind']!r} disagrees with memory_type {row['memory_type']}: "
                              f"expected {' or '.join(kinds)}")
    if row.get("power_kind") and row.get("tdp_w") is None:
        yield "power_kind", "says what tdp_w is, and the row gives no tdp_w"


# Checks of a row's values together: (clean values, values as written) in, (field, message) out.
ROW_CHECKS = {"models": model_problems, "checkpoints": checkpoint_problems, "number_formats": number_format_problems,
              "sources": source_problems, "throughput": throughput_problems, "prices": price_problems,
              "accelerators": accelerator_problems, "cloud_offers": offer_problems}


def citations_of(row, written, cited):
    """One citation per non-null number (and per format-support claim)."""
    cited_names = [name for name in CITED_FIELDS[row.table] if row.values.get(name) is not None]
    if row.table == "format_support":
        cited_names = ["format"]
    citations, problems = [], []
    for name in cited_names:
        meta = cited.get(name, {})
        source = meta.get("source") or row.values.get("source")
        if not source:
            what = "date" if TABLES_BY_NAME[row.table].field(name).kind == "date" else "number"
            problems.append(Problem(row.path, row.line_of(name), name,
                                    f"{what} without a citation: give the record a `source:` or write {{value: ..., source: ...}}"))
            continue
        kind = meta.get("kind")
        if kind is not None and kind not in CITATION_KINDS:
            problems.append(Problem(row.path, row.line_of(name), name,
                                    f"citation kind {kind!r} is not one of {', '.join(CITATION_KINDS)}"))
        scope = meta.get("scope")
        if scope is not None and scope not in SCOPES:
            problems.append(Problem(row.path, row.line_of(name), name,
                                    f"citation scope {scope!r} is not one of {', '.join(SCOPES)}"))
        for key in ("source", "note"):
            if key in meta and not isinstance(meta[key], str):
                problems.append(Problem(row.path, row.line_of(name), name, f"citation {key} must be text"))
        basis = meta.get("basis", [])
        if not isinstance(basis, list) or not all(isinstance(slug, str) for slug in basis):
            problems.append(Problem(row.path, row.line_of(name), name, "citation basis must be a list of source slugs"))
            basis = []
        elif basis and kind != "derived":
            problems.append(Problem(row.path, row.line_of(name), name,
                                    "a citation basis names what a derived value rests on: give it `kind: derived`"))
        elif kind == "derived" and not basis and not meta.get("note"):
            problems.append(Problem(row.path, row.line_of(name), name,
                                    "a derived value says what it rests on: give its citation a `basis` (the sources "
                                    "it is computed from) or a `note` (how it was computed)"))
        citations.append(Citation(row.table, row.slug, name, row.values[name], written.get(name),
                                  str(source), kind, scope, meta.get("note"), row.path, row.line_of(name),
                                  "source" in meta, tuple(basis)))
    return citations, problems


def partial_row(record):
    """The slug and references of a record that failed validation, its cited sources included.

    Checking them too means one run reports a dangling reference or a
    duplicate slug even in a record that has other faults, in every table
    (a throughput row's slug is derived, when its parts can be read).
    """
    table = TABLES_BY_NAME[record.table]
    values = {}
    for field in table.fields:
        value = record.data.get(field.name)
        if field.kind in ("slug", "ref") and isinstance(value, str):
            values[field.name] = value
        elif field.kind == "refs" and isinstance(value, list):
            values[field.name] = [v for v in value if isinstance(v, str)]
    if "slug" not in values and table.slug_from and all(isinstance(record.data.get(n), str) for n in table.slug_from
                                                        if table.field(n).default is None):
        values["slug"] = derived_slug(table, record.data)
    cited = tuple((name, value["source"]) for name, value in record.data.items()
                  if isinstance(value, dict) and isinstance(value.get("source"), str))
    if "slug" not in values and not cited and not any(values.get(name) for name, _, _ in REF_FIELDS[record.table]):
        return None
    return Row(record.table, values, record.path, record.line, record.data.lines, cited)


def validate_records(records):
    """Validate each record on its own; return (rows, partial rows, citations, problems).

    Records of different files do not depend on each other here, so files can
    be validated in parallel and their results cached; `CrossCheck` follows.
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


REF_FIELDS = {t.name: [(f.name, f.ref, f.kind == "refs") for f in t.fields if f.kind in ("ref", "refs")] for t in TABLES}


def key_of(row):
    """The values of the fields a row's slug is derived from (one value per measure), or None."""
    parts = TABLES_BY_NAME[row.table].slug_from
    return tuple(row.values[name] for name in parts) if parts else None


def file_keys(rows, partial, citations):
    """What the checks across files need of one file's results: slugs, references and facts, located.

    Returns (slugs, refs, facts): slugs as (table, slug, path, line, valid, key), refs as
    (referenced table, target, path, line, field, named by a citation), facts as
    consistency.Fact for the rules across rows.
    """
    slugs = [(row.table, row.slug, row.path, row.line_of("slug"), valid, key_of(row) if valid else None)
             for valid, group in ((True, rows), (False, partial)) for row in group if row.slug is not None]
    refs = [("sources", source, row.path, row.line_of(name), name, True)
            for row in partial for name, source in row.cited_sources]
    for row in rows + partial:
        for name, table, many in REF_FIELDS[row.table]:
            value = row.values.get(name)
            if value is None:
                continue
            line = row.line_of(name)
            if many:
                refs += [(table, target, row.path, line, name, False) for target in value if target is not None]
            else:
                refs.append((table, value, row.path, line, name, False))
    refs += [("sources", c.source, c.path, c.line, c.field, True) for c in citations if c.explicit]
    refs += [("sources", slug, c.path, c.line, c.field, True) for c in citations for slug in c.basis]
    # every source named here, by a valid record or a broken one: a source is cited if any record names it
    named = [consistency.Fact("names_source", (target,), None, path, line, field)
             for table, target, path, line, field, _ in refs if table == "sources"]
    return slugs, refs, consistency.file_facts(rows, citations) + named


class CrossCheck:
    """The checks across files: a slug names one row of its table, every
    reference (ref, refs item, citation source) names an existing row, and the
    consistency rules hold (etl/consistency.py).

    Fed one file at a time (`add` the output of `file_keys`), it keeps only the
    slugs with where each was first defined, and the references not resolved
    yet, so the rows themselves need not stay in memory. A valid row counts as
    the first definition before a record that failed validation, wherever it is.
    """

    def __init__(self):
        self.first = {t.name: {} for t in TABLES}    # slug -> (path, line, valid)
        self.again = []                               # (table, slug, path, line) of later definitions
        # The rows of a table whose slug derives from key fields, by those fields: an explicit slug (kept as
        # the permalink of a row whose key changed) must not make a second row of one key.
        self.keys = {t.name: {} for t in TABLES if t.slug_from}  # key -> (slug, path, line)
        self.same_key = []                            # (table, key, path, line) of later rows of a key
        self.pending = {t.name: {} for t in TABLES}  # unknown target -> [(path, line, field, citation)]
        self.facts = defaultdict(list)                # kind -> [consistency.Fact]

    def add(self, slugs, refs, facts=()):
        for table, slug, path, line, valid, key in slugs:
            if key is not None:
                first_of_key = self.keys[table].setdefault(key, (slug, path, line))
                if first_of_key[0] != slug:  # the same slug twice is reported as a duplicate slug below
                    self.same_key.append((table, key, path, line))
            known = self.first[table]
            first = known.get(slug)
            if first is None:
                known[slug] = (path, line, valid)
                self.pending[table].pop(slug, None)
            elif valid and not first[2]:
                self.again.append((table, slug, *first[:2]))
                known[slug] = (path, line, valid)
            else:
                self.again.append((table, slug, path, line))
        for ref in refs:  # kept without their target: one string per target, not per reference
            if ref[1] not in self.first[ref[0]]:
                self.pending[ref[0]].setdefault(ref[1], []).append(ref[2:])
        for fact in facts:
            self.facts[fact.kind].append(fact)

    def problems(self):
        """Every duplicate slug and every reference still unknown once all files are in."""
        problems = []
        for table, slug, path, line in self.again:
            first_path, first_line, _ = self.first[table][slug]
            parts = TABLES_BY_NAME[table].slug_from
            message = (f"one value per ({', '.join(parts)}): {slug!r} is already given at {first_path}:{first_line}"
                       if parts else f"duplicate {table} slug {slug!r} (first defined at {first_path}:{first_line})")
            problems.append(Problem(path, line, "slug", message))
        for table, key, path, line in self.same_key:
            first_slug, first_path, first_line = self.keys[table][key]
            parts = TABLES_BY_NAME[table].slug_from
            problems.append(Problem(path, line, "slug", f"one value per ({', '.join(parts)}): ({', '.join(key)}) is "
                                                        f"already given at {first_path}:{first_line} ({first_slug!r})"))
        for table, targets in self.pending.items():
            for target, places in targets.items():
                for path, line, field, citation in places:
                    message = (f"citation source {target!r} is not a known sources slug" if citation
                               else f"{target!r} is not a known {table} slug")
                    problems.append(Problem(path, line, field, message))
        return problems + consistency.check(self.facts)
