"""Every URL the site offers answers 2xx, 3xx or 4xx, with the security headers.

A crawler follows every link of every page of a small database (the bad-input
corpus' base data), and asks each table, row and query page in every output
format Datasette offers, the database page included (`/computekb.csv` was a 500).
"""

import re
import urllib.parse
from collections import Counter

import pytest
from test_bad_inputs import BASE

from etl.build import build_database
from serving.headers import SECURITY_HEADERS
from serving.serve import make_datasette
from serving.site import DATASETTE_MAJOR

LINK = re.compile(r"""(?:href|src)="([^"#]*)""")
MAX_PAGES = 3000
QUERIES_PER_PATH = 4  # sort, facet and page links multiply: a few of each path's query strings suffice


@pytest.fixture(scope="module")
async def small_client(tmp_path_factory):
    db = tmp_path_factory.mktemp("small") / "computekb.db"
    build_database(BASE, db)
    ds = make_datasette(db)
    await ds.invoke_startup()
    return ds


def links(base, html):
    """Same-site links of a page, as paths with their query strings."""
    for found in LINK.findall(html):
        url = urllib.parse.urlsplit(urllib.parse.urljoin(base, found.replace("&amp;", "&")))
        if url.netloc in ("", "localhost", "127.0.0.1:8001") and url.path.startswith("/"):
            yield url.path + (f"?{url.query}" if url.query else "")


def with_formats(path, extensions):
    """The path in each output format: `/db/table.json`, `/db/table.csv`..."""
    plain, _, query = path.partition("?")
    if plain.startswith(("/-/", "/assets/")) or "." in plain.rsplit("/", 1)[-1]:
        return []
    return [f"{plain}.{extension}" + (f"?{query}" if query else "") for extension in extensions]


async def test_every_linked_url_in_every_format_answers_below_500(small_client):
    extensions = ["json", "csv", *small_client.renderers]
    seen, queue, failures, queries = set(), ["/", "/computekb", "/computekb.csv"], [], Counter()
    while queue and len(seen) < MAX_PAGES:
        path = queue.pop()
        plain = path.partition("?")[0]
        if path in seen or queries[plain] >= QUERIES_PER_PATH:
            continue
        seen.add(path)
        queries[plain] += "?" in path
        response = await small_client.client.get(path)
        if response.status_code >= 500 and not (DATASETTE_MAJOR >= 1 and plain.startswith("/-/dashboards")):
            failures.append(f"{response.status_code} {path}")  # dashboards on 1.0: DASHBOARD_PAGES_FAIL_ON_1
        missing = [name for name in SECURITY_HEADERS if name not in response.headers]
        if missing:
            failures.append(f"no {', '.join(missing)} on {path}")
        if "html" in response.headers.get("content-type", ""):
            for link in links("http://localhost" + path, response.text):
                queue += [link, *with_formats(link, extensions)]
    assert 200 < len(seen) < MAX_PAGES, f"{len(seen)} pages: every table, row and query page, once"
    assert not failures, "\n".join(failures)
