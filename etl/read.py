"""Read stage: YAML files under data/ into records that remember their lines.

PyYAML's safe loader (the C one when available) with changes that make
bad input visible instead of silently wrong: duplicate keys are reported (PyYAML
keeps the last one), aliases and merge keys are refused (they are how "billion
laughs" bombs work, and curated data never needs them), so are explicit tags
(!!set, !!binary, !!python/..., and `!!float abc`, `!!bool yes`, `!!null 700 W`,
which type a value against its text) but `!!str`, and dates stay strings (so
`2024-03` and `2024-03-01` are read the same way). Plain scalars are typed by
YAML 1.2's core schema, not PyYAML's YAML 1.1 rules: `010` is ten, not eight;
`1:30`, `4_29.0`, `NO` and `yes` stay strings.

The data folder is read completely or not at all: a folder that cannot be
listed, a file that cannot be read and a symbolic link anywhere under it are
problems, never silently skipped (symbolic links are refused, whatever they
point to: a link can take the build outside the data folder or read a file
twice, and the data release must name the files themselves).

Lines are counted as editors count them: a line ends at `\n`, `\r\n` or `\r`
only (YAML 1.1, so libyaml, also ends lines at U+0085, U+2028 and U+2029).
"""

import bisect
import operator
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from domain.schema import AUTHORED

from .problems import Problem

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
PLAIN_STYLES = (None, "")  # a plain (unquoted) scalar, as the Python and the C parsers mark it
MERGE_TAG = "tag:yaml.org,2002:merge"
KEY_ON_LINE = re.compile(r"^[\s-]*([A-Za-z_][\w-]*)\s*:")


