"""Throughput permalinks published before engines were recorded (`accelerator-precision-sparsity`)
redirect to the row they named, or to the list of rows when the slug now names two."""

import urllib.parse

import pytest


def former_slugs(conn, rows_per_slug):
    """Former slugs (accelerator-precision-sparsity) that now name `rows_per_slug` rows, with those rows."""
    groups = conn.execute(
        "SELECT accelerator || '-' || precision || '-' || sparsity AS former, group_concat(slug) AS rows "
        "FROM throughput GROUP BY former HAVING count(*) = ? ORDER BY former LIMIT 3", (rows_per_slug,)).fetchall()
    assert groups, f"the data has a former slug naming {rows_per_slug} row(s)"
    return [(g["former"], sorted(g["rows"].split(","))) for g in groups]


@pytest.mark.parametrize("suffix", ["", ".json"])
async def test_a_former_row_slug_leads_to_its_row(client, conn, suffix):
    for former, [row] in former_slugs(conn, 1):
        assert former != row
        response = await client.get(f"/computekb/throughput/{former}{suffix}")
        assert response.status_code == 301
        assert response.headers["location"] == f"/computekb/throughput/{row}{suffix}"
        assert (await client.get(response.headers["location"])).status_code == 200


async def test_a_former_citation_slug_leads_to_its_citation(client, conn):
    for former, [row] in former_slugs(conn, 1):
        response = await client.get(f"/computekb/citations/throughput-{former}-tflops")
        assert response.status_code == 301
        target = response.headers["location"]
        assert target == f"/computekb/citations/throughput-{row}-tflops"
        assert conn.execute("SELECT count(*) FROM citations WHERE slug = ?", (target.rsplit("/", 1)[1],)).fetchone()[0] == 1


async def test_a_former_slug_naming_two_rows_lists_both(client, conn):
    for former, rows in former_slugs(conn, 2):
        response = await client.get(f"/computekb/throughput/{former}")
        assert response.status_code == 301
        listed = await client.get(response.headers["location"].replace("/throughput?", "/throughput.json?")
                                  + "&_shape=array")
        assert sorted(r["slug"] for r in listed.json()) == rows
        citations = await client.get(f"/computekb/citations/throughput-{former}-tflops")
        query = urllib.parse.urlparse(citations.headers["location"]).query
        listed = await client.get(f"/computekb/citations.json?{query}&_shape=array")
        assert sorted(r["row_slug"] for r in listed.json()) == rows


async def test_an_unknown_slug_is_still_not_found(client):
    assert (await client.get("/computekb/throughput/no-such-accelerator-fp8-dense")).status_code == 404
    assert (await client.get("/computekb/citations/throughput-no-such-fp8-dense-tflops")).status_code == 404
    assert (await client.get("/computekb/accelerators/no-such-accelerator")).status_code == 404


def test_closest_slugs_put_those_holding_the_address_first():
    from domain.matching import closest
    slugs = ["nvidia-gh200", "nvidia-h20", "nvidia-h200-nvl", "nvidia-h200-sxm", "amd-mi300x"]
    assert closest("nvidia-h200", slugs)[:2] == ["nvidia-h200-nvl", "nvidia-h200-sxm"]
    assert closest("H200", slugs)[:2] == ["nvidia-h200-nvl", "nvidia-h200-sxm"]
    assert closest("zzzz", slugs) == []


async def test_a_row_address_naming_no_row_offers_the_closest_rows(fixture_client):
    response = await fixture_client.get("/computekb/accelerators/acme-x")
    assert response.status_code == 404
    assert '<a href="/computekb/accelerators/acme-x1">acme-x1</a>' in response.text
    assert '<a href="/computekb/accelerators/acme-x2">acme-x2</a>' in response.text
