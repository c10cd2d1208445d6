""""Cite this" on accelerator and article row pages, and the page of one citation.

The block gives the row's permalink, the data release it was read from, the date
accessed (today, UTC, by the server) and the same citation ready to paste as
Markdown and as BibTeX. An article whose site publishes no title is cited without
one: its derived label is never put in a title field, and the page says
"title not published". Accelerator pages also list the source of every value
they show: the row's own numbers, its throughput figures and its format-support
claims, each linked to its citation row.

The row page of a citation (`/computekb/citations/<slug>`) leads with what it
cites, linked to the value's anchor on its page, and its source, linked to the
page that states the value.
"""

from dataclasses import dataclass

from datasette import hookimpl
from datasette.utils import tilde_encode
from markupsafe import Markup, escape

from domain.schema import AUTHORED
from domain.units import DENSE_PRECISIONS
from serving.citation_text import Shown, bibtex_escape, markdown_escape, shown_title, today_utc, value_anchor
from serving.metadata import DATABASE
from serving.row_pages import row_page_vars
from serving.site import site_title, site_url

CITED_TABLES = ("accelerators", "articles")
# Tables whose label is derived when the row has no title: the column of the title its site publishes.
TITLE_COLUMNS = {"articles": "title"}


def citation_texts(site, table, slug, shown: Shown, permalink, release, accessed):
    """The Markdown and BibTeX forms of one citation of a row.

    A row with no published title is named by its slug, and the start of its summary is quoted
    in a note: no title field holds a label the site did not publish."""
    if shown.published:
        name, untitled = markdown_escape(shown.text), ""
        title = [f"  title = {{{{{bibtex_escape(shown.text)}}}}},"]
        note = ""
    else:
        name, untitled = slug, f" (title not published; its summary begins: “{markdown_escape(shown.text)}”)"
        title = []
        note = f"; title not published, its summary begins: “{bibtex_escape(shown.text)}”"
    markdown = (f"[{name}]({permalink}){untitled}, {site}, {table} `{slug}`, "
                f"data release `{release}`, accessed {accessed}.")
    bibtex = "\n".join([
        f"@misc{{{site}-{table}-{slug},",
        *title,
        f"  howpublished = {{\\url{{{permalink}}}}},",
        f"  note = {{{bibtex_escape(site)}, {table} table, data release {release}{note}}},",
        f"  urldate = {{{accessed}}}",
        "}",
    ])
    return markdown, bibtex


def cite_block(datasette, table, slug, shown: Shown, release):
    """The permalink is on the configured site URL: a request's Host header may name any host."""
    permalink = site_url(datasette) + datasette.urls.row(DATABASE, table, tilde_encode(slug))
    site = site_title()
    accessed = today_utc()
    markdown, bibtex = citation_texts(site, table, slug, shown, permalink, release, accessed)
    return {"permalink": permalink, "release": release, "accessed": accessed, "untitled": not shown.published,
            "markdown": markdown, "bibtex": bibtex}


VALUE_CITATIONS_SQL = """
SELECT 0 AS part, c.field AS what, c.field, c.as_written, c.unit, c.kind, c.tier, c.note, c.slug,
       s.label, s.title, s.url, s.publisher
FROM citations c JOIN sources s ON s.slug = c.source
WHERE c.table_name = 'accelerators' AND c.row_slug = :slug
UNION ALL
SELECT 1, 'throughput ' || t.precision || ' ' || t.sparsity || ' ' || t.engine, t.precision, c.as_written, c.unit,
       c.kind, c.tier, c.note, c.slug, s.label, s.title, s.url, s.publisher
FROM throughput t
JOIN citations c ON c.table_name = 'throughput' AND c.row_slug = t.slug AND c.field = 'tflops'
JOIN sources s ON s.slug = c.source
WHERE t.accelerator = :slug
UNION ALL
SELECT 2, 'supports ' || f.format, f.format, c.as_written, c.unit, c.kind, c.tier, c.note, c.slug,
       s.label, s.title, s.url, s.publisher
FROM format_support f
JOIN citations c ON c.table_name = 'format_support' AND c.row_slug = f.slug
JOIN sources s ON s.slug = c.source
WHERE f.accelerator = :slug
"""


ACCELERATOR_FIELDS = [f.name for f in AUTHORED["accelerators"].columns]


def value_order(row):
    """Row fields in schema order, then throughput by precision, then format claims."""
    order = ACCELERATOR_FIELDS if row["part"] == 0 else DENSE_PRECISIONS if row["part"] == 1 else []
    position = order.index(row["field"]) if row["field"] in order else len(order)
    return row["part"], position, row["what"]


def row_citation_data(conn, table, slug):
    """(name shown, data release, value citations or None) of one row, read in one go; None if there is no such row.

    One trip to Datasette's query thread instead of one per query: these are
    fixed, indexed lookups of a few rows.
    """
    title = f"[{TITLE_COLUMNS[table]}]" if table in TITLE_COLUMNS else f"[{AUTHORED[table].label}]"
    row = conn.execute(f"SELECT [{AUTHORED[table].label}], {title}, (SELECT data_release FROM release) "
                       f"FROM [{table}] WHERE slug = ?", (slug,)).fetchone()
    if row is None:
        return None
    label, title, release = row
    shown = shown_title(title, label)
    values = None
    if table == "accelerators":
        cursor = conn.execute(VALUE_CITATIONS_SQL, {"slug": slug})
        columns = [d[0] for d in cursor.description]
        values = sorted((dict(zip(columns, row)) for row in cursor), key=value_order)
    return shown, release, values


