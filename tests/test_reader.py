"""The reader pages (spec sheet, finder, calculator, search, errors, downloads) as HTML, on the real data.

Expected values are read from the database or worked by hand here, never from the code that renders them.
"""

import html
import re
import sqlite3
from urllib.parse import quote

import pytest
import yaml

from domain import parameters
from domain.units import typed_spelling
from plugins import sizing_sql
from plugins.reader_fits import Asked, counts, duration, memory_split, price_text, ranked, significant, sized_rows
from plugins.reader_search import CLOSE, OPEN, fts_expression, marked
from plugins.reader_spec import SQL as SHEET_SQL
from serving.paths import METADATA_YML, STATIC_DIR

H200 = "nvidia-h200-sxm"


def section(page, element_id):
    """The HTML of the element with `element_id` up to the next element of the same kind at the same depth."""
    start = page.index(f'id="{element_id}"')
    return page[start:start + 4000]


def written(value):
    """A number as a reader reads it: 4800.0 as 4,800 and 1307.4 as 1,307.4."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"


@pytest.mark.parametrize("text, unit, expected", [
    ("3 tb/s", "GB/s", "3 TB/s"), ("80 gb", "GB", "80 GB"), ("96 gib", "GB", "96 GiB"), ("1 kw", "W", "1 kW"),
    ("5 tflops", "TFLOPS", "5 TFLOPS"), ("3 tb", "GB/s", None), ("fast", "GB", None),
])
def test_a_unit_typed_in_any_case_is_read_as_its_spelling(text, unit, expected):
    assert typed_spelling(text, unit) == expected


@pytest.mark.parametrize("text, tokens", [("32768", 32768), ("32k", 32768), ("128K", 131072), ("1M", 1048576),
                                          (" 8 k ", 8192), ("0.5k", 512)])
def test_a_context_is_read_as_readers_write_it(text, tokens):
    assert parameters.context(text) == tokens


@pytest.mark.parametrize("text", ["", "32q", "k", "-4k", "0", "0.3k"])
def test_an_unreadable_context_is_refused(text):
    with pytest.raises(parameters.ParameterError, match="^context must be a whole number of tokens"):
        parameters.context(text)


def peers_of(row, others):
    """The sheet's peers query on a table of `row` and `others` (one scope)."""
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    conn.execute("create table accelerators (slug, name, family, device_class, scope, memory_gb, memory_bandwidth_gbs)")
    for r in [row, *others]:
        conn.execute("insert into accelerators values (:slug, :slug, :family, :device_class, 'device', :memory_gb, "
                     ":memory_bandwidth_gbs)", r)
    return [p["slug"] for p in conn.execute(SHEET_SQL["peers"], {"slug": row["slug"]})]


def test_nearest_peers_are_the_closest_in_memory_and_bandwidth():
    row = {"slug": "x", "family": "f", "device_class": "gpu", "memory_gb": 80, "memory_bandwidth_gbs": 3000}
    candidates = [{"slug": "far", "family": "f", "device_class": "gpu", "memory_gb": 8, "memory_bandwidth_gbs": 300},
                  {"slug": "near", "family": "f", "device_class": "gpu", "memory_gb": 96, "memory_bandwidth_gbs": 3300},
                  {"slug": "middle", "family": "f", "device_class": "gpu", "memory_gb": 192, "memory_bandwidth_gbs": 8000},
                  {"slug": "unknown", "family": "f", "device_class": "gpu", "memory_gb": None, "memory_bandwidth_gbs": 3000},
                  {"slug": "near2", "family": "f", "device_class": "gpu", "memory_gb": 64, "memory_bandwidth_gbs": 2000},
                  {"slug": "far2", "family": "f", "device_class": "gpu", "memory_gb": 800, "memory_bandwidth_gbs": 20000}]
    # log distances: near 0.21, near2 0.46, middle 1.31, far2 3.06, far 3.26 (the fifth: four are shown);
    # unknown has no memory, so no distance
    assert peers_of(row, candidates) == ["near", "near2", "middle", "far2"]


