"""The canned queries of metadata.yml, run through Datasette against the real data.

Expected values come from the raw columns of the database (read through the
`conn` fixture, which has none of the SQL functions under test) or from the
hand-worked cases of tests/test_llm_math.py, never from the query output itself.
"""

import math
import re
from html import unescape
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from etl.metadata import full_metadata
from etl.serve import METADATA_YML

QUERIES = full_metadata(METADATA_YML)["databases"]["computekb"]["queries"]
USABLE = 0.9  # the documented default of usable_fraction
LLAMA_70B_FP16 = {"model": "llama-3-1-70b", "weight_format": "fp16", "kv_format": "fp16",
                  "context": "131072", "batch": "1"}
# Realistic parameters for each query of this module (metadata.yml may hold others).
EXAMPLES = {
    "what-fits": LLAMA_70B_FP16,
    "cost-per-million-tokens": {"model": "llama-3-1-70b", "weight_format": "fp8", "batch": "32"},
    "per-dollar-per-watt": {"device_class": ""},
    "articles-about": {"accelerator": "nvidia-h100-sxm"},
    "search-articles": {"q": "kv cache"},
}


async def run(client, name, **params):
    response = await client.get(f"/computekb/{name}.json?_shape=objects&" + urlencode(params))
    assert response.status_code == 200, (name, params, response.text[:500])
    return response.json()["rows"]


def errors(rows):
    return [r["error"] for r in rows if r["error"]]


def usable_memory(accelerator):
    """Memory usable at the stated bandwidth: the smaller of memory and addressable memory."""
    return min(m for m in (accelerator["memory_gb"], accelerator["addressable_memory_gb"]) if m is not None)


def test_every_query_has_a_title_a_description_and_its_parameters():
    assert set(EXAMPLES) <= set(QUERIES)
    for name in EXAMPLES:
        query = QUERIES[name]
        assert query["title"] and (query.get("description") or query.get("description_html")), name
        assert set(re.findall(r":(\w+)", query["sql"])) == set(query["params"]), name
        assert set(EXAMPLES[name]) <= set(query["params"]), name


# what-fits

async def test_llama_3_1_70b_at_128k_needs_42_9_gb_of_kv_cache_per_sequence(client, conn):
    model = conn.execute("select * from models where slug = 'llama-3-1-70b'").fetchone()
    # The hand-worked case: 2 × 80 layers × 8 KV heads × 128 × 131,072 tokens × 2 bytes = 42.95 GB
    assert (model["layers"], model["kv_heads"], model["head_dim"]) == (80, 8, 128)
    rows = await run(client, "what-fits", **LLAMA_70B_FP16)
    assert rows and not errors(rows)
    for row in rows:
        assert row["kv_cache_gb_per_sequence"] == 42.9
        assert row["kv_cache_gb"] == 42.9
        assert row["weights_gb"] == round(model["total_params_b"] * 2, 1)  # FP16: 2 bytes a parameter


async def test_what_fits_sizes_every_accelerator(client, conn):
    model = conn.execute("select * from models where slug = 'llama-3-1-70b'").fetchone()
    weights = model["total_params_b"] * 2
    weights_read = (model["active_params_b"] or model["total_params_b"]) * 2
    required = weights + 42.94967296
    devices = {d["slug"]: d for d in conn.execute(
        "select * from accelerators where device_class != 'dpu' "
        "and coalesce(memory_gb, addressable_memory_gb) is not null")}
    rows = await run(client, "what-fits", **LLAMA_70B_FP16, usable_fraction="0.9")
    assert {r["accelerator"] for r in rows} == set(devices)
    for row in rows:
        device = devices[row["accelerator"]]
        needed = math.ceil(required / (usable_memory(device) * USABLE))
        assert row["devices_needed"] == needed, row["accelerator"]
        assert row["fits_one_device"] == (needed == 1)
        assert row["required_gb"] == round(required, 1)
        if device["memory_bandwidth_gbs"] is None:
            assert row["decode_tokens_per_s"] is None
        else:
            ceiling = needed * device["memory_bandwidth_gbs"] / (weights_read + 42.94967296)
            assert row["decode_tokens_per_s"] == pytest.approx(ceiling, abs=0.051), row["accelerator"]
    assert [r["devices_needed"] for r in rows] == sorted(r["devices_needed"] for r in rows)


