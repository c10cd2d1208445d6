"""A problem found in the data, located by file, line and field."""

import re
from collections import Counter
from dataclasses import dataclass

# Characters that could end or rewrite a printed line (a newline in a file
# name would forge a second `path:line:` problem): Unicode's control characters
# (C0, DEL, C1) and its line and paragraph separators, shown as escapes instead.
UNPRINTABLE = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7f, 0xa0)]}
UNPRINTABLE.update({code: f"\\u{code:04x}" for code in (0x2028, 0x2029)})

SHOWN_ALIKE = 20  # identical problems (same file, field and message) printed before the rest are counted


PLAIN_PATH = re.compile(r"[A-Za-z0-9_./-]*\Z")


def shown_path(path):
    """`path` as written when it holds only plain characters, else quoted (Python's repr, escapes included),
    so a name such as `x.yml:1: slug: ` cannot pass for the location of a problem."""
    return path if PLAIN_PATH.match(path) else repr(path)


def printable(text):
    """`text` on one line, its control and line-separator characters escaped."""
    return text.translate(UNPRINTABLE)


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    line: int
    field: str
    message: str

    def __str__(self):
        return printable(f"{shown_path(self.path)}:{self.line}: {self.field}: {self.message}")


def report_lines(problems):
    """The lines that report `problems`, sorted: of identical problems at many
    lines, the first SHOWN_ALIKE, then one line counting the rest."""
    problems = sorted(problems)
    seen, alike = Counter(), Counter((p.path, p.field, p.message) for p in problems)
    lines, summaries = [], []
    for problem in problems:
        key = (problem.path, problem.field, problem.message)
        seen[key] += 1
        if seen[key] <= SHOWN_ALIKE:
            lines.append(str(problem))
        if seen[key] == SHOWN_ALIKE + 1:
            summaries.append(printable(f"  ... and {alike[key] - SHOWN_ALIKE:,} more of "
                                       f"{shown_path(problem.path)}: {problem.field}: {problem.message}"))
    return lines + summaries


class DataError(Exception):
    """Raised when the data has problems; carries all of them, not just the first."""

    def __init__(self, problems):
        self.problems = sorted(problems)
        super().__init__(f"{len(self.problems)} problem(s) in the data")