def test_peers_of_the_same_family_then_class_come_before_closer_strangers():
    row = {"slug": "h200", "family": "Hopper", "device_class": "datacenter-gpu", "memory_gb": 141,
           "memory_bandwidth_gbs": 4800}
    candidates = [
        {"slug": "twin", "family": "Other", "device_class": "ai-asic", "memory_gb": 141, "memory_bandwidth_gbs": 4800},
        {"slug": "cousin", "family": "Blackwell", "device_class": "datacenter-gpu", "memory_gb": 180,
         "memory_bandwidth_gbs": 8000},
        {"slug": "h100", "family": "Hopper", "device_class": "datacenter-gpu", "memory_gb": 80,
         "memory_bandwidth_gbs": 3350}]
    assert peers_of(row, candidates) == ["h100", "cousin", "twin"]


def test_ranking_puts_native_fits_first_then_the_fastest():
    rows = [{"accelerator": "a", "fits": 1, "native": 0, "ceiling_tokens_per_s": 500},
            {"accelerator": "b", "fits": 0, "native": 1, "ceiling_tokens_per_s": 900},
            {"accelerator": "c", "fits": 1, "native": 1, "ceiling_tokens_per_s": 100},
            {"accelerator": "d", "fits": 1, "native": 1, "ceiling_tokens_per_s": 200}]
    assert [r["accelerator"] for r in ranked(rows)] == ["d", "c", "a", "b"]


def test_memory_split_is_a_share_of_the_memory_the_runtime_sees():
    split = memory_split({"memory_gb": 200, "usable_gb_per_device": 184, "weights_gb_per_device": 100,
                          "kv_cache_gb_per_device": 50, "reserve_gb_per_device": 10, "headroom_gb_per_device": 16})
    assert split == {"weights": 50.0, "kv": 25.0, "reserve": 5.0, "headroom": 8.0}


def test_a_search_word_matches_its_synonyms_and_quotes_are_text():
    assert fts_expression("memoire") .startswith('("memoire" OR ')
    assert '"kv cache"' in fts_expression("memoire")
    assert fts_expression('gpu" OR *') == '"gpu" AND "or"'
    assert fts_expression("vram gpu") == '("vram" OR "memoire" OR "memory") AND "gpu"'


def test_marks_are_the_only_markup_of_a_highlight():
    assert marked(f"a <b>{OPEN}KV{CLOSE}</b>") == "a &lt;b&gt;<mark>KV</mark>&lt;/b&gt;"


async def test_spec_sheet_reads_as_a_spec_sheet(client, conn):
    row = conn.execute("select name from accelerators where slug = ?", (H200,)).fetchone()
    page = (await client.get(f"/computekb/accelerators/{H200}")).text
    assert f"<title>{html.escape(row['name'])}: spec sheet</title>" in page
    order = [page.index(f'id="section-{name}"') for name in ("memory", "compute", "interconnect", "power", "price",
                                                              "articles")]
    assert order == sorted(order), "sections in reading order"
    assert page.index('class="sheet-identity"') < order[0], "identity at the top"


async def test_every_cited_value_has_its_anchor_tier_citation_source_and_cite_texts(client, conn):
    page = (await client.get(f"/computekb/accelerators/{H200}")).text
    cited = conn.execute(
        "select c.field, c.slug, c.tier, c.value, s.url from citations c join sources s on s.slug = c.source "
        "where c.table_name = 'accelerators' and c.row_slug = ? and c.value is not null", (H200,)).fetchall()
    release = conn.execute("select data_release from release").fetchone()[0]
    assert cited
    for c in cited:
        block = section(page, c["field"])
        block = block[:block.index("</dd>")]
        assert f'href="/computekb/citations/{c["slug"]}"' in block, c["field"]
        assert f'data-tier="{c["tier"]}"' in block
        assert f'href="{html.escape(c["url"])}"' in block
        number = written(c["value"])
        assert f">{number} " in block, (c["field"], number)
        texts = [html.unescape(t) for t in re.findall(r'data-(?:cite|markdown|bibtex)="([^"]*)"', block)]
        assert len(texts) == 3, "the one-click text, and the Markdown and BibTeX its group's panel takes"
        for text in texts:
            assert number in text and c["field"] in text and release in text and c["url"] in text.replace("\\_", "_")
            assert f"/computekb/accelerators/{H200}#{c['field']}" in text


