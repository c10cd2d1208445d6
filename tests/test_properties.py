"""Property-based tests of the reader and validator: whatever the files hold,
`validate_data` returns (it never raises) and every problem it reports is located.

Inputs are arbitrary bytes and text, YAML documents built from the schema's own
table and field names (so they reach validation), and mutations of the fixture's
data files (drop a key, change a type, put random text in a value, duplicate a
record, cut or repeat a line): the fixture holds every table in a few records, so
each example builds in a fraction of the real data's time. The real files'
records still feed the validator comparison below.
"""

import copy
import re
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Literal

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StringConstraints, ValidationError, create_model

from domain.schema import SLUG_PATTERN, TABLES, TABLES_BY_NAME
from domain.schema import Field as SchemaField
from etl import validate
from etl.build import build_database, validate_data
from etl.read import data_files

from conftest import DATA, FIXTURE_DATA

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = sorted({t.name for t in TABLES} | {f.name for t in TABLES for f in t.fields})

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**20), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["80 GB", "3.35 TB/s", "-1 W", "0 TFLOPS", "4.8 GB", "9**9**9 GB", "2024-13", "2026-12-01",
                     "https://example.com/x", "javascript:alert(1)", "nvidia-h100-sxm", "Bad Slug", "USD"]),
)
keys = st.one_of(st.sampled_from(NAMES), st.text(max_size=10))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=6),
                      max_leaves=25)
documents = st.dictionaries(st.sampled_from([t.name for t in TABLES]) | st.text(max_size=8),
                            st.lists(st.dictionaries(keys, values, max_size=8), max_size=3) | values, max_size=3)


def line_count(raw):
    """Lines as an editor counts them: ended by \\n, \\r\\n or \\r only."""
    text = raw.decode("utf-8", "replace")
    return max(1, len(re.findall(r"\r\n|\r|\n", text)) + (not text.endswith(("\n", "\r"))))


def assert_located(problems, data_dir):
    """Each problem names an existing file, a field, and a line inside that file."""
    for problem in problems:
        path = Path(problem.path)
        assert path.exists() and isinstance(problem.field, str), problem
        assert problem.line >= 1, problem
        if path.is_file():
            assert problem.line <= line_count(path.read_bytes()), problem


def check_then_build(data_dir):
    """validate_data() must return; when it finds nothing, the build must succeed."""
    problems = validate_data(data_dir).problems
    assert_located(problems, data_dir)
    if not problems:
        build_database(data_dir, Path(data_dir).parent / "kb.db", cache=False)


def check_one_file(raw):
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"
        data.mkdir()
        (data / "file.yml").write_bytes(raw)
        check_then_build(data)


@SETTINGS
@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_located_problems(raw):
    check_one_file(raw)


@SETTINGS
@given(st.text(max_size=300))
def test_arbitrary_text_gives_located_problems(text):
    check_one_file(text.encode("utf-8", "surrogatepass"))


@SETTINGS
@given(documents, st.sampled_from([{}, {"default_flow_style": True}]))
def test_arbitrary_documents_give_located_problems(document, style):
    check_one_file(yaml.safe_dump(document, allow_unicode=True, **style).encode("utf-8", "surrogatepass"))


FIXTURE_FILES = [p.relative_to(FIXTURE_DATA) for p in data_files(FIXTURE_DATA)]


@pytest.fixture(scope="module")
def fixture_copy(tmp_path_factory):
    """The fixture data, copied once; each example changes one file and puts it back."""
    data = tmp_path_factory.mktemp("fixture") / "data"
    shutil.copytree(FIXTURE_DATA, data)
    return data


def records_of(document):
    """(table, record) pairs of a parsed data file."""
    for table, value in document.items():
        for record in value if isinstance(value, list) else [value]:
            if isinstance(record, dict):
                yield table, value, record


def mutate_document(document, draw):
    """One structural change: drop a key, change a type, random text, duplicate a record."""
    pairs = list(records_of(document))
    if not pairs:
        return document
    table, items, record = draw(st.sampled_from(pairs))
    kind = draw(st.sampled_from(["drop", "retype", "text", "duplicate"]))
    if kind == "duplicate" and isinstance(items, list):
        items.append(copy.deepcopy(record))
    elif record:
        key = draw(st.sampled_from(sorted(record)))
        if kind == "drop":
            del record[key]
        elif kind == "retype":
            record[key] = draw(st.sampled_from([[record[key]], {"value": record[key]}, 0, -1, 1.5, True, None, ""]))
        else:
            record[key] = draw(st.text(max_size=20))
    return document


def mutate_lines(text, draw):
    """One textual change: cut, repeat or overwrite a line."""
    lines = text.splitlines(keepends=True) or [""]
    i = draw(st.integers(0, len(lines) - 1))
    kind = draw(st.sampled_from(["cut", "repeat", "overwrite"]))
    if kind == "cut":
        del lines[i]
    elif kind == "repeat":
        lines.insert(i, lines[i])
    else:
        lines[i] = draw(st.text(max_size=40)) + "\n"
    return "".join(lines)


