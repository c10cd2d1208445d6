"""One search for everything: accelerators, models and terms by name, articles by their words.

The header box of every page asks this page. A query that names an
accelerator ("h200", "mi300", "5090") lists its spec sheets first, then the
models and glossary terms it names, then the articles. Names are matched as
word prefixes in their own full-text indexes (name, slug, family,
architecture); articles through the same FTS5 index as the `search-articles`
canned query, with filters by language, site, category and topic, matched
words marked, and synonyms, because the French articles about the KV cache
speak of "VRAM" where a reader types "mémoire". Case and accents are folded
before synonyms are looked up, so `mémoire`, `memoire` and `MÉMOIRE` are one
query. The canned query, with its SQL, stays one link away.
"""

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlencode

from datasette import hookimpl
from datasette.utils.asgi import Response
from markupsafe import Markup, escape

from domain.matching import closest
from serving.metadata import DATABASE
from serving.query_args import search_problem

PATH = "/-/search"
LIMIT = 50
FILTERS = ("language", "site", "category", "topic")
NAMED_LIMIT = 12
# Words a reader types, folded (lower case, no accents) -> other words the articles use for the same
# subject. Phrases are matched as phrases; the index ignores accents, so folded words find accented text.
SYNONYMS = {
    "memoire": ("memory", "vram", "hbm", "kv cache"),
    "memory": ("memoire", "vram", "hbm"),
    "vram": ("memoire", "memory"),
    "cache": ("kv cache",),
    "quantification": ("quantization",),
    "quantization": ("quantification",),
    "cout": ("costs", "prix"),
    "cost": ("cout", "prix"),
    "interconnexion": ("interconnect", "nvlink"),
    "bande": ("bandwidth",),
}
# Marks put around matches by FTS5, as characters no article contains, so the text can be escaped
# first and the marks turned into <mark> tags after.
OPEN, CLOSE = "\x01", "\x02"

# The best LIMIT matches that pass the filters are ranked inside the full-text
# index first; the articles' rows, highlights and snippets (the dearest part) are
# read for those only. A filter reads a match's row only when one is chosen. Ties
# keep the table's order, which is the slugs' (the build writes rows by key).
SEARCH_SQL = """
with best as materialized (
  select f.rowid, bm25(articles_fts) as rank from articles_fts f
  where articles_fts match :expression
    and (:language = '' and :site = '' and :category = '' and :topic = '' or exists (
      select 1 from articles a where a.rowid = f.rowid
        and (:language = '' or a.language = :language) and (:site = '' or a.site = :site)
        and (:category = '' or a.category = :category)
        and (:topic = '' or exists (select 1 from article_topics t where t.article = a.slug and t.topic = :topic))))
  -- a query in the preferred language (:prefer, empty for none) ranks its articles first
  order by case when :prefer = '' then 0
    when (select a.language from articles a where a.rowid = f.rowid) = :prefer then 0 else 1 end, rank, f.rowid
  limit :limit
)
select a.slug, a.language, a.site, a.category, a.title, a.label, a.label_derived, a.topic_tags, a.published,
  highlight(articles_fts, 0, char(1), char(2)) as title_marked,
  snippet(articles_fts, -1, char(1), char(2), '…', 18) as snippet
-- cross join: best drives the loop (SQLite keeps the order of a cross join), one index lookup per row,
-- where the planner would otherwise go through every match again
from best cross join articles_fts cross join articles a
where articles_fts match :expression and articles_fts.rowid = best.rowid and a.rowid = best.rowid
order by :prefer != '' and a.language != :prefer, best.rank, best.rowid
"""
# Accelerators and models whose name, slug, family, architecture or maker starts with every word; the
# best-ranked first (bm25), then by slug for a stable order.
NAMED_SQL = {
    "accelerators": """select a.slug, a.name as label, a.vendor || ' · ' || replace(a.device_class, '-', ' ')
        || coalesce(' · ' || cast(a.memory_gb as text) || ' GB', '') as detail
      from accelerators_fts f join accelerators a on a.rowid = f.rowid
      where accelerators_fts match :expression order by bm25(accelerators_fts), a.slug limit :limit""",
    "models": """select m.slug, m.name as label, coalesce(m.organization, '')
        || coalesce(' · ' || cast(m.computed_params_b as integer) || 'B parameters', '') as detail
      from models_fts f join models m on m.rowid = f.rowid
      where models_fts match :expression order by bm25(models_fts), m.slug limit :limit""",
}
# Glossary terms: topics and number formats, few enough to fold in Python (accents and case).
TERMS_SQL = """select 'topics' as tbl, slug, label_en || coalesce(' / ' || nullif(label_fr, label_en), '') as label,
    coalesce(description, '') as detail from topics
  union all
  select 'number_formats', slug, name, coalesce(family, '') || ' ' || kind from number_formats
  limit 2000"""
