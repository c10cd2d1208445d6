"""Every item of the seed listings must be catalogued exactly once.

The seed listings are the raw pages the article catalog was read from; they live
in the sibling folder ``../shared/seeds`` (outside the repository). Each listing
format gets a small parser below; the expectations (which items, which site,
language and category) are derived from the listings themselves, never
hard-coded, so the test fails as soon as an item is missing, duplicated or
mis-filed in ``data/articles/``.

Listing formats (one item = consecutive lines):

* LeCompute English author page: ``category / title / summary``, headed
  ``Articles by <author> in English <count>``; the featured item at the top may
  repeat an item with a truncated summary.
* LeCompute French summary list: ``category / summary`` (no titles).
* LeCompute French archive page: ``category / title / summary``, with a
  ``Dossiers`` header block and ``NN articles publiés , page X sur Y``.
* Deep-dive listing: ``<Category><N> min / title / subtitle / takeaway /
  takeaway / <Month D, YYYY>Read``, headed ``NN articles``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SEEDS = REPO.parent / "shared" / "seeds"
DATA = REPO / "data"

# Category labels as LeCompute prints them (English and French pages).
LECOMPUTE_LABELS = {"Silicon", "Runtimes", "Costs", "Coûts", "Kernel & Perf", "Edge AI"}
DEEP_ITEM_HEAD = re.compile(r"(?P<category>\S.*?)(?P<minutes>\d+) min")
DEEP_DATE = re.compile(r"(?P<date>[A-Z][a-z]+ \d{1,2}, \d{4})Read")


@dataclass
class Item:
    seed: str
    site: str
    language: str
    category_label: str
    summary: str | None
    title: str | None = None
    subtitle: str | None = None
    takeaways: list[str] = field(default_factory=list)
    published: str | None = None
    reading_minutes: int | None = None
    author: str | None = None

    def __str__(self) -> str:  # readable assertion messages
        return f"{self.seed}: [{self.category_label}] {self.title or self.summary!r}"


@dataclass
class Listing:
    seed: str
    site: str
    language: str
    items: list[Item]
    announced: int | None = None  # item count the page itself announces for this listing


# --------------------------------------------------------------------------- parsers


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]


def _drop_truncated_teasers(items: list[Item]) -> list[Item]:
    """A featured teaser repeats an item with a cut summary: keep the full one."""
    kept = []
    for item in items:
        teaser = any(
            other is not item
            and other.title == item.title
            and other.summary != item.summary
            and other.summary.startswith(item.summary)
            for other in items
        )
        if not teaser:
            kept.append(item)
    return kept


def _parse_lecompute_triples(path: Path, language: str) -> list[Item]:
    lines = _lines(path)
    items, i = [], 0
    while i < len(lines):
        if lines[i] in LECOMPUTE_LABELS:
            assert i + 2 < len(lines), f"{path.name}: incomplete item at line {i + 1}"
            title, summary = lines[i + 1], lines[i + 2]
            assert title and summary, f"{path.name}: incomplete item at line {i + 1}"
            items.append(Item(path.name, "lecompute", language, lines[i], summary, title=title))
            i += 3
        else:
            i += 1
    return _drop_truncated_teasers(items)


def parse_lecompute_author_page(path: Path) -> Listing:
    text = path.read_text(encoding="utf-8")
    head = re.search(r"^Articles by (?P<author>.+?) in English (?P<count>\d+)$", text, re.M)
    assert head, f"{path.name}: author header not found"
    items = _parse_lecompute_triples(path, "en")
    for item in items:
        item.author = head["author"]
    return Listing(path.name, "lecompute", "en", items, announced=int(head["count"]))


def parse_lecompute_fr_archive(path: Path) -> Listing:
    return Listing(path.name, "lecompute", "fr", _parse_lecompute_triples(path, "fr"))


def parse_lecompute_fr_summaries(path: Path) -> Listing:
    lines = [line for line in _lines(path) if line]
    items, i = [], 0
    while i < len(lines):
        if lines[i] in LECOMPUTE_LABELS:
            assert i + 1 < len(lines) and lines[i + 1] not in LECOMPUTE_LABELS, (
                f"{path.name}: category {lines[i]!r} without summary"
            )
            items.append(Item(path.name, "lecompute", "fr", lines[i], lines[i + 1]))
            i += 2
        else:
            i += 1
    return Listing(path.name, "lecompute", "fr", items)


def parse_deep_dives(path: Path) -> Listing:
    lines = [line for line in _lines(path) if line]
    announced = None
    for line in lines:
        m = re.match(r"(\d+) articles", line)
        if m:
            announced = int(m.group(1))
            break
    items, i = [], 0
    while i < len(lines):
        head = DEEP_ITEM_HEAD.fullmatch(lines[i])
        if head and i + 5 < len(lines) and DEEP_DATE.fullmatch(lines[i + 5]):
            title, subtitle, t1, t2, date_line = lines[i + 1 : i + 6]
            date = dt.datetime.strptime(DEEP_DATE.fullmatch(date_line)["date"], "%B %d, %Y").date()
            items.append(
                Item(
                    path.name,
                    "deep-dives",
                    "en",
                    head["category"],
                    subtitle,
                    title=title,
                    subtitle=subtitle,
                    takeaways=[t1, t2],
                    published=date.isoformat(),
                    reading_minutes=int(head["minutes"]),
                )
            )
            i += 6
        else:
            i += 1
    return Listing(path.name, "deep-dives", "en", items, announced=announced)


def parse_seed(path: Path) -> Listing:
    """Pick the parser from the page's own text."""
    text = path.read_text(encoding="utf-8")
    if "Long-form, no fluff" in text or DEEP_DATE.search(text):
        return parse_deep_dives(path)
    if re.search(r"^Articles by .+ in English \d+$", text, re.M):
        return parse_lecompute_author_page(path)
    if "articles publiés" in text:
        return parse_lecompute_fr_archive(path)
    first = next((line for line in _lines(path) if line), "")
    if first in LECOMPUTE_LABELS:
        return parse_lecompute_fr_summaries(path)
    raise AssertionError(f"no parser for seed listing {path.name}")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def listings() -> list[Listing]:
    if not SEEDS.is_dir():
        pytest.skip(f"seed listings not found at {SEEDS}")
    paths = sorted(p for p in SEEDS.glob("*.txt") if p.is_file())
    assert paths, f"no seed listings in {SEEDS}"
    return [parse_seed(p) for p in paths]


