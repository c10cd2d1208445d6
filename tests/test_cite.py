""""Cite this" on accelerator and article row pages, through Datasette's test client."""

import html
import re
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from markupsafe import escape
from test_bad_inputs import BASE

from domain.schema import TABLES
from etl.build import build_database


@pytest.fixture(scope="module")
def release(conn):
    return conn.execute("SELECT data_release FROM release").fetchone()[0]


@pytest.fixture(scope="module")
def accelerator(conn):
    """The accelerator with the most cited values (accelerator fields, throughput, format claims)."""
    return conn.execute(
        "SELECT a.slug, a.name FROM accelerators a ORDER BY "
        "(SELECT count(*) FROM throughput t WHERE t.accelerator = a.slug) "
        "+ (SELECT count(*) FROM citations c WHERE c.table_name = 'accelerators' AND c.row_slug = a.slug) DESC, "
        "a.slug LIMIT 1").fetchone()


def textarea(page, cls):
    return html.unescape(re.search(rf'<textarea[^>]*class="{cls}"[^>]*>(.*?)</textarea>', page, re.DOTALL).group(1))


def permalink(page):
    return re.search(r'class="cite-permalink" href="([^"]+)"', page).group(1)


def utc_dates():
    """Today in UTC, and yesterday in case the request straddled midnight."""
    today = datetime.now(UTC).date()
    return {today.isoformat(), (today - timedelta(days=1)).isoformat()}


async def fetch(client, path):
    response = await client.get(path)
    assert response.status_code == 200, path
    return response.text


async def test_accelerator_page_has_the_citation_block(client, accelerator, release):
    path = f"/computekb/accelerators/{accelerator['slug']}"
    page = await fetch(client, path)
    assert permalink(page).startswith("http") and permalink(page).endswith(path)
    assert f'<code class="cite-release">{release}</code>' in page
    accessed = re.search(r'class="cite-accessed" datetime="([^"]+)"', page).group(1)
    assert accessed in utc_dates()


async def test_bibtex_is_a_misc_entry_with_url_release_and_date(client, accelerator, release):
    page = await fetch(client, f"/computekb/accelerators/{accelerator['slug']}")
    bibtex = textarea(page, "cite-bibtex")
    assert bibtex.startswith(f"@misc{{computekb-accelerators-{accelerator['slug']},")
    assert f"title = {{{{{accelerator['name']}}}}}" in bibtex
    assert f"howpublished = {{\\url{{{permalink(page)}}}}}" in bibtex
    assert re.search(rf"note = \{{[^}}]*data release {release}\}}", bibtex)
    assert re.search(r"urldate = \{(\d{4}-\d\d-\d\d)\}", bibtex).group(1) in utc_dates()
    assert bibtex.count("{") == bibtex.count("}")


async def test_markdown_links_the_label_to_the_permalink(client, accelerator, release):
    page = await fetch(client, f"/computekb/accelerators/{accelerator['slug']}")
    markdown = textarea(page, "cite-markdown")
    assert markdown.startswith(f"[{accelerator['name']}]({permalink(page)})")
    assert f"data release `{release}`" in markdown


async def test_every_value_of_an_accelerator_shows_its_source(client, conn, accelerator):
    page = await fetch(client, f"/computekb/accelerators/{accelerator['slug']}")
    cited = conn.execute("""
        SELECT c.slug, s.title, s.url FROM citations c JOIN sources s ON s.slug = c.source
        WHERE (c.table_name = 'accelerators' AND c.row_slug = :slug)
           OR (c.table_name = 'throughput' AND c.row_slug IN (SELECT slug FROM throughput WHERE accelerator = :slug))
           OR (c.table_name = 'format_support'
               AND c.row_slug IN (SELECT slug FROM format_support WHERE accelerator = :slug))""",
                         {"slug": accelerator["slug"]}).fetchall()
    assert cited
    sources = page[page.index('id="sources"'):]
    for row in cited:
        assert f'href="/computekb/citations/{row["slug"]}"' in sources, row["slug"]
        # the title, or the address without its scheme when the title is not known
        # as the page's templates escape it (an apostrophe is &#39;, where html.escape writes &#x27;)
        assert str(escape(row["title"] or row["url"].split("://", 1)[1].rstrip("/"))) in sources
        if row["url"]:
            assert f'href="{escape(row["url"])}"' in sources
    assert "[title not known" not in sources, "no derived-label mark in the page"


