"""Escaping for the citations the pages offer to copy (Markdown, BibTeX), shared by every page that cites."""

import re
from datetime import UTC, datetime

BIBTEX_SPECIALS = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "%": r"\%", "&": r"\&",
                   "$": r"\$", "#": r"\#", "_": r"\_", "^": r"\^{}", "~": r"\~{}"}


def bibtex_escape(text):
    return "".join(BIBTEX_SPECIALS.get(char, char) for char in text)


def markdown_escape(text):
    return re.sub(r"([\\`*_\[\]<>])", r"\\\1", text)


def today_utc():
    """The date accessed of a citation: today on the server's clock, in UTC."""
    return datetime.now(UTC).date().isoformat()
