""""Cite this" on accelerator and article row pages.

The block gives the row's permalink, the data release it was read from, the date
accessed (today, UTC, by the server) and the same citation ready to paste as
Markdown and as BibTeX. Accelerator pages also list the source of every value
they show: the row's own numbers, its throughput figures and its format-support
claims, each linked to its citation row.
"""

from datasette import hookimpl
from datasette.utils import tilde_encode, urlsafe_components
from markupsafe import Markup, escape

from etl.citation_text import bibtex_escape, markdown_escape, today_utc
from etl.load import DENSE_PRECISIONS
from etl.metadata import DATABASE
from etl.schema import AUTHORED
from etl.site import site_url

CITED_TABLES = ("accelerators", "articles")
def citation_texts(site, table, slug, label, permalink, release, accessed):
    """The Markdown and BibTeX forms of one citation of a row."""
    markdown = (f"[{markdown_escape(label)}]({permalink}), {site}, {table} `{slug}`, "
                f"data release `{release}`, accessed {accessed}.")
    bibtex = "\n".join([
        f"@misc{{{site}-{table}-{slug},",
        f"  title = {{{{{bibtex_escape(label)}}}}},",
        f"  howpublished = {{\\url{{{permalink}}}}},",
        f"  note = {{{bibtex_escape(site)}, {table} table, data release {release}}},",
        f"  urldate = {{{accessed}}}",
        "}",
    ])
    return markdown, bibtex


def cite_block(datasette, table, slug, label, release):
    """The permalink is on the configured site URL: a request's Host header may name any host."""
    permalink = site_url(datasette) + datasette.urls.row(DATABASE, table, tilde_encode(slug))
    site = datasette.metadata("title") or DATABASE
    accessed = today_utc()
    markdown, bibtex = citation_texts(site, table, slug, label, permalink, release, accessed)
    return {"permalink": permalink, "release": release, "accessed": accessed,
            "markdown": markdown, "bibtex": bibtex}


VALUE_CITATIONS_SQL = """
SELECT 0 AS part, c.field AS what, c.field, c.as_written, c.unit, c.kind, c.tier, c.note, c.slug,
       s.label, s.url, s.publisher
FROM citations c JOIN sources s ON s.slug = c.source
WHERE c.table_name = 'accelerators' AND c.row_slug = :slug
UNION ALL
SELECT 1, 'throughput ' || t.precision || ' ' || t.sparsity || ' ' || t.engine, t.precision, c.as_written, c.unit,
       c.kind, c.tier, c.note, c.slug, s.label, s.url, s.publisher
FROM throughput t
JOIN citations c ON c.table_name = 'throughput' AND c.row_slug = t.slug AND c.field = 'tflops'
JOIN sources s ON s.slug = c.source
WHERE t.accelerator = :slug
UNION ALL
SELECT 2, 'supports ' || f.format, f.format, c.as_written, c.unit, c.kind, c.tier, c.note, c.slug,
       s.label, s.url, s.publisher
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
    """(label, data release, value citations or None) of one row, read in one go; None if there is no such row.

    One trip to Datasette's query thread instead of one per query: these are
    fixed, indexed lookups of a few rows.
    """
    row = conn.execute(f"SELECT [{AUTHORED[table].label}], (SELECT data_release FROM release) "
                       f"FROM [{table}] WHERE slug = ?", (slug,)).fetchone()
    if row is None:
        return None
    label, release = row
    values = None
    if table == "accelerators":
        cursor = conn.execute(VALUE_CITATIONS_SQL, {"slug": slug})
        columns = [d[0] for d in cursor.description]
        values = sorted((dict(zip(columns, row)) for row in cursor), key=value_order)
    return label, release, values


def value_rows(values, citation_url):
    """The rows of the "where every value comes from" table, escaped.

    Built here rather than in the template: in Datasette's async Jinja, a loop
    over 30 rows of 7 fields costs more than the rest of the row page. (Plain
    f-strings and escape(): Markup.format goes through the slower string.Formatter.)
    """
    def row(c):
        title = f'<a href="{escape(c["url"])}">{escape(c["label"])}</a>' if c["url"] else escape(c["label"])
        note = f"<br><small>{escape(c['note'])}</small>" if c["note"] else ""
        return (f"<tr><td><code>{escape(c['what'])}</code></td><td>{escape(c['as_written'] or '')}</td>"
                f"<td>{title} <small>({escape(c['publisher'])})</small></td>"
                f"<td>{escape(c['kind'])}<br><small class=\"tier\">{escape(c['tier'])}</small></td>"
                f"<td><a href=\"{escape(citation_url(c['slug']))}\">{escape(c['slug'])}</a>{note}</td></tr>\n")
    return Markup("".join(row(c) for c in values))


@hookimpl
def extra_template_vars(view_name, database, table, request, datasette):
    if view_name != "row" or database != DATABASE or table not in CITED_TABLES:
        return {}

    async def inner():
        slug = urlsafe_components(request.url_vars["pks"])[0]
        found = await datasette.get_database(DATABASE).execute_fn(lambda conn: row_citation_data(conn, table, slug))
        if found is None:  # no such row: Datasette's row page says so
            return {}
        label, release, values = found
        extra = {"cite": cite_block(datasette, table, slug, label, release)}
        if values is not None:
            citations = datasette.urls.table(DATABASE, "citations")
            extra["value_citations"] = value_rows(values, lambda slug: f"{citations}/{tilde_encode(slug)}")
        return extra
    return inner
