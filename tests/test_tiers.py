"""Source authority made visible: each value's tier on the row page and the compare page, each
accelerator's strongest and weakest tier, the footer's count per tier, and the methodology page."""

import re

from domain.schema import TIERS


def rank(tier):
    return TIERS.index(tier)


def sources_section(page):
    return page[page.index('id="sources"'):]


async def test_every_source_has_a_tier_and_every_citation_copies_it(conn):
    assert conn.execute("SELECT count(*) FROM sources WHERE tier IS NULL").fetchone()[0] == 0
    mismatched = conn.execute("SELECT c.slug FROM citations c JOIN sources s ON s.slug = c.source "
                              "WHERE c.tier IS NOT s.tier").fetchall()
    assert mismatched == []


async def test_no_value_cites_an_aggregator(conn):
    assert conn.execute("SELECT count(*) FROM citations WHERE tier = 'aggregator'").fetchone()[0] == 0


async def test_strongest_and_weakest_tier_span_the_accelerators_values(conn):
    for row in conn.execute("SELECT slug, strongest_tier, weakest_tier FROM accelerators"):
        tiers = [r[0] for r in conn.execute("""
            SELECT c.tier FROM citations c
            WHERE (c.table_name = 'accelerators' AND c.row_slug = :slug)
               OR (c.table_name = 'throughput' AND c.row_slug IN (SELECT slug FROM throughput WHERE accelerator = :slug))
               OR (c.table_name = 'format_support'
                   AND c.row_slug IN (SELECT slug FROM format_support WHERE accelerator = :slug))""",
                                            {"slug": row["slug"]})]
        if not tiers:
            assert row["strongest_tier"] is None and row["weakest_tier"] is None, row["slug"]
            continue
        assert row["strongest_tier"] == min(tiers, key=rank), row["slug"]
        assert row["weakest_tier"] == max(tiers, key=rank), row["slug"]


async def test_the_row_page_shows_the_tier_of_every_value(client, conn):
    slug = conn.execute("SELECT slug FROM accelerators WHERE strongest_tier != weakest_tier LIMIT 1").fetchone()[0]
    page = sources_section((await client.get(f"/computekb/accelerators/{slug}")).text)
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.DOTALL)
    for citation, tier in conn.execute("""
            SELECT c.slug, c.tier FROM citations c
            WHERE (c.table_name = 'accelerators' AND c.row_slug = :slug)
               OR (c.table_name = 'throughput' AND c.row_slug IN (SELECT slug FROM throughput WHERE accelerator = :slug))""",
                                       {"slug": slug}):
        [row] = [r for r in rows if f'href="/computekb/citations/{citation}"' in r]
        assert f'<small class="tier">{tier}</small>' in row, citation


async def test_the_compare_page_shows_the_tier_under_each_cited_value(client, conn):
    picked = [r[0] for r in conn.execute("SELECT row_slug FROM citations WHERE table_name = 'accelerators' "
                                         "GROUP BY row_slug ORDER BY count(DISTINCT tier) DESC, row_slug LIMIT 2")]
    page = (await client.get("/-/compare?ids=" + ",".join(picked))).text
    for citation, tier in conn.execute(
            "SELECT slug, tier FROM citations WHERE table_name = 'accelerators' AND row_slug IN (?, ?) "
            "AND field IN ('memory_gb', 'memory_bandwidth_gbs', 'tdp_w')", picked):
        cell = re.search(rf'href="/computekb/citations/{citation}"[^>]*>[^<]*</a>\s*<small class="tier" '
                         rf'data-tier="([^"]+)">', page)
        assert cell and cell.group(1) == tier, citation


async def test_the_footer_counts_the_cited_values_per_tier(client, conn):
    page = (await client.get("/computekb/accelerators")).text
    line = re.search(r'<span class="provenance">(.*?)</span>', page, re.DOTALL).group(1)
    # each tier by its label: the slug, but "vendor figure, quoted" and "reference dataset"
    labels = {"vendor figure, quoted": "vendor-quoted", "reference dataset": "reference-dataset"}
    shown = [(n, labels.get(label, label)) for n, label in re.findall(r"(\d+) ([a-z -]+?(?:, quoted)?)(?:, |$)",
                                                                      line.split("(")[0].strip())]
    counts = conn.execute("SELECT tier, count(*) FROM citations GROUP BY tier").fetchall()
    assert sorted((tier, int(n)) for n, tier in shown) == sorted((tier, n) for tier, n in counts)
    assert [tier for _, tier in shown] == sorted((tier for _, tier in shown), key=rank), "most authoritative first"
    assert "Vendor datasheets and product pages" not in page


async def test_the_methodology_page_holds_the_section_the_pages_link_to(client):
    response = await client.get("/-/methodology")
    assert response.status_code == 200
    for heading in ("One definition per measure", "The unit rule", "The scope rule", "Source tiers", "Evidence rules v3",
                    "Disagreements between sources"):
        assert heading in response.text
    assert 'id="source-tiers"' in response.text
    page = (await client.get("/computekb")).text
    assert 'href="/-/methodology#source-tiers"' in page
