"""The compact accelerators table, the header search box, a citation's page and citations of untitled
articles, as HTML from Datasette's test client.

Mechanics on the fixture data (tests/fixture/data: expected values written out from its YAML);
what depends on real rows (FP4 formats) on the real data, with expected values read from the database.
"""

import dataclasses
import html
import json
import re
import sqlite3
from contextlib import closing

import pytest
from datasette.app import Datasette
from datasette.utils.asgi import Request

from plugins.site import page_with

from conftest import databases_listed

# Pages the serving speed-ups change: CI runs these again with the speed-ups off.
pytestmark = pytest.mark.speedups

TABLE = "/computekb/accelerators"


def thead(page):
    return page[page.index("<thead>"):page.index("</thead>")]


def row_slugs(page):
    return re.findall(r'<tr data-slug="([^"]+)"', page)


def link(page, css_class):
    return html.unescape(re.search(rf'class="{css_class}" href="([^"]+)"', page).group(1))


async def test_the_table_shows_the_readers_columns_with_readable_headers(fixture_client):
    page = (await fixture_client.get(TABLE)).text
    assert 'class="finder-table compact-accelerators"' in page and 'class="rows-and-columns"' not in page
    headers = re.sub(r"<[^>]+>", "", thead(page))
    for header in ("Accelerator", "Vendor", "Memory (GB)", "Bandwidth (GB/s)", "Power (W)", "List price (USD)"):
        assert header in headers
    table = page[page.index("<thead>"):page.index("</table>")]
    assert "memory_bandwidth_gbs" not in headers and "interconnect_gbs" not in table, "the dozen columns only"
    assert row_slugs(page) == ["acme-x1", "acme-x2", "beta-b1"], "by bandwidth: 4.8 TB/s, 3.35 TB/s, 900 GB/s"
    assert '<a href="/computekb/accelerators/acme-x1">X1</a>' in page, "the name opens the spec sheet"
    assert ">4,800<" in page and ">1,200<" in page, "plain numbers: the unit is in the header"


async def test_a_header_sorts_numbers_highest_first_then_reverses(fixture_client):
    page = (await fixture_client.get(TABLE)).text
    memory = re.search(r'<a href="([^"]+)" rel="nofollow">Memory \(GB\)', page).group(1)
    assert "_sort_desc=memory_gb" in memory
    sorted_page = (await fixture_client.get(html.unescape(memory))).text
    assert row_slugs(sorted_page) == ["acme-x2", "acme-x1", "beta-b1"], "144, 96, 24 GB"
    again = re.search(r'<a href="([^"]+)" rel="nofollow">Memory \(GB\) ↓', sorted_page).group(1)
    assert row_slugs((await fixture_client.get(html.unescape(again))).text) == ["beta-b1", "acme-x1", "acme-x2"]


async def test_all_columns_is_datasettes_table_with_the_same_filters(fixture_client):
    page = (await fixture_client.get(f"{TABLE}?memory_gb__gte=100")).text
    assert row_slugs(page) == ["acme-x2"]
    full_url = link(page, "all-columns-link")
    assert "_view=full" in full_url and "memory_gb__gte=100" in full_url
    full = (await fixture_client.get(full_url)).text
    assert 'class="rows-and-columns"' in full and 'data-column="interconnect_gbs"' in full
    assert 'class="compact-accelerators' not in full
    assert full.count('<td class="col-slug') == 1, "one row: the filter is kept"
    assert "memory_gb__gte=100" in link(full, "compact-view-link") and "_view" not in link(full, "compact-view-link")


async def test_json_and_csv_of_the_table_still_answer(fixture_client):
    page = (await fixture_client.get(TABLE)).text
    exports = page[page.index('class="export-links"'):]
    json_url = html.unescape(re.search(r'href="([^"]+\.json[^"]*)"', exports).group(1))
    csv_url = html.unescape(re.search(r'href="([^"]+\.csv[^"]*)"', exports).group(1))
    rows = (await fixture_client.get(json_url + ("&" if "?" in json_url else "?") + "_shape=array")).json()
    assert {r["slug"] for r in rows} == {"acme-x1", "acme-x2", "beta-b1"}
    assert "interconnect_gbs" in rows[0], "the JSON keeps every column"
    csv = await fixture_client.get(csv_url)
    assert csv.status_code == 200 and csv.text.startswith("slug,")


async def test_the_glossary_is_folded_and_the_page_facets_are_the_readers(fixture_client):
    page = (await fixture_client.get(TABLE)).text
    glossary = page[page.index('<details class="column-glossary">'):]
    glossary = glossary[:glossary.index("</details>")]
    assert "Maximum power per row scope, of the kind power_kind says" in glossary
    assert 'class="table table-accelerators folded-glossary"' in page or "folded-glossary" in page
    facets = set(re.findall(r'class="facet-info[^"]*"[^>]*data-column="([^"]+)"', page))
    assert facets == {"vendor", "device_class", "memory_kind", "native_fp8", "native_fp4"}