INT_TAG, FLOAT_TAG, BOOL_TAG, NULL_TAG = (f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "null"))

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution), by
# first character; no timestamps, so dates stay strings. `<<` still resolves to
# a merge key, so that it is refused rather than read as a key named "<<".
CORE_SCHEMA = [
    (NULL_TAG, r"~|null|Null|NULL|", "~nN"),
    (BOOL_TAG, r"true|True|TRUE|false|False|FALSE", "tTfF"),
    (INT_TAG, r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    (FLOAT_TAG, r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
     "-+.0123456789"),
    (MERGE_TAG, r"<<", "<"),
]


def by_first_character(schema):
    """{first character: [(tag, compiled pattern)]}, as `resolve` looks them up; "" for the empty scalar."""
    resolvers = {"": [(NULL_TAG, re.compile(r"\Z"))]}
    for tag, pattern, firsts in schema:
        for first in firsts:
            resolvers.setdefault(first, []).append((tag, re.compile(f"(?:{pattern})\\Z")))
    return resolvers


IMPLICIT_RESOLVERS = by_first_character(CORE_SCHEMA)

SQLITE_INTEGERS = range(-2**63, 2**63)  # what an INTEGER column can hold
MAX_INT_DIGITS = 40  # far more than SQLite's 19; keeps int() away from Python's 4,300-digit limit


def core_int(text):
    """A YAML 1.2 core integer: decimal (leading zeros are not octal), 0o octal or 0x hexadecimal."""
    if text[:2] in ("0o", "0x"):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


def core_float(text):
    """A YAML 1.2 core float: digits as Python reads them, or `.inf`, `-.inf`, `.nan` in any case YAML allows."""
    if text.lstrip("-+").lower() in (".inf", ".nan"):  # Python writes them `inf` and `nan`
        return float(text.replace(".", "", 1))
    return float(text)


SCALARS = {
    NULL_TAG: lambda text: None,
    BOOL_TAG: lambda text: text[0] in "tT",
    INT_TAG: core_int,
    FLOAT_TAG: core_float,
}

# Characters YAML does not allow in a file (C0 controls but tab and line ends,
# DEL, C1 controls but U+0085, surrogates, U+FFFE, U+FFFF): found here, they are
# reported at their line and column instead of as libyaml's two-line message.
NOT_PRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Bidirectional embeddings, overrides and isolates: they reorder the text a reader sees ("Trojan source"),
# so a name or a URL would read other than it is stored.
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
LINE_END = re.compile(r"\r\n|\r|\n")
BYTES_LINE_END = re.compile(rb"\r\n|\r|\n")
YAML_1_1_LINE_END = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
EXTRA_YAML_LINE_ENDS = re.compile("[\x85\u2028\u2029]")


def editor_lines(text):
    """The lines of `text` as an editor shows them."""
    return LINE_END.split(text)


def editor_line_numbers(text):
    """For each line libyaml counts (0-based), the editor's line number (1-based);
    None when both count the same (no U+0085, U+2028 or U+2029 in the text)."""
    if not EXTRA_YAML_LINE_ENDS.search(text):
        return None
    numbers, line = [1], 1
    for end in YAML_1_1_LINE_END.finditer(text):
        line += end.group() not in "\x85\u2028\u2029"
        numbers.append(line)
    return numbers


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
        self.editor_line = editor_line_numbers(stream)

    def line_of(self, mark):
        """The editor's line (1-based) of a mark."""
        return mark.line + 1 if self.editor_line is None else self.editor_line[mark.line]

    # The composers call these two around every node, for path resolvers
    # (yaml.add_path_resolver), of which none is registered. Builtins that take
    # the same arguments and do nothing spare two Python calls per node.
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
            if node.style not in PLAIN_STYLES or self.resolve(ScalarNode, node.value, (True, False)) != tag:
                # an explicit tag: `!!float abc`, `!!bool yes`, `!!null 700 W` type a value against its text
                raise Refused(node.start_mark, f"YAML tag !!{tag.rsplit(':', 1)[1]} is not allowed in data files "
                                               "(only !!str is): write the value without it, as its type reads it")
            return self.construct_scalar_value(node, tag)
        if tag == MERGE_TAG:
            # Merging copies the merged mapping once per use before any alias is
            # seen: nested `<<: [*a, *a, ...]` grow exponentially (a 1 KB file asks
            # for gigabytes). Without aliases a merge key has no use.
            raise Refused(node.start_mark, "YAML merge keys (<<) are not allowed in data files; write the keys out")
        # !!binary, !!set (unordered: the build would not be repeatable), !!python/...
        raise Refused(node.start_mark, f"YAML tag {tag!r} is not allowed in data files")

    def construct_scalar_value(self, node, tag):
        """An int, float, bool or null by YAML 1.2 core rules; an integer must fit SQLite."""
        if tag == INT_TAG:
            digits = len(node.value.lstrip("-+"))
            value = core_int(node.value) if digits <= MAX_INT_DIGITS else None
            if value is None or value not in SQLITE_INTEGERS:  # `None in range` would compare with every integer
                shown = node.value if digits <= MAX_INT_DIGITS else f"an integer of {digits:,} digits"
                raise Refused(node.start_mark, f"{shown} is outside the integers SQLite stores "
                                               f"({SQLITE_INTEGERS.start} to {SQLITE_INTEGERS.stop - 1})")
            return value
        return SCALARS[tag](node.value)

    def construct_mapping(self, node, deep=False):
        mapping = LineDict()
        mapping.line = self.line_of(node.start_mark)
        mapping.lines = lines = {}
        plain = self.seen is None  # strings taken straight from their node: one call fewer each
        for key_node, value_node in node.value:
            if plain and key_node.__class__ is ScalarNode and key_node.tag == STR_TAG:
                key = key_node.value
            else:
                key = self.construct_object(key_node)
                if key.__class__ is not str:
                    key = str(key)
            line = key_node.start_mark.line + 1 if self.editor_line is None else self.line_of(key_node.start_mark)
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
# The name of a data file: a slug-like stem (underscores and dots allowed between parts) and a lower-case suffix.
DATA_FILE_NAME = re.compile(r"[a-z0-9]+(?:[-_.][a-z0-9]+)*\.ya?ml\Z")


def display_path(path, cwd=None):
    """`data/specs/x.yml` rather than an absolute path, when under the current
    folder (`cwd`, ending with a slash: given when showing many paths)."""
    cwd = cwd or os.path.join(os.getcwd(), "")
    path = os.path.normpath(os.path.join(cwd, path))  # os.path.abspath, without asking for the current folder again
    return path.removeprefix(cwd)


# The files of a data folder that the build does not read, by path within it, with what they are
# (docs/DATA.md). Any other file that is not YAML is refused: a copy (`acme.yml.bak`, `acme.yml~`) or
# a file in another format would otherwise vanish from the release without a word.
NOT_READ_BY_THE_BUILD = {
    "crosscheck/epoch-ai/ml_hardware.csv": "Epoch AI's dataset, read by `computekb report --crosscheck`",
    "crosscheck/epoch-ai/README.md": "where the copy of Epoch AI's dataset was read",
}


class DataFiles(NamedTuple):
    """What a data folder holds: its YAML files, the files it keeps for other commands, and why any
    part of it cannot be read."""

    paths: list     # str, in the order of their path parts
    problems: list  # Problem: a folder that cannot be listed, a symbolic link, a file that is not data
    unread: list    # (str, what it is): the files of NOT_READ_BY_THE_BUILD present


def scan_data(folder):
    """Every YAML file under `folder`, and a problem for anything under it that would be skipped.

    Each folder's entries are visited in name order, which gives the order of
    path parts without comparing whole paths, and costs a stat per folder, not
    per file. A missing data folder holds nothing (the build says it found no
    data file); anything under it that cannot be read is a problem.
    """
    found = DataFiles([], [], [])
    cwd = os.path.join(os.getcwd(), "")
    try:
        scan_folder(os.fspath(folder), found, cwd, root=os.fspath(folder))
    except (FileNotFoundError, NotADirectoryError):
        pass
    return found


def folder_problem(path, message, cwd):
    return Problem(display_path(path, cwd), 1, "-", message)


def not_data_problem(name):
    """Why a file of the data folder that is not YAML is refused."""
    stem = name.strip().lower()
    if any(suffix in stem for suffix in YAML_SUFFIXES):
        return "a copy of a data file (the build reads only names ending in .yml): move it out of the data folder"
    return ("not a data file: the build reads only .yml files here, and this one would be left out of the "
            "release; move it out of the data folder, or list it in etl/read.py's NOT_READ_BY_THE_BUILD")


def scan_folder(folder, found, cwd, root):
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        if entry.is_symlink():
            found.problems.append(folder_problem(
                entry.path, "symbolic link: links are not followed in the data folder; put the file or folder itself here", cwd))
        elif entry.is_dir(follow_symlinks=False):
            try:
                scan_folder(entry.path, found, cwd, root)
            except OSError as error:
                found.problems.append(folder_problem(entry.path, f"cannot list this folder ({error.strerror})", cwd))
        elif entry.name.strip().lower().endswith(YAML_SUFFIXES):  # `a.YML`, `a.yml `: meant as data, never skipped
            if not DATA_FILE_NAME.match(entry.name):
                found.problems.append(folder_problem(entry.path, "not a data file name: write it in lower-case "
                                                                 "letters, digits, '-' and '_', ending in .yml", cwd))
            elif entry.is_file(follow_symlinks=False):
                found.paths.append(entry.path)
            else:
                found.problems.append(folder_problem(entry.path, "not a regular file", cwd))
        elif (within := Path(os.path.relpath(entry.path, root)).as_posix()) in NOT_READ_BY_THE_BUILD:
            found.unread.append((entry.path, NOT_READ_BY_THE_BUILD[within]))
        else:
            found.problems.append(folder_problem(entry.path, not_data_problem(entry.name), cwd))


def data_files(data_dir):
    """Every YAML file under data_dir, in a stable order."""
    return [Path(path) for path in scan_data(data_dir).paths]


def key_on_line(text, line):
    """The key written on a line, to name the field of a file-level problem."""
    return key_in(editor_lines(text), line)


def key_in(lines, line):
    match = KEY_ON_LINE.match(lines[line - 1]) if 0 < line <= len(lines) else None
    return match.group(1) if match else "-"


def yaml_error(error, text, line_of):
    """(line, reason) of a parse error. A quote or bracket left open is only
    noticed at the end of the file: point at where it was opened instead."""
    problem, context = getattr(error, "problem_mark", None), getattr(error, "context_mark", None)
    reason = getattr(error, "problem", None) or str(error)
    if context is not None and (problem is None or problem.index >= len(text.rstrip())):
        line, reason = line_of(context), f"{reason} {error.context}"
    else:
        line = line_of(problem) if problem else 1
    return min(line, line_count(text)), reason  # the end of a file is on its last line


def line_count(text):
    """How many lines an editor shows for `text` (a final line end starts no line)."""
    return max(1, len(LINE_END.findall(text)) + (not text.endswith(("\n", "\r"))))


def control_character_problems(text, path, characters=NOT_PRINTABLE, why="is not allowed in YAML"):
    """Each character of `characters` in `text`, at its line and column (1-based)."""
    starts = [0] + [end.end() for end in LINE_END.finditer(text)]  # where each line begins
    lines, problems = editor_lines(text), []
    for found in characters.finditer(text):
        line = bisect.bisect_right(starts, found.start())
        column = found.start() - starts[line - 1] + 1
        problems.append(Problem(path, line, key_in(lines, line),
                                f"column {column}: character U+{ord(found.group()):04X} {why}; remove it"))
    return problems


BIDI_WHY = "(a bidirectional control: it reorders the text a reader sees) is not allowed in data files"


def strings_in(value, line, key):
    """(line, key, text) of every string of a parsed document, with the line and key of its field."""
    if isinstance(value, LineDict):
        for name, item in value.items():
            yield from strings_in(item, value.lines.get(name, value.line), name)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item, line, key)
    elif isinstance(value, str):
        yield line, key, value


