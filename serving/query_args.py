"""Datasette's rule for which query-string arguments of a table page are filters, in one place.

Datasette takes an argument that starts with `_` and has no `__` as one of its
own (`_sort`, `_search`, `_facet`...); any other is a filter `column__lookup`,
and `column` alone means `column__exact`. The plugins that read filters
(plugins/units.py, plugins/speed.py) share this module, as Datasette loads each
plugin file on its own.
"""

from typing import NamedTuple


class Filter(NamedTuple):
    """One filter argument of a table page."""

    key: str      # the argument as written: `memory_gb__gte`
    column: str
    lookup: str   # `exact`, `gt`, `in`...
    value: str


def is_datasette_argument(key: str) -> bool:
    """Whether Datasette reads `key` as one of its own arguments rather than a filter."""
    return key.startswith("_") and "__" not in key


def as_filter(key: str, value: str) -> Filter | None:
    """The filter an argument asks for, or None for one of Datasette's own arguments."""
    if is_datasette_argument(key):
        return None
    column, lookup = key.rsplit("__", 1) if "__" in key else (key, "exact")
    return Filter(key, column, lookup, value)


# A search's cost grows with its words (each is one more full-text term, with its synonyms): the
# search page and the search-articles query take this many words and characters at most.
MAX_SEARCH_WORDS = 12
MAX_SEARCH_CHARACTERS = 200


def search_problem(query: str, words: list) -> str | None:
    """Why a search query is refused (too long, too many words), or None."""
    if len(words) > MAX_SEARCH_WORDS:
        return f"the search has {len(words):,} words: at most {MAX_SEARCH_WORDS} are searched for at once"
    if len(query) > MAX_SEARCH_CHARACTERS:
        return f"the search is {len(query):,} characters long: at most {MAX_SEARCH_CHARACTERS} are searched for"
    return None


# What the cost per million tokens answers when it is opened bare (the reader page, /-/cost-per-token, and
# the canned query, whose SQL repeats these literals): a model and weights that fit many rented instances.
COST_DEFAULTS = {"model": "llama-3-1-70b", "weight_format": "fp8", "batch": "32", "context": "2048"}