async def test_a_row_page_keeps_datasettes_own_row_table(fixture_client):
    page = (await fixture_client.get(f"{TABLE}/acme-x1")).text
    details = page[page.index('class="datasette-row"'):]
    assert 'class="rows-and-columns"' in details and 'class="compact-accelerators' not in page


async def test_fp4_formats_are_labels_not_json(client, conn):
    slug, formats = conn.execute("select slug, fp4_formats from accelerators where fp4_formats like '%,%' "
                                 "order by memory_bandwidth_gbs desc limit 1").fetchone()
    page = (await client.get(f"{TABLE}?_size=max")).text
    row = page[page.index(f'<tr data-slug="{slug}"'):]
    cell = row[row.index('class="col-fp4_formats"'):]
    cell = cell[:cell.index("</td>")]
    assert re.findall(r'<span class="label">([^<]+)</span>', cell) == json.loads(formats)
    assert "[" not in cell and "&#34;" not in cell


async def test_the_search_box_is_in_the_header_of_every_page(fixture_client):
    for path in ("/", TABLE, f"{TABLE}/acme-x1", "/computekb/articles", "/-/compare", "/-/accelerators",
                 "/computekb/citations/accelerators-acme-x1-memory-bandwidth-gbs", "/computekb/no-such-table"):
        page = (await fixture_client.get(path)).text
        header = page[page.index("<header"):page.index("</header>")]
        assert 'class="site-search" action="/-/search"' in header, path
        assert "site-search" not in page[page.index("<footer"):], path


async def test_a_citation_page_links_the_value_and_its_source(fixture_client):
    page = (await fixture_client.get("/computekb/citations/accelerators-acme-x1-memory-bandwidth-gbs")).text
    assert '<a class="citation-source" href="https://example.com/acme-x1-datasheet" rel="noopener">' \
           'Acme X1 datasheet</a>' in page
    value = link(page, "cited-value")
    assert value == "/computekb/accelerators/acme-x1#memory_bandwidth_gbs"
    sheet = (await fixture_client.get(value.split("#")[0])).text
    assert 'id="memory_bandwidth_gbs"' in sheet, "the anchor the citation points at exists"
    assert "4.8 TB/s" in page, "the value as written"


async def test_an_identity_value_no_source_states_shows_its_value_and_anchor_alone(fixture_client):
    page = (await fixture_client.get(f"{TABLE}/acme-x1")).text
    block = page[page.index('id="device_class"'):]
    block = block[:block.index("</dd>")]
    assert "datacenter-gpu" in block
    assert "no source recorded" not in block and "citation-link" not in block and "cite-one-click" not in block


async def test_a_derived_value_says_it_is_derived_not_unsourced(fixture_client, fixture_db):
    """native_fp8 is made by the build from cited format claims: saying "no source recorded" would
    tell a reader it is unsupported; it has no citation of its own to copy."""
    with closing(sqlite3.connect(fixture_db)) as conn:
        [(derived,)] = conn.execute("SELECT native_fp8 FROM accelerators WHERE slug = 'acme-x1'").fetchall()
    assert derived, "the fixture's Acme X1 has a native FP8 value"
    page = (await fixture_client.get(f"{TABLE}/acme-x1")).text
    block = page[page.index('id="native_fp8"'):]
    block = block[:block.index("</dd>")]
    assert "derived from this sheet's cited values" in block and "no source recorded" not in block
    assert "cite-one-click" not in block


async def test_each_group_has_one_formats_panel_holding_its_first_cited_value(fixture_client):
    page = (await fixture_client.get(f"{TABLE}/acme-x1")).text
    memory = page[page.index('id="section-memory"'):page.index('id="section-compute"')]
    assert memory.count('<details class="cite-value cite-formats">') == 1
    panel = memory[memory.index("cite-formats"):memory.index("</details>")]
    assert "Of <strong>Memory</strong>" in panel, "memory_gb, the group's first cited value"
    markdown = html.unescape(re.search(r'data-format="markdown" data-cite="([^"]+)"', panel).group(1))
    assert markdown.startswith("Memory (`memory_gb`): **96 GB**")


async def test_an_untitled_article_has_no_placeholder_in_any_citation(fixture_client):
    page = (await fixture_client.get("/computekb/articles/untitled-power-note")).text
    block = html.unescape(page[page.index('id="cite-this"'):])
    bibtex = block[block.index('class="cite-bibtex"'):]
    bibtex = bibtex[bibtex.index(">") + 1:bibtex.index("</textarea>")]
    markdown = block[block.index('class="cite-markdown"'):]
    markdown = markdown[markdown.index(">") + 1:markdown.index("</textarea>")]
    assert "[label derived" not in block and "derived from summary" not in block
    assert "title =" not in bibtex and "Power and cost of running the B1 all day." in bibtex
    assert markdown.startswith("[untitled-power-note](") and "title not published" in markdown
    assert "title not published" in block[:block.index("Permalink")], "the page says so, outside any title"


async def test_a_titled_article_is_cited_by_its_title(fixture_client):
    page = html.unescape((await fixture_client.get("/computekb/articles/acme-x1-review")).text)
    assert "title = {{A look at the Acme X1}}" in page
    assert "[A look at the Acme X1](" in page and "title not published" not in page


