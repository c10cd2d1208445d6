"""Read stage: YAML files under data/ into records that remember their lines.

PyYAML's safe loader (the C one when available) with changes that make
bad input visible instead of silently wrong: duplicate keys are reported (PyYAML
keeps the last one), aliases and merge keys are refused (they are how "billion
laughs" bombs work, and curated data never needs them), so are tags other than
plain scalars (!!set, !!binary, !!python/...), and dates stay strings (so
`2024-03` and `2024-03-01` are read the same way).
"""

import operator
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from .problems import Problem
from .schema import AUTHORED

MAX_FILE_BYTES = 2_000_000  # the largest real file is a few KB; refuse runaway input


if yaml.__with_libyaml__:
    class BaseLoader(Composer, yaml.cyaml.CParser, SafeConstructor, Resolver):
        """libyaml's parser with PyYAML's Python composer. libyaml's own composer
        recurses in C, so a file of 50,000 nested `[` crashes the process with a
        segfault; the Python composer raises RecursionError, which is reported."""

        def __init__(self, stream):
            yaml.cyaml.CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
else:
    BaseLoader = yaml.SafeLoader


STR_TAG, MAP_TAG, SEQ_TAG = (f"tag:yaml.org,2002:{name}" for name in ("str", "map", "seq"))


class LineDict(dict):
    """A mapping that knows the line of each of its keys (1-based)."""

    line = 1
    lines: dict