async def test_what_fits_shows_the_cheapest_offer_per_currency(client, conn):
    cheapest = {}
    for offer in conn.execute("select accelerator, currency, min(price_per_hour * 1.0 / gpu_count) as price "
                              "from cloud_offers group by accelerator, currency"):
        cheapest.setdefault(offer["accelerator"], {})[offer["currency"]] = offer["price"]
    assert cheapest
    rows = await run(client, "what-fits", **LLAMA_70B_FP16)
    for row in rows:
        shown = row["cheapest_per_gpu_hour"]
        if row["accelerator"] not in cheapest:
            assert shown is None
            continue
        parsed = {currency: float(price) for price, currency in (part.split() for part in shown.split("; "))}
        assert parsed == pytest.approx(cheapest[row["accelerator"]], abs=0.005), row["accelerator"]


@pytest.mark.parametrize("slug, figures, kv_gb", [
    # Hand-worked in tests/test_llm_math.py.
    ("deepseek-v3", {"attention": "mla", "layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64}, 9.210691584),
    ("gpt-oss-120b", {"layers": 36, "full_attention_layers": 18, "kv_heads": 8, "head_dim": 64,
                      "sliding_window": 128}, 4.8365568),
    ("gemma-3-27b", {"layers": 62, "full_attention_layers": 10, "kv_heads": 16, "head_dim": 128,
                     "sliding_window": 1024}, 11.173625856),
])
async def test_what_fits_uses_the_attention_of_the_model(client, conn, slug, figures, kv_gb):
    row = conn.execute(f"select {', '.join(figures)} from models where slug = ?", (slug,)).fetchone()
    assert dict(row) == figures
    rows = await run(client, "what-fits", model=slug, weight_format="fp8", kv_format="fp16",
                     context="131072", batch="2")
    assert rows and not errors(rows)
    assert rows[0]["kv_cache_gb_per_sequence"] == round(kv_gb, 1)
    assert rows[0]["kv_cache_gb"] == round(2 * kv_gb, 1)


@pytest.mark.parametrize("params, messages", [
    ({}, ["model is required", "weight_format is required", "kv_format is required",
          "context must be a whole number of at least 1, got ''"]),
    ({**LLAMA_70B_FP16, "model": "llama-9"}, ["model 'llama-9' is not a slug of the models table"]),
    ({**LLAMA_70B_FP16, "weight_format": "fp5"}, ["weight_format 'fp5' is not a slug of number_formats"]),
    ({**LLAMA_70B_FP16, "context": "128k"}, ["context must be a whole number of at least 1, got '128k'"]),
    ({**LLAMA_70B_FP16, "context": "0"}, ["context must be a whole number of at least 1, got '0'"]),
    ({**LLAMA_70B_FP16, "batch": "-2"}, ["batch must be a whole number of at least 1, got '-2'"]),
    ({**LLAMA_70B_FP16, "usable_fraction": "1.5"}, ["usable_fraction must be a number in (0, 1], got '1.5'"]),
    ({**LLAMA_70B_FP16, "usable_fraction": "0"}, ["usable_fraction must be a number in (0, 1], got '0'"]),
])
async def test_what_fits_explains_a_bad_parameter(client, params, messages):
    rows = await run(client, "what-fits", **params)
    assert all(r["error"] and r["accelerator"] is None for r in rows)
    for message in messages:
        assert any(message in error for error in errors(rows)), (message, errors(rows))


async def test_what_fits_names_the_figures_a_model_lacks(client, conn):
    incomplete = []
    for model in conn.execute("select * from models order by slug"):
        kv_figures = ("kv_lora_rank", "qk_rope_head_dim") if model["attention"] == "mla" else ("kv_heads", "head_dim")
        missing = [f for f in ("total_params_b", "layers") + kv_figures if model[f] is None]
        if missing:
            incomplete.append((model["slug"], missing))
    if not incomplete:
        pytest.skip("every model has the figures memory math needs")
    for slug, missing in incomplete:
        rows = await run(client, "what-fits", **{**LLAMA_70B_FP16, "model": slug})
        assert errors(rows) == [f"model {slug}: the models table has no {', '.join(missing)}, "
                                "so its memory cannot be computed"]


# cost-per-million-tokens

async def test_cost_per_million_tokens_per_offer_in_its_own_currency(client, conn):
    model = conn.execute("select * from models where slug = 'llama-3-1-70b'").fetchone()
    weights = model["total_params_b"] * 1  # FP8: 1 byte a parameter
    weights_read = (model["active_params_b"] or model["total_params_b"]) * 1
    offers = {o["slug"]: o for o in conn.execute(
        "select o.*, a.memory_gb, a.addressable_memory_gb, a.memory_bandwidth_gbs "
        "from cloud_offers o join accelerators a on a.slug = o.accelerator")}
    rows = await run(client, "cost-per-million-tokens", **EXAMPLES["cost-per-million-tokens"])
    assert {r["offer"] for r in rows} == set(offers)
    for row in rows:
        offer = offers[row["offer"]]
        assert (row["currency"], row["price_per_hour"]) == (offer["currency"], offer["price_per_hour"])
        tokens_per_s = 32 * offer["gpu_count"] * offer["memory_bandwidth_gbs"] / weights_read
        assert row["tokens_per_s"] == pytest.approx(tokens_per_s, abs=0.051)
        fits = weights <= offer["gpu_count"] * usable_memory(offer) * USABLE
        assert row["weights_fit"] == fits
        if fits:
            per_million = offer["price_per_hour"] / (tokens_per_s * 3600 / 1e6)
            assert row["cost_per_million_tokens"] == pytest.approx(per_million, abs=1e-4), row["offer"]
        else:
            assert row["cost_per_million_tokens"] is None
    assert any(r["cost_per_million_tokens"] for r in rows)


@pytest.mark.parametrize("params, message", [
    ({"model": "llama-3-1-70b"}, "weight_format is required"),
    ({"model": "llama-3-1-70b", "weight_format": "fp8", "batch": "1.5"}, "batch must be a whole number"),
    ({"model": "", "weight_format": "fp8"}, "model is required"),
])
async def test_cost_explains_a_bad_parameter(client, params, message):
    rows = await run(client, "cost-per-million-tokens", **params)
    assert all(r["offer"] is None for r in rows)
    assert any(message in error for error in errors(rows)), errors(rows)


# per-dollar-per-watt

async def test_per_dollar_and_per_watt(client, conn):
    accelerators = {a["slug"]: a for a in conn.execute(
        "select * from accelerators where coalesce(launch_price_usd, tdp_w) > 0 "
        "and coalesce(memory_gb, memory_bandwidth_gbs) is not null")}
    rows = await run(client, "per-dollar-per-watt")
    assert {r["accelerator"] for r in rows} == set(accelerators)
    priced = 0
    for row in rows:
        a = accelerators[row["accelerator"]]
        if a["tdp_w"] and a["memory_bandwidth_gbs"]:
            assert row["bandwidth_gbs_per_w"] == pytest.approx(a["memory_bandwidth_gbs"] / a["tdp_w"], abs=5e-4)
        if a["launch_price_usd"] and a["memory_gb"]:
            priced += 1
            assert row["memory_gb_per_usd"] == pytest.approx(a["memory_gb"] / a["launch_price_usd"], abs=5e-6)
        else:
            assert row["memory_gb_per_usd"] is None
    assert priced


async def test_per_dollar_per_watt_filters_and_checks_device_class(client, conn):
    device_class = conn.execute("select device_class from accelerators where tdp_w > 0 "
                                "group by 1 order by count(*) desc limit 1").fetchone()[0]
    rows = await run(client, "per-dollar-per-watt", device_class=device_class)
    assert rows and {r["device_class"] for r in rows} == {device_class}
    rows = await run(client, "per-dollar-per-watt", device_class="quantum")
    assert len(rows) == 1 and rows[0]["accelerator"] is None
    assert rows[0]["error"].startswith("device_class 'quantum' is not one of: ")
    assert device_class in rows[0]["error"]


# articles-about

async def test_articles_about_an_accelerator(client, conn):
    accelerator = conn.execute("select accelerator from article_accelerators group by 1 "
                               "order by count(*) desc, 1 limit 1").fetchone()[0]
    expected = {a["slug"]: a for a in conn.execute(
        "select a.* from articles a join article_accelerators l on l.article = a.slug where l.accelerator = ?",
        (accelerator,))}
    rows = await run(client, "articles-about", accelerator=accelerator)
    assert {r["article"] for r in rows} == set(expected)
    for row in rows:
        article = expected[row["article"]]
        assert (row["site"], row["language"], row["label"]) == (article["site"], article["language"], article["label"])


@pytest.mark.parametrize("accelerator, message", [
    ("", "accelerator is required: a slug of the accelerators table"),
    ("nvidia-h1000", "accelerator 'nvidia-h1000' is not a slug of the accelerators table"),
])
async def test_articles_about_explains_a_bad_parameter(client, accelerator, message):
    rows = await run(client, "articles-about", accelerator=accelerator)
    assert errors(rows) == [message]


async def test_articles_about_an_accelerator_no_article_discusses(client, conn):
    unlinked = conn.execute("select slug from accelerators where slug not in "
                            "(select accelerator from article_accelerators) order by slug limit 1").fetchone()
    if unlinked is None:
        pytest.skip("every accelerator is discussed by an article")
    rows = await run(client, "articles-about", accelerator=unlinked[0])
    assert errors(rows) == [f"no catalogued article discusses {unlinked[0]}"]


# search-articles

def article_text(article):
    return " ".join(article[c] or "" for c in ("title", "subtitle", "summary", "takeaways")).lower()


async def test_search_ranks_articles_with_every_word(client, conn):
    rows = await run(client, "search-articles", q="kv cache")
    direct = conn.execute("select count(*) from articles_fts where articles_fts match 'kv cache'").fetchone()[0]
    assert rows and len(rows) == direct and not errors(rows)
    articles = {a["slug"]: a for a in conn.execute("select * from articles")}
    for row in rows:
        text = article_text(articles[row["article"]])
        assert "kv" in text and "cache" in text
        assert "<mark>" in row["title"] + row["snippet"]
    assert [r["bm25"] for r in rows] == sorted(r["bm25"] for r in rows)


async def test_search_answers_in_the_language_of_the_match(client, conn):
    rows = await run(client, "search-articles", q="memoire")
    articles = {a["slug"]: a for a in conn.execute("select * from articles")}
    assert rows and not errors(rows)
    for row in rows:
        article = articles[row["article"]]
        assert row["language"] == article["language"]
        assert "mémoire" in article_text(article) or "memoire" in article_text(article)
    assert "fr" in {r["language"] for r in rows}


@pytest.mark.parametrize("q", ['"', "kv AND (", "NEAR(a b", "*", "cache OR", "'; drop table articles; --",
                               "a" * 2000, "mémoire\tkv"])
async def test_search_never_fails_on_query_syntax(client, q):
    rows = await run(client, "search-articles", q=q)
    assert rows
    assert not errors(rows) or (len(rows) == 1 and rows[0]["error"].startswith("no article matches "))


async def test_search_asks_for_words(client):
    rows = await run(client, "search-articles", q="  ")
    assert errors(rows) == ["q is required: words to search for"]


# Every query

@pytest.mark.parametrize("name", sorted(EXAMPLES))
@pytest.mark.parametrize("value", ["'", "%", "1e400", "nan", "-1", "x" * 5000, "１２", "\x00"])
async def test_no_parameter_value_makes_a_server_error(client, name, value):
    for param in QUERIES[name]["params"]:
        params = {**EXAMPLES[name], param: value}
        response = await client.get(f"/computekb/{name}.json?" + urlencode(params))
        assert response.status_code == 200, (name, param, value, response.text[:300])


@pytest.mark.parametrize("name", sorted(EXAMPLES))
async def test_realistic_parameters_give_rows(client, name):
    rows = await run(client, name, **EXAMPLES[name])
    assert rows and not errors(rows)


@pytest.mark.parametrize("name", [n for n in sorted(EXAMPLES) if "fragment" in QUERIES[n]])
async def test_chart_presets_name_columns_of_the_query(client, name):
    chart = dict(parse_qsl(QUERIES[name]["fragment"]))
    rows = await run(client, name, **EXAMPLES[name])
    for key in ("g.x_column", "g.y_column", "g.color_column"):
        if key in chart:
            assert chart[key] in rows[0], (name, key)
    assert chart["g.mark"] in ("bar", "line", "circle")


async def test_example_links_in_descriptions_work(client):
    links = [unescape(href) for name in EXAMPLES
             for href in re.findall(r'href="(/computekb/[^"]+\?[^"]+)"', QUERIES[name].get("description_html", ""))]
    assert links
    for link in links:
        url = urlsplit(link)
        name = url.path.rsplit("/", 1)[1]
        assert url.fragment == QUERIES[name]["fragment"]
        rows = await run(client, name, **dict(parse_qsl(url.query)))
        assert rows and not errors(rows), link


async def test_what_fits_page_renders(client):
    response = await client.get("/computekb/what-fits?" + urlencode(LLAMA_70B_FP16))
    assert response.status_code == 200
    assert "What fits this model?" in response.text
    assert ">42.9<" in response.text
