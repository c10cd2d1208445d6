"""Ranked, highlighted, accent-insensitive search over the articles."""

import html
import re

import pytest

from plugins import reader_search
from plugins.highlight import with_marks


def test_only_mark_tags_survive_escaping():
    html = str(with_marks('<script>alert(1)</script> <mark>KV</mark> "<b>x</b>"'))
    assert "<script>" not in html and "<b>" not in html
    assert "<mark>KV</mark>" in html


@pytest.mark.parametrize("q, language, word", [("memoire", "fr", "mémoire"),
                                                ("bande passante", "fr", "bande passante"),
                                                ("KV cache", "en", "kv cache")])
async def test_search_query_ranks_and_highlights(client, conn, q, language, word):
    response = await client.get(f"/computekb/search-articles.json?q={q}&_shape=array")
    rows = response.json()
    assert rows and response.status_code == 200
    assert [r["bm25"] for r in rows] == sorted(r["bm25"] for r in rows)
    assert all("<mark>" in (r["snippet"] or "") + (r["title"] or "") for r in rows)
    languages = {r["language"] for r in rows}
    assert language in languages
    top = conn.execute("select language, lower(coalesce(title, '') || ' ' || summary || ' ' || coalesce(subtitle, '')) "
                       "from articles where slug = ?", (rows[0]["article"],)).fetchone()
    assert word in top[1]


async def test_search_page_renders_highlights_as_html(client):
    html = (await client.get("/computekb/search-articles?q=memoire")).text
    assert "<mark>" in html.split("</form>", 1)[-1]


REFERENCE_SQL = """select a.slug from articles_fts join articles a on a.rowid = articles_fts.rowid
where articles_fts match ? and (? = '' or a.language = ?) and (? = '' or a.site = ?) and (? = '' or a.category = ?)
  and (? = '' or a.slug in (select article from article_topics where topic = ?))
order by bm25(articles_fts), a.slug limit ?"""


@pytest.mark.parametrize("chosen", [{}, {"language": "fr"}, {"site": "deep-dives"}, {"category": "costs"},
                                    {"topic": "costs"}, {"language": "en", "site": "lecompute"}])
def test_reader_search_lists_the_best_matches_that_pass_the_filters(conn, chosen):
    """With a limit smaller than the matches, the search must rank before it cuts and filter
    before it cuts: the best `limit` matches among the articles that pass the filters."""
    filters = {name: chosen.get(name, "") for name in reader_search.FILTERS}
    expression = reader_search.fts_expression("gpu")
    found = [r["slug"] for r in conn.execute(reader_search.SEARCH_SQL, {"expression": expression, "limit": 3, "prefer": "", **filters})]
    arguments = [value for value in filters.values() for value in (value, value)]
    expected = [r[0] for r in conn.execute(REFERENCE_SQL, [expression, *arguments, 3])]
    every = conn.execute(REFERENCE_SQL, [expression, *arguments, 1000]).fetchall()
    assert len(every) > 3, "the test needs more matches than the limit"
    assert found == expected


def test_a_query_is_folded_before_its_synonyms_are_looked_up():
    assert reader_search.words("MÉMOIRE coût") == ["memoire", "cout"]
    assert reader_search.fts_expression("mémoire") == reader_search.fts_expression("memoire")
    assert reader_search.fts_expression("Coût") == '("cout" OR "costs" OR "prix")'


def test_names_are_matched_as_word_prefixes():
    assert reader_search.prefix_expression("MI300 x") == '"mi300"* AND "x"*'


def test_a_term_matches_when_every_folded_word_is_in_its_slug_or_label():
    rows = [{"slug": "memory", "label": "Memory / Mémoire"}, {"slug": "fp8-e4m3", "label": "FP8 E4M3"}]
    assert reader_search.matching_terms(rows, ["memoire"]) == [rows[0]]
    assert reader_search.matching_terms(rows, ["fp8", "e4m3"]) == [rows[1]]
    assert reader_search.matching_terms(rows, ["fp8", "memoire"]) == []


async def test_the_header_search_lists_the_accelerator_it_names_before_articles(fixture_client):
    page = (await fixture_client.get("/-/search?q=X1")).text
    assert page.index('href="/computekb/accelerators/acme-x1"') < page.index('id="found-articles"')
    assert 'href="/computekb/accelerators/acme-x2"' not in page


@pytest.mark.parametrize("q", ["mémoire", "memoire", "MÉMOIRE"])
async def test_accents_and_case_give_the_same_articles(fixture_client, q):
    page = (await fixture_client.get(f"/-/search?q={q}&language=fr")).text
    assert 'href="/computekb/articles/acme-x1-revue-fr"' in page
    assert '1 article.' in page


@pytest.mark.parametrize("snippet, expected", [
    ('["Costs fall", "HBM prices', "Costs fall · HBM prices"),
    ('…"cloud", "costs"]', "…cloud · costs"),
    ("A plain summary…", "A plain summary…"),
])
def test_a_snippet_of_a_list_column_reads_as_text(snippet, expected):
    from plugins.reader_search import snippet_text
    assert snippet_text(snippet) == expected


@pytest.mark.parametrize("query, chosen, expected", [("mémoire", "", "fr"), ("cout des cartes", "", "fr"),
                                                     ("memory bandwidth", "", ""), ("mémoire", "en", "")])
def test_a_french_query_prefers_french_articles_unless_a_language_is_chosen(query, chosen, expected):
    assert reader_search.preferred_language(query, chosen) == expected


@pytest.mark.parametrize("query, expected", [("H100 vs H200", ["H100", "H200"]), ("mi300x versus b200", ["mi300x", "b200"]),
                                             ("H100 vs. H200", ["H100", "H200"]), ("vs code", None), ("H100 vs", None)])
def test_a_versus_query_names_two_sides(query, expected):
    assert reader_search.versus(query) == expected


async def test_a_query_that_finds_nothing_offers_close_names(fixture_client):
    html = (await fixture_client.get("/-/search?q=acme+onne")).text
    assert 'class="did-you-mean"' in html and '?q=acme+one">acme one</a>' in html


async def test_an_architecture_named_in_full_leads_to_all_its_accelerators(client):
    page = (await client.get("/-/search?q=blackwell")).text
    link = re.search(r'<p class="architecture-link"><a href="([^"]+)">All (\d+) Blackwell accelerators', page)
    assert link, "the named list shows twelve; the finder link shows every product line"
    assert html.unescape(link[1]) == "/-/accelerators?architecture_family=Blackwell&_systems=include"
    finder = (await client.get(html.unescape(link[1]))).text
    for slug in ("nvidia-rtx-5090", "nvidia-gb10", "nvidia-jetson-agx-thor", "nvidia-b200", "nvidia-gb200-nvl72"):
        assert f'href="/computekb/accelerators/{slug}"' in finder, slug
    assert len(set(re.findall(r'data-slug="([a-z0-9-]+)"', finder))) == int(link[2])
