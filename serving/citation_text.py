"""What every page that cites shares: escaping for Markdown and BibTeX, titles told from derived labels,
and the anchor of a throughput figure on its accelerator's spec sheet."""

import re
from datetime import UTC, datetime
from typing import NamedTuple

BIBTEX_SPECIALS = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "%": r"\%", "&": r"\&",
                   "$": r"\$", "#": r"\#", "_": r"\_", "^": r"\^{}", "~": r"\~{}"}


def bibtex_escape(text):
    return "".join(BIBTEX_SPECIALS.get(char, char) for char in text)


def markdown_escape(text):
    return re.sub(r"([\\`*_\[\]<>])", r"\\\1", text)


def today_utc():
    """The date accessed of a citation: today on the server's clock, in UTC."""
    return datetime.now(UTC).date().isoformat()


class Shown(NamedTuple):
    """What to show as the name of a row or page: its title, or (`published` False) its derived label.
    A page shows "title not published" beside such a name; a citation never calls it a title."""

    text: str
    published: bool


def shown_title(title, label):
    """`title` when there is one, else the `label` derived from the summary or the address."""
    if title:
        return Shown(title, True)
    return Shown(label, False)


def value_anchor(precision, engine, sparsity):
    """The anchor of a throughput figure on the spec sheet: `fp8_matrix_dense`, `fp8_matrix_sparse`."""
    return f"{precision}_{engine}_{'dense' if sparsity == 'dense' else 'sparse'}"