async def test_compute_keeps_dense_and_sparse_and_tops_apart(client, conn):
    slug, = conn.execute("select accelerator from throughput where precision = 'int8' and sparsity = 'sparse-2-4' "
                         "order by accelerator limit 1").fetchone()
    page = (await client.get(f"/computekb/accelerators/{slug}")).text
    table = page[page.index('class="compute-table"'):page.index("</table>", page.index('class="compute-table"'))]
    rows = {(p.lower(), engine): cells for p, engine, cells in
            re.findall(r"<th scope=\"row\">([^<]+)</th><td>([^<]+)</td>(.*?)</tr>", table, re.S)}
    for t in conn.execute("select precision, sparsity, engine, tflops from throughput where accelerator = ?", (slug,)):
        anchor = f"{t['precision']}_{t['engine']}_{'dense' if t['sparsity'] == 'dense' else 'sparse'}"
        block = section(page, anchor)[:400]
        unit = "TOPS" if t["precision"].startswith("int") else "TFLOPS"
        assert f"{written(t['tflops'])} {unit}" in block, anchor
        dense, sparse = re.split(r"</td>\s*<td>", rows[(t["precision"], t["engine"])], maxsplit=1)
        assert f'id="{anchor}"' in (dense if t["sparsity"] == "dense" else sparse), "in its column"


async def test_compare_with_proposes_peers_of_the_same_scope(client, conn):
    scope = {r[0]: r[1] for r in conn.execute("select slug, scope from accelerators")}
    others = [r[0] for r in conn.execute("select slug from accelerators where scope <> 'device' "
                                         "and memory_gb > 0 and memory_bandwidth_gbs > 0")]
    for slug in [H200, *others]:
        page = (await client.get(f"/computekb/accelerators/{slug}")).text
        peers = re.findall(r'data-peer="([^"]+)"', page)
        assert len(peers) <= 4 and slug not in peers
        assert {scope[p] for p in peers} <= {scope[slug]}, slug
    assert re.findall(r'data-peer="([^"]+)"', (await client.get(f"/computekb/accelerators/{H200}")).text)


async def test_finder_answers_the_readers_question(client, conn):
    response = await client.get("/-/accelerators?memory_gb__gte=80&memory_bandwidth_gbs__gte=3+tb/s&native_fp4=yes")
    assert response.status_code == 200
    shown = re.findall(r'<tr data-slug="([^"]+)"', response.text)
    expected = [r[0] for r in conn.execute(
        "select slug from accelerators where memory_gb >= 80 and memory_bandwidth_gbs >= 3000 and native_fp4 = 'yes' "
        "order by memory_bandwidth_gbs desc")]
    assert sorted(shown) == sorted(expected) and shown
    bandwidth = dict(conn.execute("select slug, memory_bandwidth_gbs from accelerators"))
    assert [bandwidth[s] for s in shown] == sorted((bandwidth[s] for s in shown), reverse=True), "by bandwidth"
    assert "Bandwidth (GB/s)" in response.text and "memory_bandwidth_gbs</th>" not in response.text
    full = re.search(r'<a href="(/computekb/accelerators\?[^"]*)">Datasette&#39;s full table', response.text) or \
        re.search(r'<a href="(/computekb/accelerators\?[^"]*)">Datasette\'s full table', response.text)
    assert full and "_view=full" in full.group(1), "Datasette's full table one click away"


async def test_finder_facets_stay_on_the_finder(client):
    page = (await client.get("/-/accelerators?memory_gb__gte=80")).text
    links = re.findall(r'<a href="([^"]+)"[^>]*>NVIDIA</a>', page)
    assert links and links[0].startswith("/-/accelerators?") and "vendor=nvidia" in links[0]