def escaped_character_problems(document, path):
    """A character that an escape of a double-quoted string (`"\\a"`, `"\\u202e"`) puts in a value, where
    the same character written as it is would be refused."""
    problems = []
    for line, key, text in strings_in(document, 1, "-"):
        for found in NOT_PRINTABLE.finditer(text):
            problems.append(Problem(path, line, key, f"escaped character U+{ord(found.group()):04X} is not allowed "
                                                     "in data files, as it is not written out; remove it"))
        for found in BIDI_CONTROLS.finditer(text):
            problems.append(Problem(path, line, key, f"escaped character U+{ord(found.group()):04X} {BIDI_WHY}; "
                                                     "remove it"))
    return problems


def too_deep(path):
    return Problem(path, 1, "-", "invalid YAML: nested too deeply")


def parse_text(raw, path):
    """Parse one file's bytes; return (document, problems)."""
    if len(raw) > MAX_FILE_BYTES:
        return None, [Problem(path, 1, "-", f"file is {len(raw):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit for one data file")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = len(BYTES_LINE_END.findall(raw, 0, error.start)) + 1
        field = key_on_line(raw.decode("utf-8", "replace"), line)
        return None, [Problem(path, line, field, f"not UTF-8 (byte 0x{raw[error.start]:02x}); save the file as UTF-8")]
    if NOT_PRINTABLE.search(text):
        return None, control_character_problems(text, path)
    if BIDI_CONTROLS.search(text):
        return None, control_character_problems(text, path, BIDI_CONTROLS, BIDI_WHY)
    loader = loader_for(text)(text)
    try:
        document = loader.get_single_data()
    except Refused as error:
        line = loader.line_of(error.problem_mark)
        return None, [Problem(path, line, key_on_line(text, line), error.message)]
    except yaml.YAMLError as error:
        line, reason = yaml_error(error, text, loader.line_of)
        if "maximum nesting depth" in reason:  # PyYAML 6.0.4+ stops deep nesting itself
            return None, [too_deep(path)]
        if "\t" in "".join(editor_lines(text)[line - 1 : line]):
            reason += " (tabs cannot indent YAML; use spaces)"
        return None, [Problem(path, line, key_on_line(text, line), f"invalid YAML: {reason}")]
    except RecursionError:
        return None, [too_deep(path)]
    finally:
        loader.dispose()
    problems = [Problem(path, line, key, "duplicate key in the same mapping (YAML would silently keep the last one)")
                for line, key in loader.duplicates]
    if "\\" in text:  # only an escape of a double-quoted string writes a character by its code
        problems += escaped_character_problems(document, path)
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