async def test_article_page_cites_the_article_by_its_title(client, conn, release):
    # A title may hold brackets, which Markdown link text must escape.
    article = conn.execute("SELECT slug, title FROM articles WHERE title IS NOT NULL "
                           "ORDER BY title LIKE '%[%' DESC, slug LIMIT 1").fetchone()
    page = await fetch(client, f"/computekb/articles/{article['slug']}")
    markdown = textarea(page, "cite-markdown")
    text, url = re.match(r"\[((?:\\.|[^\\\]])*)\]\(([^)]+)\)", markdown).groups()
    assert re.sub(r"\\(.)", r"\1", text) == article["title"], "the link text is the title, escaped"
    assert url.endswith(f"/computekb/articles/{article['slug']}")
    bibtex = textarea(page, "cite-bibtex")
    assert bibtex.startswith(f"@misc{{computekb-articles-{article['slug']},")
    assert f"data release {release}" in bibtex
    assert 'id="sources"' not in page, "articles state no numbers"


async def test_an_untitled_article_is_cited_without_a_title(client, conn, release):
    article = conn.execute("SELECT slug, summary FROM articles WHERE title IS NULL ORDER BY slug LIMIT 1").fetchone()
    assert article, "the data holds an article whose site publishes no title"
    page = await fetch(client, f"/computekb/articles/{article['slug']}")
    block = page[page.index('id="cite-this"'):]
    bibtex, markdown = textarea(page, "cite-bibtex"), textarea(page, "cite-markdown")
    assert "title =" not in bibtex, "no title field: the site published none"
    assert "title not published" in bibtex and "title not published" in markdown
    assert article["summary"][:20] in bibtex, "what the site published: its summary"
    assert markdown.startswith(f"[{article['slug']}](")
    for text in (bibtex, markdown):
        assert not re.search(r"\[[a-z ]*(derived|not known)[^\]]*\]", text), text
    assert 'class="label untitled">title not published' in block


async def test_other_row_pages_have_no_citation_block(client, conn):
    slug = conn.execute("SELECT slug FROM vendors LIMIT 1").fetchone()[0]
    assert 'id="cite-this"' not in await fetch(client, f"/computekb/vendors/{slug}")


def test_citation_slugs_of_fields_ending_with_another_field_cannot_collide(tmp_path):
    """accelerator acme-z's addressable_memory_gb and acme-z-addressable's memory_gb
    gave one slug (an IntegrityError); the same for number-format bit fields."""
    data = tmp_path / "data"
    shutil.copytree(BASE, data)
    record = (data / "specs/accelerators/acme-x1.yml").read_text()
    (data / "specs/accelerators/acme-z.yml").write_text(
        record.replace("acme-x1", "acme-z") + "    addressable_memory_gb: 128 GB\n")
    (data / "specs/accelerators/acme-z-addressable.yml").write_text(record.replace("acme-x1", "acme-z-addressable"))
    build_database(data, tmp_path / "kb.db")
    with sqlite3.connect(tmp_path / "kb.db") as db:
        slugs = dict(db.execute("SELECT row_slug || ' ' || field, slug FROM citations WHERE row_slug LIKE 'acme-z%'"))
    assert slugs["acme-z addressable_memory_gb"] == "accelerators-acme-z--addressable-memory-gb"
    assert slugs["acme-z-addressable memory_gb"] == "accelerators-acme-z-addressable-memory-gb"  # as published


def test_no_table_name_starts_another_so_slugs_split_one_way():
    names = [t.name.replace("_", "-") + "-" for t in TABLES]
    assert not [(a, b) for a in names for b in names if a != b and b.startswith(a)]


async def test_a_former_citation_slug_redirects_to_its_new_one(client, conn):
    row = conn.execute("SELECT slug, row_slug FROM citations WHERE table_name = 'accelerators' "
                       "AND field = 'addressable_memory_gb' LIMIT 1").fetchone()
    assert row, "the real data cites an addressable memory"
    former = f"accelerators-{row['row_slug']}-addressable-memory-gb"
    for suffix in ("", ".json"):
        response = await client.get(f"/computekb/citations/{former}{suffix}")
        assert response.status_code == 301
        assert response.headers["location"] == f"/computekb/citations/{row['slug']}{suffix}"
    assert (await client.get("/computekb/citations/accelerators-no-such-row-addressable-memory-gb")).status_code == 404