async def test_blank_form_fields_redirect_to_the_tidy_permalink(client):
    response = await client.get("/-/accelerators?memory_gb__gte=&native_fp4=yes")
    assert response.status_code == 302 and response.headers["location"] == "/-/accelerators?native_fp4=yes"


@pytest.mark.parametrize("path", ["/-/accelerators?memory_gb__gte=80+parsecs",
                                  "/computekb/accelerators?memory_gb__gte=80+parsecs"])
async def test_a_wrong_unit_is_explained_with_the_sites_navigation(client, path):
    response = await client.get(path)
    assert response.status_code == 400
    assert "parsecs" in html.unescape(response.text) and "<nav" in response.text
    assert 'href="/-/accelerators"' in response.text


async def test_unit_filters_on_datasettes_table_ignore_case(client):
    lower = await client.get("/computekb/accelerators.json?memory_bandwidth_gbs__gte=3+tb/s&_shape=array&_col=slug")
    upper = await client.get("/computekb/accelerators.json?memory_bandwidth_gbs__gte=3+TB/s&_shape=array&_col=slug")
    assert lower.status_code == 200 and lower.json() == upper.json() and lower.json()


async def test_not_found_keeps_the_header_says_what_and_links_home(client):
    response = await client.get("/computekb/accelerators/no-such-accelerator")
    assert response.status_code == 404
    assert "<title>Not found" in response.text and "<nav" in response.text
    assert 'class="error-home" href="/"' in response.text and "not found" in response.text.lower()


async def test_calculator_lists_choices_from_the_tables(client, conn):
    page = (await client.get("/-/what-fits")).text
    for slug, in conn.execute("select slug from models"):
        assert f'<option value="{slug}"' in page
    for slug, in conn.execute("select slug from checkpoints"):
        assert f'value="checkpoint:{slug}"' in page


async def test_calculator_answers_llama_70b_fp8_32k_as_the_canned_query_does(client):
    """The page asks domain/fits.py itself; the canned query asks it through llm_fit: the same answers."""
    page = (await client.get("/-/what-fits?model=llama-3-1-70b&weights=format%3Afp8&kv_format=fp8&context=32k&all=1")).text
    canned = (await client.get("/computekb/what-fits.json?_shape=array&model=llama-3-1-70b&weight_format=fp8"
                               "&kv_format=fp8&context=32k&batch=1")).json()
    shown = re.findall(r'<tr data-accelerator="([^"]+)" data-class="([^"]+)"', page)
    assert sorted(s for s, _ in shown) == sorted(r["accelerator"] for r in canned) and shown
    by_slug = {r["accelerator"]: r for r in canned}
    caps = {"consumer-gpu": 8, "workstation-gpu": 8, "unified-memory-system": 4, "edge-module": 2}

    def group(slug, device_class):
        row = by_slug[slug]
        fits = row["fits"] and row["devices_needed"] <= caps.get(device_class, 64)
        return (not (fits and row["native"] == 1), not fits)
    groups = [group(*row) for row in shown]
    assert groups == sorted(groups), "native fits first, then fits"
    for slug, _ in shown:  # the devices each answer needs, as the canned query counts them
        cell = re.search(rf'data-accelerator="{slug}".*?data-label="Devices" class="num">(.*?)</td>', page, re.S).group(1)
        needed = by_slug[slug]["devices_needed"]
        assert (re.search(r"\d+", cell).group() == str(needed)) if needed else cell == "no layout holds it", slug
    assert 'class="split-bar"' in page
    assert 'href="/computekb/longest-context?' in page and 'href="/computekb/largest-batch?' in page


async def test_calculator_refuses_an_unreadable_context_with_a_message(client):
    response = await client.get("/-/what-fits?model=llama-3-1-70b&weights=format%3Afp8&kv_format=fp8&context=lots")
    assert response.status_code == 400 and "32k" in response.text and 'role="alert"' in response.text


