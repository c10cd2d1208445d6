"""Values and lines as the data's authors see them: YAML 1.2 core scalars, and
lines counted as an editor counts them."""

import pytest

from etl.read import parse_text, read_bytes


def value_of(text):
    document, problems = parse_text(f"x: {text}\n".encode(), "f.yml")
    assert not problems, problems
    return document["x"]


@pytest.mark.parametrize("written, value", [
    ("010", 10),            # YAML 1.1: 8 (octal)
    ("0o10", 8), ("0x1F", 31), ("-7", -7), ("+7", 7),
    ("1:30", "1:30"),       # YAML 1.1: 90 (base 60)
    ("4_29.0", "4_29.0"),   # YAML 1.1: 429.0
    ("1_000", "1_000"),
    ("NO", "NO"), ("yes", "yes"), ("On", "On"), ("y", "y"),  # YAML 1.1: booleans
    ("true", True), ("False", False), ("TRUE", True),
    ("null", None), ("~", None), ("", None),
    ("1.5", 1.5), ("1.500", 1.5), ("1.5e3", 1500.0), ("1e3", 1000.0), ("+.INF", float("inf")), (".5", 0.5),
    ("-.inf", float("-inf")), ("0b101", "0b101"),
    ("2024-03-01", "2024-03-01"),  # dates stay strings
])
def test_plain_scalars_follow_yaml_1_2_core_rules(written, value):
    assert value_of(written) == value and type(value_of(written)) is type(value)


def test_nan_is_read_as_nan():
    assert value_of(".nan") != value_of(".nan")


@pytest.mark.parametrize("written", ["9223372036854775808", "-9223372036854775809", "9" * 5000])
def test_integers_beyond_sqlite_are_located_problems(written):
    _, problems = parse_text(f"a: 1\nx: {written}\n".encode(), "f.yml")
    assert [(p.line, p.field) for p in problems] == [(2, "x")]
    assert "outside the integers SQLite stores" in problems[0].message


def test_sqlite_extremes_are_read():
    assert value_of("9223372036854775807") == 2**63 - 1 and value_of("-9223372036854775808") == -2**63


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"])
def test_lines_end_as_editors_end_them(line_end):
    text = line_end.join(["accelerators:", "  - slug: a", '    name: "x\u2028y\x85z\u2029"', "    vendor: v", ""])
    records, problems = read_bytes(text.encode(), "f.yml")
    assert not problems
    assert records[0].line_of("vendor") == 4


def test_a_control_character_is_reported_at_its_line_and_column_on_one_line():
    _, problems = parse_text(b"a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: x\x07y\n", "f.yml")
    assert [(p.line, p.field) for p in problems] == [(6, "f")]
    assert problems[0].message.startswith("column 5: character U+0007") and "\n" not in str(problems[0])


def test_an_error_after_a_line_separator_is_on_the_editors_line():
    _, problems = parse_text('a: 1\nb: "x\u2028y"\nc: [\n'.encode(), "f.yml")
    assert [(p.line, p.field) for p in problems] == [(3, "c")]


def test_a_byte_that_is_not_utf8_is_on_its_line_with_carriage_returns():
    _, problems = parse_text(b"a: 1\rb: 2\rc: \xff\r", "f.yml")
    assert [(p.line, p.field) for p in problems] == [(3, "c")]


SCALARS = ["!!float abc", "!!int eight", "!!bool ''", "!!null", "!!null 700 W", "!!bool yes", "!!int 0x", "!!float .",
           "!!str 12", "!!float", "!!int", "!!bool", "1e300", "-1e300", "1e999", "9223372036854775807",
           "9223372036854775808", "1e308", "1e-320", ".nan", "-.inf", "0x7fffffffffffffff", "0o777777777777777777777",
           "''", "'80 GB GB'", "[1, 2]", "{a: 1}", "true", "~", "0", "-0.0", "1_000", "０", "٣"]
FIELDS = ["tdp_w", "memory_gb", "name", "status", "announced", "system", "memory_type"]


@pytest.mark.parametrize("scalar", SCALARS)
@pytest.mark.parametrize("field", FIELDS)
def test_no_scalar_in_any_field_raises_each_is_a_value_or_a_located_problem(scalar, field):
    from etl.validate import validate_records
    text = (f"accelerators:\n  - slug: acme-x1\n    vendor: acme\n    name: X1\n    device_class: npu\n"
            f"    scope: device\n    source: acme\n    {field}: {scalar}\n").replace(f"    name: X1\n    {field}:", f"    {field}:")
    records, problems = read_bytes(text.encode(), "f.yml")
    rows, _, _, more = validate_records(records)
    assert all(p.path == "f.yml" and p.line >= 1 for p in problems + more)


@pytest.mark.parametrize("scalar, tag", [("!!float abc", "float"), ("!!int eight", "int"), ("!!bool ''", "bool"),
                                         ("!!bool yes", "bool"), ("!!null 700 W", "null"), ('!!float "1.5"', "float")])
def test_an_explicit_tag_is_refused_at_its_line(scalar, tag):
    document, problems = parse_text(f"a: 1\nx: {scalar}\n".encode(), "f.yml")
    assert document is None
    assert [str(p) for p in problems] == [f"f.yml:2: x: YAML tag !!{tag} is not allowed in data files (only !!str is): "
                                          "write the value without it, as its type reads it"]


def test_str_is_the_one_tag_read():
    assert value_of("!!str 2024") == "2024"
