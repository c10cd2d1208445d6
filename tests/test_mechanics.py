"""How the build and the pages work, on the fixture data (tests/fixture/data): the
cases these tests need are written there, whatever the real data holds.

Expected values are written out here from the fixture's YAML, never taken from
the code that makes them.
"""

import shutil
import sqlite3

import pytest

from etl.build import build_database
from serving.metadata import full_metadata
from serving.paths import METADATA_YML
from serving.table_json import EXTRAS_QUERY, facet_results
from tests.conftest import FIXTURE_DATA

# Pages the serving speed-ups change: CI runs these again with the speed-ups off.
pytestmark = pytest.mark.speedups

# --- what the build writes ------------------------------------------------------------


def rows(db, sql, params=()):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql, params).fetchall()


def test_a_page_published_by_a_vendor_states_a_vendor_spec(fixture_db):
    # acme-news is Acme's press release: a vendor's page, whatever its format;
    # review-b1 is a third party's article.
    kinds = dict(rows(fixture_db, "select source, group_concat(distinct kind) from citations group by source"))
    assert kinds["acme-news"] == "vendor-spec"
    assert kinds["acme-datasheet"] == "vendor-spec"
    assert kinds["review-b1"] == "third-party"


def test_a_label_made_from_the_summary_says_so(fixture_db):
    labels = dict(rows(fixture_db, "select slug, label from articles"))
    assert labels["untitled-power-note"] == "Power and cost of running the B1 all day."
    assert labels["acme-x1-review"] == "A look at the Acme X1"
    derived = dict(rows(fixture_db, "select slug, label_derived from articles"))
    assert derived == {"untitled-power-note": 1, "acme-x1-review": 0, "acme-x1-revue-fr": 0}


async def test_the_page_of_an_untitled_article_marks_its_label_from_the_flag(fixture_client):
    page = (await fixture_client.get("/computekb/articles/untitled-power-note")).text
    assert '<h1>Power and cost of running the B1 all day. <span class="label untitled"' in page
    assert "[label derived" not in page, "the stored label carries no mark"


def test_a_rebuild_leaves_the_file_a_reader_has_open_whole(tmp_path):
    """A server that has the last database open keeps reading that file, whole
    and unchanged, while a rebuild puts a new file in its place: the new database
    is renamed over the old one, never written into it."""
    data = shutil.copytree(FIXTURE_DATA, tmp_path / "data")
    db = tmp_path / "out" / "computekb.db"
    build_database(data, db)
    with open(db, "rb") as reader:
        before = reader.read()
        accelerators = data / "specs" / "accelerators" / "acme.yml"
        accelerators.write_text(accelerators.read_text(encoding="utf-8").replace("96 GB", "192 GB"), encoding="utf-8")
        build_database(data, db)
        reader.seek(0)
        assert reader.read() == before
    assert rows(db, "select memory_gb from accelerators where slug = 'acme-x1'") == [(192,)]
    assert sorted(p.name for p in db.parent.iterdir() if p.name.endswith(".tmp")) == []


# --- facets -----------------------------------------------------------------------------
# topic_tags of the fixture articles: memory 3, bandwidth 2, power 2, cost 1 (four tags);
# in English only: memory 2, bandwidth 1, cost 1, power 1.

@pytest.mark.parametrize("query", [
    "",                                       # every article
    "language=en",                            # equal values of another facet column
    "topic_tags__arraycontains=memory",       # any other filter: the rows are counted
])
@pytest.mark.parametrize("size, truncated", [(3, True), (4, False), (10, False)])
async def test_a_tag_facet_is_marked_truncated_when_it_shows_fewer_tags_than_there_are(fixture_client, query, size, truncated):
    data = (await fixture_client.get(f"/computekb/articles.json?{query}&_facet_size={size}&{EXTRAS_QUERY}")).json()
    facet = facet_results(data)["topic_tags"]
    assert len(facet["results"]) == min(size, 4)
    assert facet["truncated"] is truncated


async def test_tag_facet_counts(fixture_client):
    async def counts(query):
        data = (await fixture_client.get(f"/computekb/articles.json?{query}&{EXTRAS_QUERY}")).json()
        return {r["value"]: r["count"] for r in facet_results(data)["topic_tags"]["results"]}
    assert await counts("") == {"memory": 3, "bandwidth": 2, "power": 2, "cost": 1}
    assert await counts("language=en") == {"memory": 2, "bandwidth": 1, "cost": 1, "power": 1}
    assert await counts("topic_tags__arraycontains=power") == {"memory": 2, "power": 2, "bandwidth": 1, "cost": 1}
    assert await counts("language=fr&_search=bande") == {"memory": 1, "bandwidth": 1, "power": 1}


# --- templates ----------------------------------------------------------------------------

async def test_the_footer_names_the_data_release_and_where_numbers_come_from(fixture_client, fixture_db):
    (release, built_at), = rows(fixture_db, "select data_release, built_at from release")
    for path in ("/", "/computekb", "/computekb/accelerators", "/computekb/accelerators/acme-x1"):
        page = (await fixture_client.get(path)).text
        footer = page[page.index("<footer"):]
        assert f"<code>{release}</code>" in footer and f"built {built_at}" in footer, path
        assert 'href="/computekb/release"' in footer
        assert f"Sources: {full_metadata(METADATA_YML)['source']}" in footer
        assert "https://creativecommons.org/licenses/by/4.0/" in footer


async def test_the_home_page_links_to_the_tables_of_the_database(fixture_client):
    page = (await fixture_client.get("/")).text
    for link in ("/computekb/accelerators?memory_gb__gte=80", "/-/what-fits", "/computekb/articles",
                 "/-/search", "/computekb/citations", "/computekb/sources"):
        assert f'href="{link}' in page, link


# --- the search page ------------------------------------------------------------------------

@pytest.mark.parametrize("q, expected", [
    ("memoire", {"acme-x1-revue-fr"}),                        # "mémoire", accents ignored
    ("X1", {"acme-x1-review", "acme-x1-revue-fr"}),
    ("power cost", {"untitled-power-note"}),
    ("nothing-of-the-sort", set()),
])
async def test_the_search_page_finds_every_match_best_first_with_marks(fixture_client, q, expected):
    response = await fixture_client.get(f"/computekb/search-articles.json?q={q}&_shape=array")
    assert response.status_code == 200
    found = response.json()
    assert {r["article"] for r in found} == expected
    assert [r["bm25"] for r in found] == sorted(r["bm25"] for r in found)
    assert all("<mark>" in r["snippet"] + r["title"] for r in found)