async def test_memoire_in_french_finds_the_french_kv_cache_articles_as_links(client, conn):
    page = (await client.get("/-/search?q=memoire&language=fr")).text
    links = set(re.findall(r'class="result-title" href="/computekb/articles/([^"]+)"', page))
    kv = {r[0] for r in conn.execute("select article from article_topics t join articles a on a.slug = t.article "
                                     "where t.topic = 'kv-cache' and a.language = 'fr'")}
    assert kv and kv <= links
    languages = dict(conn.execute("select slug, language from articles"))
    assert {languages[s] for s in links} == {"fr"}


async def test_untitled_articles_are_labelled_outside_the_title(client, conn):
    slug, label = conn.execute("select slug, label from articles where title is null and language = 'fr' "
                               "and topic_tags like '%kv-cache%' limit 1").fetchone()
    page = (await client.get("/-/search?q=kv+cache&language=fr")).text
    item = page[page.index(f'/computekb/articles/{slug}"'):]
    item = item[:item.index("</li>")]
    title = item[item.index(">") + 1:item.index("</a>")]
    assert "[label derived" not in html.unescape(title) and "title not published" not in title
    assert "title not published" in item


async def test_search_marks_the_matched_words(client):
    page = (await client.get("/-/search?q=vram")).text
    assert re.search(r"<mark>vram</mark>", page, re.IGNORECASE)


async def test_search_shows_the_query_as_text(client):
    page = (await client.get("/-/search?q=" + quote('"><script>alert(1)</script>'))).text
    assert "<script>alert(1)" not in page


async def test_search_filters_by_topic(client, conn):
    page = (await client.get("/-/search?q=gpu&topic=costs")).text
    links = set(re.findall(r'class="result-title" href="/computekb/articles/([^"]+)"', page))
    costs = {r[0] for r in conn.execute("select article from article_topics where topic = 'costs'")}
    assert links and links <= costs


async def test_a_search_box_on_every_page(client):
    for path in ("/", "/computekb/articles", f"/computekb/accelerators/{H200}", "/-/compare"):
        assert 'class="site-search" action="/-/search"' in (await client.get(path)).text, path


async def test_csv_downloads_under_the_table_and_release(client, conn):
    release = conn.execute("select data_release from release").fetchone()[0]
    response = await client.get("/computekb/accelerators.csv")
    assert response.headers["content-disposition"] == f'attachment; filename="computekb-accelerators-{release}.csv"'


async def test_choose_other_accelerators_keeps_the_picks(client):
    page = (await client.get("/-/compare?ids=nvidia-h200-sxm,amd-mi300x")).text
    link = html.unescape(re.search(r'class="compare-choose" href="([^"]+)"', page).group(1))
    pick = (await client.get(link)).text
    checked = set(re.findall(r'value="([^"]+)" checked', pick))
    assert checked == {"nvidia-h200-sxm", "amd-mi300x"}


def chart_encodings(node):
    """Every `encoding` mapping of a dashboard chart, however deep in its layers."""
    if isinstance(node, dict):
        if "encoding" in node:
            yield node["encoding"]
        for value in node.values():
            yield from chart_encodings(value)
    elif isinstance(node, list):
        for value in node:
            yield from chart_encodings(value)


def vendor_colours(display):
    """{vendor: colour} of a chart's vendor_colour transform (a vega expression mapping names to colours)."""
    expression = next(t["calculate"] for t in display["transform"] if t.get("as") == "vendor_colour")
    return dict(re.findall(r"'([^']+)': '(#[0-9a-f]{6})'", expression))


