"""The article page: the row page of `articles` as a reader reads it.

Datasette's row page shows one wide row of column names and JSON lists; a
reader who found an article wants to open it. The page leads with its title,
summary and takeaways, then where to read it: its address when one is known,
else a plain statement that it is not, with a web search for its exact title
and site (labelled as a search, never as the article). Site, category and
topics link to filtered lists, the translation and the accelerators it
discusses to their pages, one click each. Datasette's own row table stays on
the page, folded.
"""

import json
import urllib.parse
from dataclasses import dataclass

from datasette import hookimpl

from serving.citation_text import shown_title
from serving.metadata import DATABASE
from serving.row_pages import is_row_page, row_page_vars

WEB_SEARCH = "https://duckduckgo.com/?"
SEARCH_WORDS = 12  # an untitled article is searched for by the start of its summary

ARTICLE_SQL = """
select a.slug, a.language, a.title, a.label, a.subtitle, a.summary, a.takeaways, a.published, a.reading_minutes,
  a.author, a.url, a.site, coalesce(s.name, a.site) as site_name, a.category,
  coalesce(case a.language when 'fr' then c.label_fr end, c.label_en, a.category) as category_label,
  a.translation, t.title as translation_title, t.label as translation_label, t.language as translation_language
from articles a left join sites s on s.slug = a.site left join categories c on c.slug = a.category
  left join articles t on t.slug = a.translation
where a.slug = :slug
"""
LINKED_SQL = {
    "accelerators": """select x.slug, x.name as label from article_accelerators l join accelerators x on x.slug = l.accelerator
        where l.article = :slug order by x.name""",
    "topics": """select x.slug, case :language when 'fr' then x.label_fr else x.label_en end as label
        from article_topics l join topics x on x.slug = l.topic where l.article = :slug order by label""",
}


@dataclass(frozen=True)
class Link:
    href: str
    label: str


@dataclass(frozen=True)
class ArticlePage:
    title: str
    title_published: bool
    language: str
    subtitle: str | None
    summary: str
    takeaways: list
    published: str | None
    reading_minutes: int | None
    author: str | None
    url: str | None
    web_search: str
    site: Link
    category: Link | None
    translation: Link | None
    translation_language: str | None
    accelerators: list
    topics: list


def web_search_url(title, title_published, site_name):
    """A web search for the article: its exact title (or the start of its summary) in quotes, and its site."""
    words = title if title_published else " ".join(title.rstrip("…").split()[:SEARCH_WORDS])
    return WEB_SEARCH + urllib.parse.urlencode({"q": f'"{words}" {site_name}'})


def filtered(datasette, table, **where):
    return datasette.urls.table(DATABASE, table) + "?" + urllib.parse.urlencode(where)


def article_page(datasette, row, linked):
    shown = shown_title(row["title"], row["label"])
    translation = None
    if row["translation"]:
        other = shown_title(row["translation_title"], row["translation_label"])
        translation = Link(datasette.urls.row(DATABASE, "articles", row["translation"]), other.text)
    return ArticlePage(
        title=shown.text, title_published=shown.published, language=row["language"],
        # the English listings repeat the summary as the subtitle: print it once
        subtitle=row["subtitle"] if row["subtitle"] != row["summary"] else None,
        summary=row["summary"], takeaways=json.loads(row["takeaways"] or "[]"), published=row["published"],
        reading_minutes=row["reading_minutes"], author=row["author"], url=row["url"],
        web_search=web_search_url(shown.text, shown.published, row["site_name"]),
        site=Link(filtered(datasette, "articles", site=row["site"]), row["site_name"]),
        category=Link(filtered(datasette, "articles", category=row["category"]), row["category_label"])
        if row["category"] else None,
        translation=translation, translation_language=row["translation_language"],
        accelerators=[Link(datasette.urls.row(DATABASE, "accelerators", r["slug"]), r["label"])
                      for r in linked["accelerators"]],
        topics=[Link(filtered(datasette, "articles", _facet_array="topic_tags", topic_tags__arraycontains=r["slug"]),
                     r["label"]) for r in linked["topics"]],
    )


def rows(conn, sql, params):
    cursor = conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor]


def read_article(conn, slug):
    """The article's row and its linked rows, in one trip to Datasette's query thread."""
    found = rows(conn, ARTICLE_SQL, {"slug": slug})
    if not found:
        return None, {}
    params = {"slug": slug, "language": found[0]["language"]}
    return found[0], {name: rows(conn, sql, params) for name, sql in LINKED_SQL.items()}


@hookimpl
def extra_template_vars(view_name, database, table, request, datasette):
    if not is_row_page(view_name, database, table, "articles"):
        return {}

    def made(slug, found):
        row, linked = found
        return {"article": article_page(datasette, row, linked)} if row else {}
    return row_page_vars(datasette, request, read_article, made)