@pytest.mark.parametrize("url, changes, expected", [
    ("/computekb/accelerators?vendor=AMD&_sort=name", {"_sort": None, "_sort_desc": "tdp_w"},
     "/computekb/accelerators?vendor=AMD&_sort_desc=tdp_w"),
    ("/computekb/accelerators?memory_gb__gte=80+GB&_view=full", {"_view": None}, "/computekb/accelerators?memory_gb__gte=80+GB"),
    ("/computekb/accelerators?_view=full", {"_view": None}, "/computekb/accelerators"),
    ("/computekb/accelerators", {"_view": "full"}, "/computekb/accelerators?_view=full"),
])
def test_a_link_to_the_page_itself_sets_and_removes_only_what_it_names(url, changes, expected):
    assert page_with(Datasette(memory=True), Request.fake(url), changes) == expected


async def test_the_finder_finds_an_accelerator_by_part_of_its_name(fixture_client):
    page = (await fixture_client.get("/-/accelerators?name__contains=x")).text
    found = re.findall(r'href="/computekb/accelerators/([a-z0-9-]+)"', page)
    assert sorted(set(found)) == ["acme-x1", "acme-x2"]
    assert 'name="name__contains" value="x"' in page


async def test_the_finder_and_the_table_take_their_headers_from_the_field_definitions(fixture_client):
    expected = ["Accelerator", "Vendor", "Class", "Memory (GB)", "Memory kind", "Memory type", "Bandwidth (GB/s)", "Power (W)",
                "FP8", "FP4", "FP4 formats", "List price (USD)", "Cloud per GPU-hour (USD/h)", "Note"]
    for path in ("/-/accelerators", TABLE):
        page = (await fixture_client.get(path)).text
        cells = re.findall(r'<th scope="col"[^>]*>(.*?)</th>', thead(page), re.S)
        headers = [re.sub(r"<[^>]+>", "", cell).strip(" ↓↑") for cell in cells]
        assert headers == expected, path
        # a blank cell says why: X2 has no list price and no USD offer, B1 no memory type
        x2 = page[page.index('data-slug="acme-x2"'):page.index('data-slug="beta-b1"')]
        assert '<small class="none">no list price found</small>' in x2 and "no current USD offer" in x2
    glossary = (await fixture_client.get(TABLE)).text
    assert "<dt>Bandwidth (GB/s) <code>memory_bandwidth_gbs</code></dt>" in glossary


def test_a_field_added_to_the_registry_reaches_the_finder_and_its_spec_sheet_group():
    from domain.schema import AUTHORED, Field
    from serving.labels import Column, finder_columns, sections
    table = AUTHORED["accelerators"]
    stacks = Field("hbm_stacks", "int", "HBM stacks on the package.", label="HBM stacks", group="memory")
    grown = dataclasses.replace(table, fields=table.fields + (stacks,), finder=table.finder + ("hbm_stacks",))
    assert finder_columns(grown)[-1] == Column("hbm_stacks", "HBM stacks", "number", False, None, None, "not stated")
    memory = dict((g.key, names) for g, names in sections(grown))["memory"]
    assert memory[0] == "memory_gb" and memory[-1] == "hbm_stacks", "in the table's order, after the others"


async def test_a_csv_for_excel_begins_with_the_byte_order_mark_and_the_plain_one_does_not(fixture_client):
    plain = await fixture_client.get("/computekb/vendors.csv")
    for query in ("_bom=1", "_size=max&_bom=1"):
        marked = await fixture_client.get(f"/computekb/vendors.csv?{query}")
        assert marked.content == b"\xef\xbb\xbf" + plain.content
    assert plain.content.startswith(b"slug,")
    listed = databases_listed((await fixture_client.get("/-/databases.json")).json())
    assert [d["name"] for d in listed] == ["computekb"], "no empty in-memory database beside it"


async def test_a_price_filter_says_how_many_unpriced_rows_it_leaves_out(fixture_client):
    # X1 (30,000 USD) and B1 (2,500, derived) pass; X2 has no list price: one left out, linked
    page = (await fixture_client.get("/-/accelerators?launch_price_usd__lte=40000")).text
    assert row_slugs(page) == ["acme-x1", "beta-b1"]
    note = re.search(r'<p class="finder-left-out".*?</p>', page, re.S).group(0)
    assert "<strong>1</strong> accelerator matching the other filters has no launch list price" in note
    assert 'href="/-/accelerators?launch_price_usd__isnull=1"' in note
    unpriced = (await fixture_client.get("/-/accelerators?launch_price_usd__isnull=1")).text
    assert row_slugs(unpriced) == ["acme-x2"]
    assert "finder-left-out" not in (await fixture_client.get("/-/accelerators?memory_gb__gte=80")).text


async def test_the_finder_form_asks_for_a_class(fixture_client):
    page = (await fixture_client.get("/-/accelerators?device_class=workstation-gpu")).text
    assert '<option value="workstation-gpu" selected>workstation-gpu</option>' in page
    assert row_slugs(page) == ["beta-b1"]