def test_one_vendor_colour_for_every_vendor_and_chart(conn):
    dashboards = yaml.safe_load(METADATA_YML.read_text())["plugins"]["datasette-dashboards"]
    charts = [c for d in dashboards.values() for c in d["charts"].values() if "display" in c]
    coloured = [c for c in charts if any(e.get("color", {}).get("field") == "vendor" for e in chart_encodings(c))]
    assert len(coloured) >= 10
    scales = [e["color"]["scale"] for c in coloured for e in chart_encodings(c) if e.get("color", {}).get("field") == "vendor"]
    # the range is each row's own colour: the legend lists the vendors drawn, each in its one colour
    assert all(scale == {"range": {"field": "vendor_colour"}} for scale in scales)
    maps = [vendor_colours(c["display"]) for c in coloured]
    assert all(m == maps[0] for m in maps)
    names = {r[0] for r in conn.execute("select name from vendors")}
    assert set(maps[0]) == names
    assert len(set(maps[0].values())) == len(names)
    colours = [e["color"] for e in chart_encodings(dashboards) if "color" in e]
    assert not [c for c in colours if c["field"] == "precision"], "precision is not a colour"


def test_dashboard_axis_titles_are_whole():
    """A comma in an unquoted YAML flow mapping cuts a title ("Memory (GB"): every title closes its brackets."""
    dashboards = yaml.safe_load(METADATA_YML.read_text())["plugins"]["datasette-dashboards"]
    titles = [e[channel]["title"] for e in chart_encodings(dashboards) for channel in ("x", "y")
              if isinstance(e.get(channel), dict) and e[channel].get("title")]
    assert "Memory (GB, log scale)" in titles
    assert [t for t in titles if t.count("(") != t.count(")")] == []


# What fits, readable

FITS = "/-/what-fits?model=llama-3-1-70b&weights=format%3Afp8&kv_format=fp8"


async def test_what_fits_filters_by_accelerator_vendor_and_class(client, conn):
    one = (await client.get(f"{FITS}&context=32k&accelerator=nvidia-h100-sxm")).text
    assert re.findall(r'<tr data-accelerator="([^"]+)"', one) == ["nvidia-h100-sxm"]
    nvidia = re.findall(r'<tr data-accelerator="([^"]+)"', (await client.get(f"{FITS}&context=32k&vendor=nvidia")).text)
    vendors = dict(conn.execute("select slug, vendor from accelerators"))
    assert nvidia and {vendors[s] for s in nvidia} == {"nvidia"}
    edge = re.findall(r'<tr data-accelerator="([^"]+)"',
                      (await client.get(f"{FITS}&context=32k&device_class=edge-module")).text)
    classes = dict(conn.execute("select slug, device_class from accelerators"))
    assert edge and {classes[s] for s in edge} == {"edge-module"}
    assert "No accelerator matches these filters" in (await client.get(f"{FITS}&context=32k&vendor=no-such")).text


def test_counts_are_of_sensible_layouts_only():
    rows = [{"fits": 1, "devices_needed": 1, "device_class": "datacenter-gpu"},
            {"fits": 1, "devices_needed": 8, "device_class": "consumer-gpu"},
            {"fits": 1, "devices_needed": 40, "device_class": "edge-module"},      # 40 Jetsons: not counted
            {"fits": 1, "devices_needed": 16, "device_class": "datacenter-gpu"},
            {"fits": 0, "devices_needed": 1, "smallest_devices_that_fit": 2, "device_class": "datacenter-gpu"},
            {"fits": 0, "devices_needed": None, "device_class": "datacenter-gpu"}]
    assert counts(rows) == {"one": 1, "eight": 3, "any": 4, "of": 6}


async def test_a_device_that_does_not_fit_shows_its_shortfall_its_smallest_layout_and_no_speed(client):
    page = (await client.get(f"{FITS}&context=32k&devices=1&accelerator=nvidia-h100-sxm")).text
    row = page[page.index('<tr data-accelerator="nvidia-h100-sxm"'):]
    row = row[:row.index("</tr>")]
    assert "does not fit" in row and re.search(r"[\d.]+ GB short per device; fits on 2 \(TP 2\)", row)
    assert "ceiling" not in row and "tokens/s" not in row


async def test_a_context_beyond_the_window_is_answered_with_the_window(client):
    response = await client.get(f"{FITS}&context=10M")
    assert response.status_code == 200
    assert "Llama 3.1 70B reads at most 131,072 tokens" in response.text
    assert '<tr data-accelerator' not in response.text and "hold it" not in response.text


