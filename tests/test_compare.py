"""The compare page, /-/compare?ids=..., through Datasette's test client.

Expected values are read from the database directly, never from the page's code.
"""

import csv
import html
import io
import re

import pytest

from domain.schema import AUTHORED

# The page's rule, stated here on its own: the lowest price and power are best,
# the highest of everything else.
LOWER_IS_BETTER = {"tdp_w", "launch_price_usd", "cheapest_gpu_hour_usd"}
QUANTITIES = [f.name for f in AUTHORED["accelerators"].columns if f.kind == "quantity"]


@pytest.fixture(scope="module")
def picked(conn):
    """Three accelerators with the most cited values, in reverse slug order (not the table's order)."""
    rows = conn.execute("SELECT row_slug FROM citations WHERE table_name = 'accelerators' "
                        "GROUP BY row_slug ORDER BY count(*) DESC, row_slug LIMIT 3").fetchall()
    assert len(rows) == 3, "the data needs at least three accelerators with cited values"
    return sorted((r[0] for r in rows), reverse=True)


@pytest.fixture(scope="module")
async def compare_page(client, picked):
    response = await client.get("/-/compare?ids=" + ",".join(picked))
    assert response.status_code == 200
    return response.text


def link(href, page):
    return f'href="{href}"' in page


def table_rows(page):
    """{field: {accelerator: (cell html, is best)}} from the compare table."""
    rows = {}
    for field, body in re.findall(r'<tr data-field="([^"]+)">(.*?)</tr>', page, re.S):
        cells = re.findall(r'<td data-accelerator="([^"]+)"( class="best")?>(.*?)</td>', body, re.S)
        rows[field] = {slug: (cell, bool(best)) for slug, best, cell in cells}
    return rows


def links_of(page, cls):
    return html.unescape(re.search(rf'class="{cls}" href="([^"]+)"', page).group(1))


async def test_columns_keep_the_order_of_ids(compare_page, picked):
    assert re.findall(r'<th scope="col" data-accelerator="([^"]+)"', compare_page) == picked


async def test_every_cited_value_links_to_its_citation(compare_page, conn, picked):
    marks = ",".join("?" * len(picked))
    cited = conn.execute(f"SELECT slug FROM citations WHERE table_name = 'accelerators' AND row_slug IN ({marks})",
                         picked).fetchall()
    dense = conn.execute(
        "SELECT c.slug FROM throughput t JOIN citations c ON c.table_name = 'throughput' AND c.row_slug = t.slug "
        f"WHERE t.sparsity = 'dense' AND t.accelerator IN ({marks})", picked).fetchall()
    assert cited
    for (slug,) in cited + dense:
        assert link(f"/computekb/citations/{slug}", compare_page), slug


async def test_only_dense_throughput_is_compared(compare_page, conn, picked):
    marks = ",".join("?" * len(picked))
    sparse = conn.execute(
        "SELECT c.slug FROM throughput t JOIN citations c ON c.table_name = 'throughput' AND c.row_slug = t.slug "
        f"WHERE t.sparsity != 'dense' AND t.accelerator IN ({marks})", picked).fetchall()
    for (slug,) in sparse:
        assert f"/computekb/citations/{slug}" not in compare_page


@pytest.mark.parametrize("field", QUANTITIES)
async def test_best_value_is_marked(compare_page, conn, picked, field):
    marks = ",".join("?" * len(picked))
    values = dict(conn.execute(f"SELECT slug, {field} FROM accelerators WHERE slug IN ({marks}) "
                               f"AND {field} IS NOT NULL", picked).fetchall())
    rows = table_rows(compare_page)
    if not values:
        assert field not in rows, "a row with no value is left out"
        return
    expected = set()
    scopes = {r[0] for r in conn.execute(f"SELECT DISTINCT scope FROM accelerators WHERE slug IN ({marks})", picked)}
    if len(set(values.values())) > 1 and len(scopes) == 1:
        best = (min if field in LOWER_IS_BETTER else max)(values.values())
        expected = {slug for slug, value in values.items() if value == best}
    assert {slug for slug, (_, best) in rows[field].items() if best} == expected


async def test_articles_that_discuss_each_accelerator_are_listed(compare_page, conn, picked):
    marks = ",".join("?" * len(picked))
    articles = conn.execute(f"SELECT DISTINCT article FROM article_accelerators WHERE accelerator IN ({marks})",
                            picked).fetchall()
    for (slug,) in articles:
        assert link(f"/computekb/articles/{slug}", compare_page), slug