@SETTINGS
@given(st.sampled_from(FIXTURE_FILES), st.booleans(), st.data())
def test_mutated_data_files_give_located_problems(fixture_copy, relative, structural, data):
    path = fixture_copy / relative
    original = path.read_bytes()
    text = original.decode("utf-8")
    if structural:
        changed = yaml.safe_dump(mutate_document(yaml.safe_load(text), data.draw), allow_unicode=True, sort_keys=False)
    else:
        changed = mutate_lines(text, data.draw)
    raw = changed.encode("utf-8", "surrogatepass")
    path.write_bytes(raw)
    try:
        check_then_build(fixture_copy)
    finally:
        path.write_bytes(original)


# --- the validators check as pydantic models of the same fields would ----------------------

def reference_model(table):
    """A pydantic model of `table` written with pydantic's own types, as the validators once were."""
    slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, max_length=120)]
    text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=20_000)]
    annotations = {
        "slug": slug, "ref": slug, "refs": list[slug], "list": list[text], "text": text,
        "url": Annotated[str, StringConstraints(pattern=r"^https?://\S+$", max_length=2000)],
        "bool": StrictBool, "date": Annotated[str, BeforeValidator(validate._partial_date)]}

    def annotation(field):
        if field.kind == "enum":
            return Literal[field.choices]
        if field.kind == "int":
            return Annotated[StrictInt, Field(ge=field.minimum if field.minimum is not None else 1, le=int(field.maximum))]
        if field.kind == "number":
            return Annotated[float, Field(gt=0, le=field.maximum, strict=True, allow_inf_nan=False)]
        if field.kind == "quantity":
            return Annotated[float, BeforeValidator(validate._quantity(field)), Field(gt=0, allow_inf_nan=False)]
        return annotations[field.kind]

    fields = {f.name: (annotation(f), ...) if f.required else (annotation(f) | None, None) for f in table.fields}
    if table.slug_from:
        fields["slug"] = (slug | None, None)
    return create_model(f"{table.name}_reference", __config__=ConfigDict(extra="forbid"), **fields)


def outcome(validate_values, values):
    """The clean values, or each error's type, location and message."""
    try:
        clean = validate_values(values)
    except ValidationError as error:
        return [(e["type"], e["loc"], e["msg"]) for e in error.errors()]
    return list((clean if isinstance(clean, dict) else clean.__dict__).items())


def written_values(record):
    """A record's values as the validator gets them: each cited value in place of its citation."""
    return {key: value["value"] if isinstance(value, dict) else value for key, value in record.items()}


REAL_RECORDS = [(table, written_values(record)) for path in data_files(DATA)
                for table, _, record in records_of(yaml.safe_load(path.read_text(encoding="utf-8")))
                if table in TABLES_BY_NAME]
REFERENCES = {table.name: reference_model(table) for table in TABLES}


NUMBERS = [0, -1, 1, 1.5, -0.0, 1e308, float("inf"), float("nan"), True, 2**63]
EDGES = NUMBERS + [None, "", " ", " padded ", "x" * 20_001, "https://example.com/a b", "https://example.com/",
                   "ftp://example.com", "a--b", "-a", "Upper", "nvidia-h100-sxm", "2024", "2024-02-30", 2024,
                   "2024-1-1", [], ["a", " b "], [1], {"a": 1}]
ABSENT = object()
UNKNOWN_FIELD = SchemaField("not_a_field", "text", "A field no table has.")


def edge_values(field):
    """Values at the edges of what `field` accepts, and no value at all."""
    unit = field.unit or "GB"
    choices = list(field.choices)
    return (EDGES + [f"{n} {unit}" for n in NUMBERS] + [f"{n} W" for n in NUMBERS] + [str(n) for n in NUMBERS]
            + choices + [choice.upper() for choice in choices] + [ABSENT])


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.name)
def test_every_field_checks_as_a_pydantic_model_would(table):
    base = next((values for name, values in REAL_RECORDS if name == table.name), {})
    for field in table.fields + (UNKNOWN_FIELD,):
        for value in edge_values(field):
            values = {key: item for key, item in base.items() if key != field.name}
            if value is not ABSENT:
                values[field.name] = value
            expected = outcome(REFERENCES[table.name].model_validate, values)
            assert outcome(validate.validator_for(table.name), values) == expected, (field.name, value)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(REAL_RECORDS), st.data())
def test_validators_check_as_pydantic_models_would(real, data):
    table, values = real
    values = dict(values)
    fields = TABLES_BY_NAME[table].fields
    for _ in range(data.draw(st.integers(1, 2))):
        field = data.draw(st.sampled_from(fields + (UNKNOWN_FIELD,)))
        value = data.draw(st.sampled_from(edge_values(field)) | scalars)
        if value is ABSENT:
            values.pop(field.name, None)
        else:
            values[field.name] = value
    assert outcome(validate.validator_for(table), values) == outcome(REFERENCES[table].model_validate, values)