# Number formats a reader may search for -> the accelerators that run them natively (domain/schema.py:
# native_fp8, native_fp4 and fp4_formats), with the table filter that lists them all.
NATIVE_FORMATS = {
    "fp8": ("FP8", "native_fp8 = 'yes'", {"native_fp8": "yes"}),
    "fp4": ("FP4", "native_fp4 = 'yes'", {"native_fp4": "yes"}),
    "nvfp4": ("NVFP4", "exists (select 1 from json_each(fp4_formats) where value = 'nvfp4')",
              {"fp4_formats__arraycontains": "nvfp4"}),
    "mxfp4": ("MXFP4", "exists (select 1 from json_each(fp4_formats) where value = 'mxfp4')",
              {"fp4_formats__arraycontains": "mxfp4"}),
}
NATIVE_SQL = """select slug, name as label, vendor || ' · ' || replace(device_class, '-', ' ') as detail,
  count(*) over () as total from accelerators where {condition} order by vendor, name limit :limit"""
# "A vs B" (or versus, contre, against): two accelerators to compare.
VERSUS = re.compile(r"\s+(?:vs\.?|versus|contre|against)\s+", re.IGNORECASE)
# A query with accents or one of these words is taken as French: the French articles rank first
# (unless the language filter says otherwise). Folded, as `words` gives them.
FRENCH_WORDS = frozenset((
    "le la les des du de un une et pour avec sur dans est au aux ou par memoire cout couts prix carte cartes "
    "calcul puissance bande passante quantification interconnexion entrainement modele modeles debit "
    "jeton jetons consommation").split())
# Did you mean: the names a word may be a misspelling of, folded, read only when nothing matches.
VOCABULARY_SQL = """select name from accelerators union select family from accelerators
  union select architecture_family from accelerators union select name from models
  union select slug from number_formats union select label_en from topics union select label_fr from topics
  limit 5000"""
# An architecture family the query names, whole: its every product line is one finder link away, however many
# the named list above shows (Blackwell has more rows than it lists).
ARCHITECTURE_SQL = """select architecture_family as name, count(*) as rows from accelerators
  where architecture_family = :query collate nocase group by architecture_family"""
CHOICES_SQL = {
    "language": "select distinct language as value, language as label from articles order by 1",
    "site": "select slug as value, coalesce(name, slug) as label from sites order by 2",
    "category": "select slug as value, label_en as label from categories order by 2",
    "topic": "select slug as value, label_en || coalesce(' / ' || nullif(label_fr, label_en), '') as label from topics order by 2",
}


@dataclass
class Result:
    href: str
    title: Markup            # with <mark> around the matched words
    untitled: bool           # the listing publishes no title: the text shown is from the summary
    snippet: Markup
    language: str
    site: str
    category: str | None
    topics: list


def fold(text):
    """`text` in lower case without accents: what a reader means whichever way it is typed."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(query):
    """The words of a query as FTS5 reads them, folded: letters and digits, quotes and operators dropped."""
    return re.findall(r"\w+", fold(query))


def prefix_expression(query):
    """Every word must start a word of the name: `"h200"* AND "nvl"*`."""
    return " AND ".join(f'"{word}"*' for word in words(query))


def fts_expression(query):
    """Every word must match, itself or a synonym: `("memoire" OR "memory" OR "kv cache") AND "gpu"`
    (FTS5 reads no implicit AND next to a parenthesised group)."""
    def alternatives(word):
        options = [word, *SYNONYMS.get(word, ())]
        return "(" + " OR ".join(f'"{o}"' for o in options) + ")" if len(options) > 1 else f'"{word}"'
    return " AND ".join(alternatives(word) for word in words(query))


@dataclass
class Named:
    """An accelerator, model or term whose name matches: a link to its page."""

    href: str
    label: str
    detail: str


def named(datasette, table, rows):
    return [Named(datasette.urls.row(DATABASE, table, row["slug"]), row["label"], row["detail"]) for row in rows]


def matching_terms(rows, query_words):
    """The terms whose slug or label holds every word, folded."""
    return [row for row in rows if all(word in fold(f"{row['slug']} {row['label']}") for word in query_words)]


def marked(text):
    """`text` escaped, with FTS5's marks as <mark> tags."""
    return Markup(str(escape(text)).replace(OPEN, "<mark>").replace(CLOSE, "</mark>"))


# The takeaways column holds a JSON list: a snippet from it reads as text, its items apart.
LIST_PUNCTUATION = re.compile(r'^\["|"\]$|", "|^(…)"|"(…)$')


def snippet_text(snippet):
    """An FTS5 snippet as prose: '["Costs fall", "HBM…' becomes 'Costs fall · HBM…'."""
    return LIST_PUNCTUATION.sub(lambda m: m[1] or m[2] or ("" if m[0] in ('["', '"]') else " · "), snippet)


