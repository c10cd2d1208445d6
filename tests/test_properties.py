"""Property-based tests of the reader and validator: whatever the files hold,
`check` returns (it never raises) and every problem it reports is located.

Inputs are arbitrary bytes and text, YAML documents built from the schema's own
table and field names (so they reach validation), and mutations of the real
data files (drop a key, change a type, put random text in a value, duplicate a
record, cut or repeat a line).
"""

import copy
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from etl.build import build_database, check
from etl.read import data_files
from etl.schema import TABLES

from conftest import DATA

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
    """Lines as YAML may count them: splitlines() breaks at \\n, \\r, U+0085, U+2028..."""
    return max(1, len(raw.decode("utf-8", "replace").splitlines()))


def assert_located(problems, data_dir):
    """Each problem names an existing file, a field, and a line inside that file."""
    for problem in problems:
        path = Path(problem.path)
        assert path.exists() and isinstance(problem.field, str), problem
        assert problem.line >= 1, problem
        if path.is_file():
            assert problem.line <= line_count(path.read_bytes()), problem


def check_then_build(data_dir):
    """check() must return; when it finds nothing, the build must succeed."""
    problems = check(data_dir)[2]
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


REAL_FILES = [p.relative_to(DATA) for p in data_files(DATA)]


@pytest.fixture(scope="module")
def real_copy(tmp_path_factory):
    """The real data, copied once; each example changes one file and puts it back."""
    data = tmp_path_factory.mktemp("real") / "data"
    shutil.copytree(DATA, data)
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
@given(st.sampled_from(REAL_FILES), st.booleans(), st.data())
def test_mutated_real_files_give_located_problems(real_copy, relative, structural, data):
    path = real_copy / relative
    original = path.read_bytes()
    text = original.decode("utf-8")
    if structural:
        changed = yaml.safe_dump(mutate_document(yaml.safe_load(text), data.draw), allow_unicode=True, sort_keys=False)
    else:
        changed = mutate_lines(text, data.draw)
    raw = changed.encode("utf-8", "surrogatepass")
    path.write_bytes(raw)
    try:
        check_then_build(real_copy)
    finally:
        path.write_bytes(original)
