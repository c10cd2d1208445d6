"""What the importers share: their files checked by the build's own rules before any is written, then
written whole or not at all.

An importer turns an outside dataset into YAML data files. A file the next
build refuses is an import that failed late and left a broken data folder, so
each importer builds every file's text first, reads it back here through the
build's reader and validator (etl/build.py, one file on its own), and writes
only when every file passes: each to a temporary file beside its target,
renamed into place at the end.
"""

import os
import re
from pathlib import Path
from typing import NamedTuple

from .build import read_validate_transform
from .read import display_path

COMMIT = re.compile(r"[0-9a-f]{40}")  # a full git commit hash, as every importer cites it
REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")  # owner/name on GitHub
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class ImportRefused(ValueError):
    """An import refused: one line naming the input, the row and the field, and why."""


class Output(NamedTuple):
    """One file an importer writes: its path and text, and for each record's line the input row it came from."""

    path: Path
    text: str
    origins: dict  # {line of a record's first key: "input row N" as the message names it}


def origin_of(output: Output, line: int) -> str:
    """The input row of the record written at or above `line`."""
    starts = [start for start in output.origins if start <= line]
    return output.origins[max(starts)] if starts else "the file's header"


def record_lines(text: str, slugs: list) -> dict:
    """{line: slug} of the line each record (`- slug: x`) starts on, in the order the slugs are written."""
    lines, found, wanted = text.splitlines(), {}, iter(slugs)
    slug = next(wanted, None)
    for number, line in enumerate(lines, 1):
        if slug is not None and line.lstrip("- ").startswith("slug: ") and line.split("slug: ", 1)[1].strip("'\"") == slug:
            found[number] = slug
            slug = next(wanted, None)
    return found


def problems_of(output: Output) -> list[str]:
    """The build's problems with one output file, each naming its input row."""
    result = read_validate_transform((display_path(output.path), output.text.encode("utf-8")))
    return [f"{origin_of(output, p.line)}: {p.field}: {p.message} (in the file it would write, "
            f"{p.path}:{p.line})" for p in sorted(result.problems)]


def write_all(outputs: list[Output]) -> list[Path]:
    """Every output written, or none: each refused by the build's rules stops the import before any write."""
    for output in outputs:
        if problems := problems_of(output):
            raise ImportRefused(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    staged = []
    try:
        for output in outputs:
            output.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = output.path.with_name(f".{output.path.name}.tmp")
            temporary.write_text(output.text, encoding="utf-8")
            staged.append((temporary, output.path))
    except OSError:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise
    for temporary, path in staged:
        os.replace(temporary, path)
    return [path for _, path in staged]