async def test_the_page_draws_a_chart(compare_page, conn, picked):
    charted = conn.execute("SELECT count(*) FROM accelerators WHERE memory_gb > 0 AND slug IN (?, ?, ?)",
                           picked).fetchone()[0]
    assert '<figure class="compare-chart">' in compare_page
    if charted:
        assert "<figcaption>Memory (GB)</figcaption>" in compare_page


async def test_csv_link_gives_the_table_with_database_values(client, compare_page, conn, picked):
    response = await client.get(links_of(compare_page, "compare-csv"))
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert list(rows[0])[:2] == ["field", "unit"] and list(rows[0])[2:] == picked
    by_field = {row["field"]: row for row in rows}
    for field in QUANTITIES:
        for slug in picked:
            value = conn.execute(f"SELECT {field} FROM accelerators WHERE slug = ?", (slug,)).fetchone()[0]
            if value is not None:
                assert float(by_field[field][slug]) == value, (field, slug)
                assert by_field[field]["unit"] == AUTHORED["accelerators"].field(field).unit
    assert set(by_field) == set(table_rows(compare_page)), "the CSV holds the rows the page shows"


async def test_dense_throughput_rows_match_the_throughput_table(client, compare_page, conn, picked):
    rows = list(csv.DictReader(io.StringIO((await client.get(links_of(compare_page, "compare-csv"))).text)))
    by_field = {row["field"]: row for row in rows}
    for slug in picked:
        for precision, engine, kind, tflops in conn.execute(
                "SELECT t.precision, t.engine, f.kind, t.tflops FROM throughput t JOIN number_formats f "
                "ON f.slug = t.precision WHERE t.accelerator = ? AND t.sparsity = 'dense'", (slug,)):
            unit = "tops" if kind == "integer" else "tflops"
            assert float(by_field[f"{precision}_{engine}_{unit}"][slug]) == tflops


async def test_matrix_and_vector_figures_are_separate_rows(client, conn):
    """Two accelerators with both engines' dense FP64: each engine is its own row, its
    figures those of that engine only, so no star compares a matrix with a vector figure."""
    both = [slug for (slug,) in conn.execute(
        "SELECT accelerator FROM throughput WHERE precision = 'fp64' AND sparsity = 'dense' "
        "GROUP BY accelerator HAVING count(DISTINCT engine) = 2 ORDER BY accelerator LIMIT 2")]
    assert len(both) == 2, "the data needs two accelerators with matrix and vector FP64 figures"
    page = (await client.get("/-/compare?ids=" + ",".join(both))).text
    rows = table_rows(page)
    for engine in ("matrix", "vector"):
        cells = rows[f"fp64_{engine}_tflops"]
        for slug in both:
            value = conn.execute("SELECT tflops FROM throughput WHERE accelerator = ? AND precision = 'fp64' "
                                 "AND sparsity = 'dense' AND engine = ?", (slug, engine)).fetchone()[0]
            assert f"{value:g}" in cells[slug][0].replace(",", ""), (engine, slug)
    assert "fp64_tflops" not in rows


async def test_integer_figures_are_never_in_floating_point_rows(compare_page, conn, picked):
    marks = ",".join("?" * len(picked))
    integer = {p for (p,) in conn.execute(f"SELECT DISTINCT t.precision FROM throughput t JOIN number_formats f "
                                          f"ON f.slug = t.precision WHERE f.kind = 'integer' AND t.accelerator IN ({marks})",
                                          picked)}
    for field in table_rows(compare_page):
        if field.split("_")[0] in integer:
            assert field.endswith("_tops"), field


async def test_markdown_link_gives_a_github_table(client, compare_page, picked):
    response = await client.get(links_of(compare_page, "compare-markdown-raw"))
    assert response.status_code == 200
    lines = response.text.splitlines()
    assert [cell.strip() for cell in lines[0].strip("|").split("|")] == ["field", "unit", *picked]
    assert set(lines[1]) <= set("|-: ")
    html_page = await client.get(links_of(compare_page, "compare-markdown"))
    assert html_page.status_code == 200 and "| field" in html_page.text


async def test_unknown_slug_is_a_404_listing_close_matches(client, picked):
    typo = picked[0][:-1]
    response = await client.get(f"/-/compare?ids={typo},{picked[1]}")
    assert response.status_code == 404
    assert f"No accelerator has the slug {typo}" in response.text
    assert f"?ids={picked[0]},{picked[1]}" in html.unescape(response.text), "the match swaps the typo out"