@pytest.fixture(scope="session")
def db(tmp_path_factory) -> sqlite3.Connection:
    from etl.build import build_database

    db_path = tmp_path_factory.mktemp("seed-coverage") / "computekb.db"
    build_database(DATA, db_path)
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    yield conn
    conn.close()


@pytest.fixture(scope="session")
def article_columns(db) -> set[str]:
    return {row["name"] for row in db.execute("PRAGMA table_info(articles)")}


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return [value]
        return decoded if isinstance(decoded, list) else [value]
    return list(value)


def _category_slug(db, site: str, label: str) -> str:
    rows = db.execute(
        "SELECT slug FROM categories WHERE site = ? AND (label_en = ? OR label_fr = ?)",
        (site, label, label),
    ).fetchall()
    assert len(rows) == 1, f"category label {label!r} of site {site!r} matches {len(rows)} categories"
    return rows[0]["slug"]


def _rows_for(db, item: Item) -> list[sqlite3.Row]:
    if item.site == "deep-dives":
        # title + subtitle identify a deep dive
        return db.execute(
            "SELECT * FROM articles WHERE title = ? AND (summary = ? OR subtitle = ?)",
            (item.title, item.subtitle, item.subtitle),
        ).fetchall()
    return db.execute("SELECT * FROM articles WHERE summary = ?", (item.summary,)).fetchall()


# --------------------------------------------------------------------------- tests


def test_parsers_read_every_listing(listings):
    for listing in listings:
        assert listing.items, f"{listing.seed}: parser found no items"
        # the author page and the deep-dive page each list everything they announce
        if listing.announced is not None:
            assert len(listing.items) == listing.announced, (
                f"{listing.seed}: page announces {listing.announced} articles, parser found {len(listing.items)}"
            )


def test_listed_items_agree_across_listings(listings):
    """An item listed twice (same summary) must be filed the same way on both pages."""
    seen: dict[tuple[str, str], Item] = {}
    for listing in listings:
        for item in listing.items:
            key = (item.site, item.summary)
            if key in seen:
                other = seen[key]
                assert other.language == item.language and other.category_label == item.category_label, (
                    f"{item} vs {other}"
                )
                if other.title and item.title:
                    assert other.title == item.title, f"{item} vs {other}"
            else:
                seen[key] = item


def test_every_listed_item_is_catalogued_once(db, listings, article_columns):
    problems = []
    for listing in listings:
        for item in listing.items:
            rows = _rows_for(db, item)
            if len(rows) != 1:
                problems.append(f"{item}: {len(rows)} article rows")
                continue
            row = rows[0]
            expected = {
                "site": item.site,
                "language": item.language,
                "category": _category_slug(db, item.site, item.category_label),
            }
            if item.title is not None:
                expected["title"] = item.title
            if item.author is not None and "author" in article_columns:
                expected["author"] = item.author
            if item.reading_minutes is not None and "reading_minutes" in article_columns:
                expected["reading_minutes"] = item.reading_minutes
            if item.subtitle is not None and "subtitle" in article_columns:
                expected["subtitle"] = item.subtitle
            for column, value in expected.items():
                if row[column] != value:
                    problems.append(f"{item}: {column} is {row[column]!r}, listing says {value!r}")
            if item.published is not None and not str(row["published"] or "").startswith(item.published):
                problems.append(f"{item}: published is {row['published']!r}, listing says {item.published}")
            if item.takeaways and "takeaways" in article_columns:
                stored = _as_list(row["takeaways"])
                for takeaway in item.takeaways:
                    if not any(takeaway in s for s in stored):
                        problems.append(f"{item}: takeaway missing: {takeaway[:60]!r}")
    assert not problems, "\n".join(problems)


def test_listed_title_is_kept_when_one_listing_has_none(db, listings):
    """French items listed without title on one page and with title on another keep the title."""
    titled = {(i.site, i.summary): i.title for listing in listings for i in listing.items if i.title}
    for listing in listings:
        for item in listing.items:
            if item.title is None and (item.site, item.summary) in titled:
                row = _rows_for(db, item)[0]
                assert row["title"] == titled[(item.site, item.summary)], str(item)


def test_no_duplicate_articles(db):
    dups = db.execute(
        """SELECT site, language, summary, COUNT(*) AS n FROM articles
           WHERE summary IS NOT NULL GROUP BY site, language, summary HAVING n > 1"""
    ).fetchall()
    assert not dups, "duplicate articles: " + "; ".join(f"{d['site']}/{d['language']}: {d['summary'][:60]!r}" for d in dups)