def result(datasette, row):
    untitled = not row["title"]
    title = row["title_marked"] if not untitled else row["label"]
    topics = [t.strip(' "') for t in (row["topic_tags"] or "").strip("[]").split(",") if t.strip(' "')]
    return Result(href=datasette.urls.row(DATABASE, "articles", row["slug"]), title=marked(title or ""),
                  untitled=untitled, snippet=marked(snippet_text(row["snippet"] or "")), language=row["language"],
                  site=row["site"], category=row["category"],
                  # a topic named like the category is already shown by the category's chip
                  topics=[t for t in topics if t != row["category"]])


def preferred_language(query, chosen_language):
    """The language whose articles rank first: French for a query with accents or French words."""
    if chosen_language:
        return ""
    accented = fold(query) != query.casefold()
    return "fr" if accented or any(word in FRENCH_WORDS for word in words(query)) else ""


def versus(query):
    """The two sides of "A vs B", or None."""
    sides = [side.strip() for side in VERSUS.split(query.strip())]
    return sides if len(sides) == 2 and all(words(side) for side in sides) else None


@dataclass
class Native:
    """The accelerators that run a searched number format natively."""

    format: str
    items: list
    total: int
    href: str


async def native_accelerators(datasette, db, query_words):
    for word in query_words:
        if word in NATIVE_FORMATS:
            label, condition, filters = NATIVE_FORMATS[word]
            rows = (await db.execute(NATIVE_SQL.format(condition=condition), {"limit": NAMED_LIMIT})).rows
            href = datasette.urls.table(DATABASE, "accelerators") + "?" + urlencode(filters)
            return Native(label, named(datasette, "accelerators", rows), rows[0]["total"] if rows else 0, href)
    return None


async def did_you_mean(db, query):
    """Names close to a query that found nothing (the 404 page's matcher), as searches to run."""
    vocabulary = sorted({fold(r[0]) for r in (await db.execute(VOCABULARY_SQL)).rows if r[0]})
    return [(name, urlencode({"q": name})) for name in closest(fold(query), vocabulary)]


async def search(request, datasette):
    db = datasette.get_database(DATABASE)
    query = request.args.get("q", "").strip()
    chosen = {name: request.args.get(name, "").strip() for name in FILTERS}
    choices = {name: [dict(r) for r in (await db.execute(sql)).rows] for name, sql in CHOICES_SQL.items()}
    sides = versus(query)
    # "A vs B" searches the articles for both names, not for the word "vs"
    searched = " ".join(sides) if sides else query
    results, expression, found, status = None, fts_expression(searched), {}, 200
    native, compare, suggestions = None, None, []
    if error := search_problem(query, words(query)):
        expression, status = "", 400
    if expression:
        prefer = preferred_language(query, chosen["language"])
        rows = await db.execute(SEARCH_SQL, {"expression": expression, "limit": LIMIT, "prefer": prefer, **chosen})
        results = [result(datasette, row) for row in rows.rows]
        per_side = [(await db.execute(NAMED_SQL["accelerators"],
                                      {"expression": prefix_expression(side), "limit": NAMED_LIMIT})).rows
                    for side in sides or [query]]
        found["accelerators"] = [item for rows in per_side for item in named(datasette, "accelerators", rows)]
        # the best match of each side, when both sides name one each
        if sides and all(per_side) and per_side[0][0]["slug"] != per_side[1][0]["slug"]:
            picked = [rows[0] for rows in per_side]
            ids = urlencode({"ids": ",".join(row["slug"] for row in picked)}, safe=",")
            compare = {"labels": [row["label"] for row in picked], "href": datasette.urls.path(f"/-/compare?{ids}")}
        names = {"expression": prefix_expression(searched), "limit": NAMED_LIMIT}
        found["models"] = named(datasette, "models", (await db.execute(NAMED_SQL["models"], names)).rows)
        terms = matching_terms((await db.execute(TERMS_SQL)).rows, words(searched))[:NAMED_LIMIT]
        found["terms"] = [Named(datasette.urls.row(DATABASE, row["tbl"], row["slug"]), row["label"], row["detail"])
                          for row in terms]
        family = (await db.execute(ARCHITECTURE_SQL, {"query": query})).first()
        if family:
            link = datasette.urls.path("/-/accelerators?" + urlencode({"architecture_family": family["name"],
                                                                        "_systems": "include"}))
            found["architecture"] = Named(link, f"All {family['rows']} {family['name']} accelerators in the finder", "")
        native = await native_accelerators(datasette, db, words(query))
        if not results and not any(found.values()):
            suggestions = await did_you_mean(db, query)
    context = {"search_q": query, "chosen": chosen, "choices": choices, "results": results, "limit": LIMIT,
               "found": found, "error": error, "native": native, "compare": compare, "suggestions": suggestions,
               "canned": f"{datasette.urls.database(DATABASE)}/search-articles", "expression": expression}
    html = await datasette.render_template("reader_search.html", context, request=request)
    return Response.html(html, status=status)


@hookimpl
def register_routes():
    return [(rf"^{PATH}$", search)]
