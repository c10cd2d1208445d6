"""Read stage: YAML files under data/ into records that remember their lines.

PyYAML's safe loader (the C one when available) with three changes that make
bad input visible instead of silently wrong: duplicate keys are reported (PyYAML
keeps the last one), aliases are refused (they are how "billion laughs" bombs
work, and curated data never needs them), and dates stay strings (so
`2024-03` and `2024-03-01` are read the same way).
"""

from dataclasses import dataclass
from pathlib import Path

import yaml

from .problems import Problem
from .schema import AUTHORED

MAX_FILE_BYTES = 2_000_000  # the largest real file is a few KB; refuse runaway input

BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LineDict(dict):
    """A mapping that knows the line of each of its keys (1-based)."""

    line = 1
    lines: dict


class AliasRefused(yaml.YAMLError):
    def __init__(self, mark):
        self.problem_mark = mark


class Loader(BaseLoader):
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in BaseLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates = []  # (line, key) of keys seen twice in one mapping

    def construct_object(self, node, deep=False):
        if node in self.constructed_objects:
            raise AliasRefused(node.start_mark)
        return super().construct_object(node, deep=deep)

    def construct_mapping(self, node, deep=False):
        self.flatten_mapping(node)
        mapping = LineDict()
        mapping.line = node.start_mark.line + 1
        mapping.lines = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                key = str(key)
            line = key_node.start_mark.line + 1
            if key in mapping:
                self.duplicates.append((line, key))
                continue
            mapping[key] = self.construct_object(value_node, deep=deep)
            mapping.lines[key] = line
        return mapping


Loader.add_constructor("tag:yaml.org,2002:map", Loader.construct_mapping)


@dataclass
class Record:
    """One record of one table, as written in one file."""

    table: str
    data: LineDict
    path: str

    @property
    def line(self):
        return self.data.line

    def line_of(self, field):
        return self.data.lines.get(field, self.data.line)


def data_files(data_dir):
    """Every YAML file under data_dir, in a stable order."""
    data_dir = Path(data_dir)
    return sorted(p for p in data_dir.rglob("*") if p.suffix in (".yml", ".yaml") and p.is_file())


def parse_text(raw, path):
    """Parse one file's bytes; return (document, problems)."""
    if len(raw) > MAX_FILE_BYTES:
        return None, [Problem(path, 1, "-", f"file is {len(raw):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit for one data file")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        return None, [Problem(path, line, "-", f"not UTF-8 (byte 0x{raw[error.start]:02x}); save the file as UTF-8")]
    loader = Loader(text)
    try:
        document = loader.get_single_data()
    except AliasRefused as error:
        return None, [Problem(path, error.problem_mark.line + 1, "-", "YAML anchors and aliases (&name, *name) are not allowed in data files: this value is reused by an alias; write it out")]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        line = mark.line + 1 if mark else 1
        reason = getattr(error, "problem", None) or str(error)
        if "\t" in "".join(text.splitlines()[line - 1 : line]):
            reason += " (tabs cannot indent YAML; use spaces)"
        return None, [Problem(path, line, "-", f"invalid YAML: {reason}")]
    except RecursionError:
        return None, [Problem(path, 1, "-", "invalid YAML: nested too deeply")]
    finally:
        loader.dispose()
    problems = [Problem(path, line, key, "duplicate key in the same mapping (YAML would silently keep the last one)")
                for line, key in loader.duplicates]
    return document, problems


def records_in(document, path):
    """Split a parsed document into records; return (records, problems)."""
    if document is None:
        return [], [Problem(path, 1, "-", "empty file: expected a mapping of table names to records")]
    if not isinstance(document, LineDict):
        return [], [Problem(path, 1, "-", "expected a mapping of table names to records at the top level")]
    records, problems = [], []
    for table, value in document.items():
        line = document.lines[table]
        if table not in AUTHORED:
            problems.append(Problem(path, line, table, f"unknown table; expected one of: {', '.join(sorted(AUTHORED))}"))
            continue
        items = [value] if isinstance(value, LineDict) else value
        if not isinstance(items, list):
            problems.append(Problem(path, line, table, "expected a list of records (or one record)"))
            continue
        for item in items:
            if isinstance(item, LineDict):
                records.append(Record(table, item, path))
            else:
                problems.append(Problem(path, line, table, f"expected a record (a mapping), got {type(item).__name__}"))
    return records, problems


def read_file(path, display_path=None):
    """Read one data file into records; return (records, problems)."""
    display_path = display_path or str(path)
    document, problems = parse_text(Path(path).read_bytes(), display_path)
    if problems and document is None:
        return [], problems
    records, more = records_in(document, display_path)
    return records, problems + more