async def test_presets_stop_at_the_window_and_weights_are_the_models_own(client, conn):
    page = (await client.get("/-/what-fits?model=qwen3-0-6b&weights=format%3Abf16&context=4k")).text
    presets = page[page.index('id="context-hint"'):]
    presets = presets[:presets.index("</span>")]
    assert ">32k<" in presets and ">128k<" not in presets and ">1M<" not in presets
    chosen = page[page.index('name="weights"'):page.index('id="fits-checkpoints"')]
    others = [s for s, in conn.execute("select slug from checkpoints where model <> 'qwen3-0-6b'")]
    assert others and not any(f'value="checkpoint:{s}"' in chosen for s in others)


@pytest.mark.parametrize("query, message", [
    ("context=32k&devices=0", "Devices (tensor parallel) must be a whole number from 1 to 8, got &#39;0&#39;"),
    ("context=32k&devices=99999999999", "Devices (tensor parallel) must be a whole number from 1 to 8"),
    ("context=32k&batch=lots", "Batch must be a whole number from 1 to 999,999,999, got &#39;lots&#39;"),
    ("context=99999999999", "Context must be a whole number of tokens from 1 to 16,777,216 (16M), such as 32768, "
                            "32k or 128K; got &#39;99999999999&#39;"),
    ("context=32k&runtime=ollama", "Runtime must be one of vllm, sglang, tensorrt-llm, llama-cpp, got &#39;ollama&#39;"),
])
async def test_errors_name_the_field_as_labelled_with_its_limits(client, query, message):
    response = await client.get(f"{FITS}&{query}")
    assert response.status_code == 400 and message in response.text
    assert "tp" not in re.search(r'role="alert">(.*?)</div>', response.text, re.S).group(1).split()


async def test_the_runtimes_sequence_limit_is_asked_checked_and_passed_on(client):
    refused = await client.get(f"{FITS}&context=32k&max_num_seqs=0")
    assert refused.status_code == 400
    assert "Sequences at once (max_num_seqs) must be a whole number from 1 to 999,999,999, got &#39;0&#39;" in refused.text
    page = (await client.get(f"{FITS}&context=32k&max_num_seqs=16")).text
    query = re.search(r'href="(/computekb/what-fits\?[^"]*)"', page).group(1)
    assert 'name="max_num_seqs" value="16"' in page and "max_num_seqs=16" in query


async def test_a_short_answer_first_with_every_row_a_click_away(client):
    short = (await client.get(f"{FITS}&context=32k")).text
    assert short.index('id="answer"') < short.index('id="question"'), "the answer before the form"
    assert len(re.findall(r'<tr data-accelerator=', short)) == 12
    every = (await client.get(f"{FITS}&context=32k&all=1")).text
    assert len(re.findall(r'<tr data-accelerator=', every)) > 100 and 'class="show-all"' not in every


