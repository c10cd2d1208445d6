"""The Atom feed of the articles (datasette-atom, from a canned query)."""

import datetime
import xml.etree.ElementTree as ET

ATOM = "{http://www.w3.org/2005/Atom}"


async def feed(client):
    response = await client.get("/computekb/articles-feed.atom")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/xml")
    return ET.fromstring(response.content)


def rfc3339(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


async def test_feed_is_atom_with_one_entry_per_article(client, conn):
    root = await feed(client)
    assert root.tag == f"{ATOM}feed"
    for required in ("id", "title", "updated"):
        assert root.find(f"{ATOM}{required}").text
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == conn.execute("select count(*) from articles").fetchone()[0]
    ids = [e.find(f"{ATOM}id").text for e in entries]
    assert len(set(ids)) == len(ids)


async def test_every_entry_is_valid_atom(client):
    # RFC 4287: each entry has id, title, updated (RFC 3339) and, with no feed-level
    # author, an author of its own; its link is the article's permalink.
    for entry in (await feed(client)).findall(f"{ATOM}entry"):
        assert entry.find(f"{ATOM}title").text
        assert rfc3339(entry.find(f"{ATOM}updated").text).tzinfo is not None
        assert entry.find(f"{ATOM}author/{ATOM}name").text
        link = entry.find(f"{ATOM}link").get("href")
        assert link.startswith("/computekb/articles/")


async def test_entries_carry_their_titles_or_marked_labels(client, conn):
    titles = {e.find(f"{ATOM}title").text for e in (await feed(client)).findall(f"{ATOM}entry")}
    labels = {r[0] for r in conn.execute("select label from articles")}
    assert titles == labels
