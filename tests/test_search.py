"""Ranked, highlighted, accent-insensitive search over the articles."""

import pytest

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