def test_the_context_reaches_the_sizing_through_python_calls_alone(db_path):
    """The page's answer is sized_rows: a read of the accelerators, then domain/fits.py per accelerator."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    sizing_sql.prepare_connection(conn)  # the weights' bits: uniform_bits, as on Datasette's connections

    def h100(context):
        asked = Asked("llama-3-1-70b", "", "fp8", "fp8", 8, context, 1, 1, "vllm", None)
        return next(r for r in sized_rows(conn, asked) if r["accelerator"] == "nvidia-h100-sxm")
    # KV cache of Llama 3.1 70B in FP8: 80 layers × 8 KV heads × 128 × 2 (key and value) × 1 byte
    # = 163,840 bytes a token; 32,768 tokens: 5.37 GB; 65,536: 10.74 GB
    assert [h100(tokens)["kv_cache_gb_per_device"] for tokens in (32768, 65536)] == [5.4, 10.7]
    assert h100(32768)["fits"] == 0 and h100(32768)["smallest_devices_that_fit"] == 2
    conn.close()


def test_figures_have_the_digits_of_their_sources_and_times_their_unit():
    assert [significant(v) for v in (1039.7, 106.9, 3.64, 0.5712, 0)] == ["1,040", "107", "3.64", "0.571", "0"]
    # 5,411,456 ms is 1.503 h; 296.2 ms stays in ms; 1,296.1 ms is 1.3 s; 150,000 ms is 2.5 min
    assert [duration(ms) for ms in (5_411_456.0, 296.2, 1296.1, 150_000)] == ["1.5 h", "300 ms", "1.3 s", "2.5 min"]


def test_a_price_is_to_the_cent_and_none_is_said_in_words():
    assert price_text([("EUR", 1.8214000000000001), ("USD", 2.5)]) == "1.82 EUR; 2.50 USD"
    assert price_text([]) == "no rental price on record"


async def test_the_form_submits_on_its_button_and_the_formulas_are_a_link(client):
    page = (await client.get(f"{FITS}&context=32k")).text
    assert '<button type="submit">Size it</button>' in page
    assert 'href="/-/sizing-formulas"' in page
    formulas = await client.get("/-/sizing-formulas")
    assert formulas.status_code == 200 and "Speed: a ceiling and an expectation" in formulas.text
    assert "form.submit()" not in (STATIC_DIR / "reader.js").read_text(encoding="utf-8")


@pytest.mark.parametrize("described, expected", [
    ('where memory_bandwidth_gbs ≥ 3000.0 and memory_gb ≥ 80 sorted by memory_bandwidth_gbs descending',
     "where Bandwidth ≥ 3,000 GB/s and Memory ≥ 80 GB sorted by bandwidth, highest first"),
    ('where launch_price_usd ≤ 2000 and native_fp4 = "yes" sorted by launch_price_usd',
     "where List price ≤ 2,000 USD and native FP4 sorted by list price, lowest first"),
    ('where name contains "h2"', 'where accelerator contains "h2"'),
    ('where scope != "system" sorted by memory_gb descending', "where not a system sorted by memory, highest first"),
])
def test_finder_summaries_name_columns_as_the_page_does(described, expected):
    from plugins.reader_finder import readable
    assert readable(described) == expected


async def test_spec_sheet_gives_three_models_decode_speed(client):
    """The ceiling and, beside it, the expected figure with its basis, on the fewest devices that hold each
    model: on one RTX 4090 (24 GB) Llama 3.1 8B in BF16 (16.1 GB) fits alone, 70B in FP8 (70.6 GB) needs 4."""
    page = (await client.get("/computekb/accelerators/nvidia-rtx-4090")).text
    section = page.split('id="section-decode"', 1)[1].split("</section>", 1)[0]
    rows = {model: section.split(f'data-model="{model}"', 1)[1].split("</tr>", 1)[0]
            for model in ("llama-3-1-8b", "llama-3-1-70b", "gpt-oss-120b")}
    assert '<td data-label="Devices" class="num">1</td>' in rows["llama-3-1-8b"]
    assert '<td data-label="Devices" class="num">4</td>' in rows["llama-3-1-70b"]
    for row in rows.values():
        assert "tokens/s" in row and "fitted on 46 measurements, typical error ±14%" in row
    assert "weights=checkpoint%3Agpt-oss-120b-mxfp4" in rows["gpt-oss-120b"]


@pytest.mark.parametrize("query, named", [("min_memory=48", "min_memory"),
                                          ("memory_gb__gte=48&colour__exact=red&vram=8", "colour__exact, vram")])
async def test_the_finder_refuses_a_filter_on_no_column(fixture_client, query, named):
    """Datasette answers a filter on a column the table lacks with no rows and no word: the finder says so."""
    response = await fixture_client.get(f"/-/accelerators?{query}")
    assert response.status_code == 400
    assert f"{named}: not a column of the accelerators table" in response.text


async def test_the_finder_takes_a_filter_on_a_derived_column(fixture_client):
    response = await fixture_client.get("/-/accelerators?native_fp8=yes")
    assert response.status_code == 200 and "not a column" not in response.text