@pytest.mark.parametrize("ids, message", [
    ("", "got 0"),
    ("only-one", "got 1"),
    (",".join(f"slug-{i}" for i in range(9)), "got 9"),
    ("a" * 900 + ",b", "too long"),
])
async def test_wrong_number_of_ids_is_a_400(client, ids, message):
    response = await client.get(f"/-/compare?ids={ids}")
    assert response.status_code == 400
    assert message in response.text


async def test_a_repeated_slug_is_a_400(client, picked):
    response = await client.get(f"/-/compare?ids={picked[0]},{picked[1]},{picked[0]}")
    assert response.status_code == 400
    assert f"listed more than once: {picked[0]}" in response.text


@pytest.mark.parametrize("ids", ["x' OR '1'='1,y", 'a"),(1,b', "%00,zz"])
async def test_hostile_ids_get_a_4xx_not_a_500(client, ids):
    response = await client.get("/-/compare", params={"ids": ids})
    assert response.status_code == 404


async def test_checkbox_form_redirects_to_the_permalink(client, picked):
    response = await client.get(f"/-/compare?ids={picked[1]}&ids={picked[0]}")
    assert response.status_code == 302
    assert response.headers["location"] == f"/-/compare?ids={picked[1]},{picked[0]}"
    response = await client.get(f"/-/compare?ids=%20{picked[1]}%20,%20{picked[0]},")
    assert response.headers["location"] == f"/-/compare?ids={picked[1]},{picked[0]}"


async def test_picker_offers_every_accelerator(client, conn):
    response = await client.get("/-/compare")
    assert response.status_code == 200
    offered = set(re.findall(r'name="ids" value="([^"]+)"', response.text))
    assert offered == {r[0] for r in conn.execute("SELECT slug FROM accelerators")}


async def test_no_star_compares_a_system_with_a_device(client, conn):
    """A system's memory and a GPU's are different measures: the page marks no best value across scopes."""
    system = conn.execute("SELECT slug FROM accelerators WHERE scope = 'system' AND memory_gb IS NOT NULL "
                          "ORDER BY slug LIMIT 1").fetchone()
    device = conn.execute("SELECT slug FROM accelerators WHERE scope = 'device' AND memory_gb IS NOT NULL "
                          "ORDER BY slug LIMIT 1").fetchone()
    assert system and device, "the data has a system and a device with a memory figure"
    page = (await client.get(f"/-/compare?ids={system[0]},{device[0]}")).text
    assert 'class="best"' not in page
    assert 'class="compare-scopes"' in page
    same = [r[0] for r in conn.execute("SELECT slug FROM accelerators WHERE scope = 'device' AND memory_gb IS NOT NULL "
                                       "GROUP BY memory_gb ORDER BY memory_gb LIMIT 2")]
    assert 'class="best"' in (await client.get("/-/compare?ids=" + ",".join(same))).text


async def test_a_source_without_a_title_is_named_by_its_address_and_said_untitled(client, conn):
    """The hover text of a value names its source by its title; an untitled source's label is its address,
    and the page says the title is not known (from `title`, the stored label carries no mark)."""
    rows = conn.execute(
        "SELECT DISTINCT c.row_slug, s.label FROM citations c JOIN sources s ON s.slug = c.source "
        "WHERE c.table_name = 'accelerators' AND s.title IS NULL ORDER BY c.row_slug LIMIT 3").fetchall()
    assert rows, "the data needs an accelerator value cited from a source without a title"
    page = html.unescape((await client.get("/-/compare?ids=" + ",".join(r[0] for r in rows))).text)
    assert "[title not known" not in page
    for _, label in rows:
        assert f"Source: {label} (title not known)" in page


async def test_eight_accelerators_are_the_most_compared(client, conn):
    """The bound itself, literally: 8 slugs are a page, 9 a refusal that says how many were given."""
    slugs = [slug for (slug,) in conn.execute("select slug from accelerators order by slug limit 9")]
    eight = await client.get(f"/-/compare?ids={','.join(slugs[:8])}")
    assert eight.status_code == 200 and all(f'href="/computekb/accelerators/{s}"' in eight.text for s in slugs[:8])
    nine = await client.get(f"/-/compare?ids={','.join(slugs)}")
    assert nine.status_code == 400 and "got 9" in nine.text


async def test_power_is_compared_with_its_kind(client):
    page = (await client.get("/-/compare?ids=nvidia-rtx-4090,amd-mi250x")).text
    row = page[page.index('<tr data-field="tdp_w">'):]
    row = row[:row.index("</tr>")]
    assert "TBP 450" in row and "TDP 560" in row
