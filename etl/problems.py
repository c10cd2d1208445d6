"""A problem found in the data, located by file, line and field."""

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    line: int
    field: str
    message: str

    def __str__(self):
        return f"{self.path}:{self.line}: {self.field}: {self.message}"


class DataError(Exception):
    """Raised when the data has problems; carries all of them, not just the first."""

    def __init__(self, problems):
        self.problems = sorted(problems)
        super().__init__(f"{len(self.problems)} problem(s) in the data")
