"""The article page: title, where to read the article, and one-click links (fixture database)."""

from plugins.reader_article import web_search_url


def test_a_web_search_asks_for_the_exact_title_and_the_site():
    assert web_search_url("A look at the Acme X1", True, "Example Site") == (
        "https://duckduckgo.com/?q=%22A+look+at+the+Acme+X1%22+Example+Site")


def test_an_untitled_article_is_searched_by_the_first_words_of_its_summary():
    label = "one two three four five six seven eight nine ten eleven twelve thirteen…"
    assert web_search_url(label, False, "S") == (
        "https://duckduckgo.com/?q=%22one+two+three+four+five+six+seven+eight+nine+ten+eleven+twelve%22+S")


async def test_an_article_with_an_address_links_to_it_under_its_title(fixture_client):
    page = (await fixture_client.get("/computekb/articles/acme-x1-review")).text
    assert "<title>A look at the Acme X1</title>" in page
    assert "<h1>A look at the Acme X1</h1>" in page
    assert '<a class="article-link" href="https://example.org/acme-x1-review">' in page
    assert "article-web-search" not in page
    assert '<a href="/computekb/accelerators/acme-x1">X1</a>' in page
    assert 'href="/computekb/articles?category=hardware">Hardware</a>' in page


async def test_an_article_without_an_address_says_so_and_offers_a_labelled_web_search(fixture_client):
    page = (await fixture_client.get("/computekb/articles/untitled-power-note")).text
    assert "The address of this article is not known" in page
    assert 'class="article-web-search" href="https://duckduckgo.com/?q=%22Power+and+cost+of+running+the+B1+all+day.' in page
    assert "(a web search, not the article)" in page
    assert "article-link" not in page


async def test_a_french_article_is_marked_french_with_french_labels(fixture_client):
    page = (await fixture_client.get("/computekb/articles/acme-x1-revue-fr")).text
    assert '<article class="article-page" lang="fr">' in page
    assert ">Mémoire</a>" in page and ">Bande passante</a>" in page