PLAIN_SCALAR_TAGS = {f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float")}
MERGE_TAG = "tag:yaml.org,2002:merge"
KEY_ON_LINE = re.compile(r"^[\s-]*([A-Za-z_][\w-]*)\s*:")


# PyYAML's implicit resolvers by first character, without timestamps: dates stay strings.
IMPLICIT_RESOLVERS = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


class Refused(yaml.YAMLError):
    """Valid YAML that data files may not use."""

    def __init__(self, mark, message):
        self.problem_mark, self.message = mark, message


class LineConstructor:
    """Builds plain str/map/seq nodes directly, remembering lines.

    PyYAML's generic constructor (generators, recursion bookkeeping) costs more
    than libyaml's parser itself; walking the composed nodes here makes reading
    cheaper than a plain `yaml.load`. Other tags go through the safe constructor.
    """

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates = []  # (line, key) of keys seen twice in one mapping
        # Nodes already built: meeting one again means an alias. A text without
        # `&` and `*` holds no anchor and no alias, and skips the bookkeeping.
        self.seen = set() if "&" in stream or "*" in stream else None

    # The composers call these two around every node, for path resolvers
    # (yaml.add_path_resolver), of which none is registered. Builtins that take
    # the same arguments and do nothing spare two Python calls per node, about
    # 6% of reading a file (docs/BENCHMARKS.md).
    descend_resolver = operator.is_  # (parent node, index)
    ascend_resolver = tuple          # ()

    def resolve(self, kind, value, implicit):
        """Resolver.resolve, minus its support for path resolvers (none is registered)."""
        if kind is not ScalarNode:
            return MAP_TAG if kind is MappingNode else SEQ_TAG
        if implicit[0]:
            resolvers = IMPLICIT_RESOLVERS.get(value[:1])  # most plain scalars start with a letter that has none
            if resolvers:
                for tag, regexp in resolvers:
                    if regexp.match(value):
                        return tag
        return STR_TAG

    def get_single_data(self):
        node = self.get_single_node()
        return None if node is None else self.construct_object(node)

    def construct_object(self, node, deep=False):
        if self.seen is not None:
            if node in self.seen:
                raise Refused(node.start_mark, "YAML anchors and aliases (&name, *name) are not allowed in data files: "
                                               "this value is reused by an alias; write it out")
            self.seen.add(node)
        tag, kind = node.tag, node.__class__
        if kind is ScalarNode and tag == STR_TAG:
            return node.value
        if kind is MappingNode and tag == MAP_TAG:
            return self.construct_mapping(node)
        if kind is SequenceNode and tag == SEQ_TAG:
            plain = self.seen is None  # strings taken straight from their node: one call fewer each
            return [child.value if plain and child.__class__ is ScalarNode and child.tag == STR_TAG
                    else self.construct_object(child) for child in node.value]
        if kind is ScalarNode and tag in PLAIN_SCALAR_TAGS:
            return self.yaml_constructors[tag](self, node)  # int, float, bool, null
        if tag == MERGE_TAG:
            # Merging copies the merged mapping once per use before any alias is
            # seen: nested `<<: [*a, *a, ...]` grow exponentially (a 1 KB file asks
            # for gigabytes). Without aliases a merge key has no use.
            raise Refused(node.start_mark, "YAML merge keys (<<) are not allowed in data files; write the keys out")
        # !!binary, !!set (unordered: the build would not be repeatable), !!python/...
        raise Refused(node.start_mark, f"YAML tag {tag!r} is not allowed in data files")

    def construct_mapping(self, node, deep=False):
        mapping = LineDict()
        mapping.line = node.start_mark.line + 1
        mapping.lines = lines = {}
        plain = self.seen is None  # strings taken straight from their node: one call fewer each
        for key_node, value_node in node.value:
            if plain and key_node.__class__ is ScalarNode and key_node.tag == STR_TAG:
                key = key_node.value
            else:
                key = self.construct_object(key_node)
                if key.__class__ is not str:
                    key = str(key)
            line = key_node.start_mark.line + 1
            if key in mapping:
                self.duplicates.append((line, key))
                continue
            mapping[key] = (value_node.value if plain and value_node.__class__ is ScalarNode and value_node.tag == STR_TAG
                            else self.construct_object(value_node))
            lines[key] = line
        return mapping


class Loader(LineConstructor, BaseLoader):
    """The loader that is safe for any input."""


# libyaml's C composer is a quarter faster than the Python one; it is used only
# for files that cannot nest deep enough to crash it.
FastLoader = type("FastLoader", (LineConstructor, yaml.CSafeLoader), {}) if yaml.__with_libyaml__ else Loader
MAX_C_NESTING = 10_000  # the C composer crashed at 50,000 nested `[`, not at 20,000


def loader_for(text):
    """FastLoader when a bound on the nesting depth is low enough, else Loader.

    Nesting needs an opening bracket or brace, or at most two more columns per
    level in block style (`- - - x`, or a sequence under a key at the key's column).
    """
    if 3 * len(text) + 2 < MAX_C_NESTING:  # brackets and line length are at most the whole text
        return FastLoader
    longest = max(map(len, text.splitlines()), default=0)
    depth_bound = text.count("[") + text.count("{") + 2 * longest + 2
    return FastLoader if depth_bound < MAX_C_NESTING else Loader


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


YAML_SUFFIXES = (".yml", ".yaml")


def yaml_paths(folder):
    """Every YAML file under `folder` (as str), in the order of their path parts.

    Each folder's entries are visited in name order, which gives that order
    without comparing whole paths, and costs a stat per folder, not per file.
    """
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:  # missing, not a folder, unreadable: nothing to read there, as with Path.rglob
        return []
    found = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            found += yaml_paths(entry.path)
        elif entry.name.endswith(YAML_SUFFIXES) and entry.name not in YAML_SUFFIXES and entry.is_file():
            found.append(entry.path)  # a name that is only the suffix has no suffix for Path either
    return found


def data_files(data_dir):
    """Every YAML file under data_dir, in a stable order."""
    return [Path(path) for path in yaml_paths(data_dir)]


def key_on_line(text, line):
    """The key written on a line, to name the field of a file-level problem."""
    lines = text.splitlines()
    match = KEY_ON_LINE.match(lines[line - 1]) if 0 < line <= len(lines) else None
    return match.group(1) if match else "-"


def yaml_error(error, text):
    """(line, reason) of a parse error. A quote or bracket left open is only
    noticed at the end of the file: point at where it was opened instead."""
    problem, context = getattr(error, "problem_mark", None), getattr(error, "context_mark", None)
    reason = getattr(error, "problem", None) or str(error)
    if context is not None and (problem is None or problem.index >= len(text.rstrip())):
        line, reason = context.line + 1, f"{reason} {error.context}"
    else:
        line = problem.line + 1 if problem else 1
    return min(line, max(1, len(text.splitlines()))), reason  # the end of a file is on its last line


def too_deep(path):
    return Problem(path, 1, "-", "invalid YAML: nested too deeply")


def parse_text(raw, path):
    """Parse one file's bytes; return (document, problems)."""
    if len(raw) > MAX_FILE_BYTES:
        return None, [Problem(path, 1, "-", f"file is {len(raw):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit for one data file")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        field = key_on_line(raw.decode("utf-8", "replace"), line)
        return None, [Problem(path, line, field, f"not UTF-8 (byte 0x{raw[error.start]:02x}); save the file as UTF-8")]
    loader = loader_for(text)(text)
    try:
        document = loader.get_single_data()
    except Refused as error:
        line = error.problem_mark.line + 1
        return None, [Problem(path, line, key_on_line(text, line), error.message)]
    except yaml.YAMLError as error:
        line, reason = yaml_error(error, text)
        if "maximum nesting depth" in reason:  # PyYAML 6.0.4+ stops deep nesting itself
            return None, [too_deep(path)]
        if "\t" in "".join(text.splitlines()[line - 1 : line]):
            reason += " (tabs cannot indent YAML; use spaces)"
        return None, [Problem(path, line, key_on_line(text, line), f"invalid YAML: {reason}")]
    except RecursionError:
        return None, [too_deep(path)]
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


def read_bytes(raw, display_path):
    """The records of one file's content; return (records, problems)."""
    document, problems = parse_text(raw, display_path)
    if problems and document is None:
        return [], problems
    records, more = records_in(document, display_path)
    return records, problems + more