def value_rows(values, citation_url):
    """The rows of the "where every value comes from" table, escaped.

    Built here rather than in the template: in Datasette's async Jinja, a loop
    over 30 rows of 7 fields costs more than the rest of the row page. (Plain
    f-strings and escape(): Markup.format goes through the slower string.Formatter.)
    """
    def row(c):
        shown = shown_title(c["title"], c["label"])
        title = f'<a href="{escape(c["url"])}">{escape(shown.text)}</a>' if c["url"] else escape(shown.text)
        if not shown.published:
            title += ' <small class="label untitled">title not known</small>'

        note = f"<br><small>{escape(c['note'])}</small>" if c["note"] else ""
        return (f"<tr><td data-label=\"Value\"><code>{escape(c['what'])}</code></td>"
                f"<td data-label=\"As written\">{escape(c['as_written'] or '')}</td>"
                f"<td data-label=\"Source\">{title} <small>({escape(c['publisher'])})</small></td>"
                f"<td data-label=\"Kind\">{escape(c['kind'])}<br><small class=\"tier\">{escape(c['tier'])}</small></td>"
                f"<td data-label=\"Citation\"><a href=\"{escape(citation_url(c['slug']))}\">{escape(c['slug'])}</a>{note}</td></tr>\n")
    return Markup("".join(row(c) for c in values))


CITATION_SQL = """
select c.table_name, c.row_slug, c.field, c.as_written, c.kind, c.tier, c.note,
       s.slug as source, s.url, s.title, s.label, s.publisher, s.published, s.retrieved,
       t.accelerator as throughput_of, t.precision, t.sparsity, t.engine,
       f.accelerator as format_of, f.format
from citations c join sources s on s.slug = c.source
left join throughput t on c.table_name = 'throughput' and t.slug = c.row_slug
left join format_support f on c.table_name = 'format_support' and f.slug = c.row_slug
where c.slug = :slug
"""


@dataclass
class CitationCard:
    """What one citation says, for its page: the value it cites (linked to the value's anchor where its
    page has one) and the page that states it (linked to that page)."""
    cited: str                    # what is cited, in words
    cited_href: str
    as_written: str | None
    kind: str
    tier: str
    note: str | None
    source: Shown                 # the source's title, or its address when the title is not known
    source_url: str | None
    source_row: str               # the sources row: publisher, dates, notes
    publisher: str
    published: str | None
    retrieved: str


def cited_target(urls, c):
    """(what is cited, its URL): the anchor of the value on the accelerator's spec sheet for its own values,
    throughput figures and format claims; the row page otherwise."""
    def sheet(slug):
        return urls.row(DATABASE, "accelerators", tilde_encode(slug))

    if c["table_name"] == "accelerators":
        return f"{c['field']} of {c['row_slug']}", f"{sheet(c['row_slug'])}#{c['field']}"
    if c["throughput_of"]:
        anchor = value_anchor(c["precision"], c["engine"], c["sparsity"])
        return (f"{c['precision']} {c['sparsity']} {c['engine']} throughput of {c['throughput_of']}",
                f"{sheet(c['throughput_of'])}#{anchor}")
    if c["format_of"]:
        return f"{c['format']} support of {c['format_of']}", f"{sheet(c['format_of'])}#section-compute"
    return (f"{c['field']} of {c['table_name']} {c['row_slug']}",
            urls.row(DATABASE, c["table_name"], tilde_encode(c["row_slug"])))


def citation_card(urls, c):
    cited, href = cited_target(urls, c)
    return CitationCard(cited=cited, cited_href=href, as_written=c["as_written"], kind=c["kind"], tier=c["tier"],
                        note=c["note"], source=shown_title(c["title"], c["label"]), source_url=c["url"],
                        source_row=urls.row(DATABASE, "sources", tilde_encode(c["source"])),
                        publisher=c["publisher"], published=c["published"], retrieved=c["retrieved"])


def read_citation(conn, slug):
    cursor = conn.execute(CITATION_SQL, {"slug": slug})
    names = [d[0] for d in cursor.description]
    row = cursor.fetchone()
    return dict(zip(names, row)) if row else None


@hookimpl
def extra_template_vars(view_name, database, table, request, datasette):
    if view_name != "row" or database != DATABASE or table not in (*CITED_TABLES, "citations"):
        return {}
    if table == "citations":
        return row_page_vars(datasette, request, read_citation,
                             lambda slug, found: {"citation_card": citation_card(datasette.urls, found)} if found else {})

    def made(slug, found):
        if found is None:  # no such row: Datasette's row page says so
            return {}
        shown, release, values = found
        extra = {"cite": cite_block(datasette, table, slug, shown, release)}
        if values is not None:
            citations = datasette.urls.table(DATABASE, "citations")
            extra["value_citations"] = value_rows(values, lambda slug: f"{citations}/{tilde_encode(slug)}")
        return extra
    return row_page_vars(datasette, request, lambda conn, slug: row_citation_data(conn, table, slug), made)
