"""The canned queries of metadata.yml, run through Datasette against the real data.

Expected values come from the raw columns of the database (read through the
`conn` fixture, which has none of the SQL functions under test) or from the
hand-worked cases of tests/test_llm_math.py, never from the query output itself.
A bad parameter is refused with HTTP 400 and a message in every format; a form
opened blank and a search that finds nothing are answers, not errors.
"""

import re
from html import unescape
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import pytest
from markupsafe import escape

from serving.metadata import full_metadata
from serving.paths import METADATA_YML
from serving.site import query_path

# Datasette turns on sqlite callback tracebacks: each refusal is also reported
# to sys.unraisablehook (the server log), which pytest would warn about.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

QUERIES = full_metadata(METADATA_YML)["databases"]["computekb"]["queries"]
USABLE = 0.92  # vLLM's gpu_memory_utilization, the default runtime's fraction
LLAMA_70B_FP16 = {"model": "llama-3-1-70b", "weight_format": "fp16", "kv_format": "fp16",
                  "context": "131072", "batch": "1"}
# Realistic parameters for each query of this module (metadata.yml may hold others).
EXAMPLES = {
    "what-fits": LLAMA_70B_FP16,
    "longest-context": {"model": "llama-3-1-70b", "weight_format": "fp8", "kv_format": "fp8"},
    "largest-batch": {"model": "llama-3-1-8b", "weight_format": "bf16", "kv_format": "fp16", "context": "8192"},
    "cost-per-million-tokens": {"model": "llama-3-1-70b", "weight_format": "fp8", "batch": "32"},
    "per-dollar-per-watt": {"device_class": ""},
    "articles-about": {"accelerator": "nvidia-h100-sxm"},
    "search-articles": {"q": "kv cache"},
}


async def run(client, name, **params):
    response = await client.get(f"/computekb/{name}.json?_shape=objects&" + urlencode(params))
    assert response.status_code == 200, (name, params, response.text[:500])
    return response.json()["rows"]


CONTEXT_PROBLEM = "context must be a whole number of tokens from 1 to 16,777,216 (16M), such as 32768, 32k or 128K; got "


async def refusal(client, name, **params):
    """The message a refused query gives, the same in JSON, on the HTML page
    (which keeps the form and what was typed) and as CSV."""
    query = urlencode(params)
    response = await client.get(f"/computekb/{name}.json?{query}")
    assert response.status_code == 400, (name, params, response.text[:500])
    body = response.json()
    assert body["ok"] is False and body["rows"] == []
    message = body["error"]
    page = await client.get(f"/computekb/{name}?{query}")
    assert page.status_code == 400
    assert f'<p class="message-error">{escape(message)}</p>' in page.text
    for param, value in params.items():
        assert f'name="{param}" value="{escape(value)}"' in page.text, param
    csv = await client.get(f"/computekb/{name}.csv?{query}")
    assert (csv.status_code, csv.text) == (400, message + "\n")
    assert csv.headers["content-type"] == "text/plain; charset=utf-8"
    return message


def usable_memory(accelerator):
    """Memory usable at the stated bandwidth: the smaller of memory and addressable memory."""
    return min(m for m in (accelerator["memory_gb"], accelerator["addressable_memory_gb"]) if m is not None)


def test_every_query_has_a_title_a_description_and_its_parameters():
    assert set(EXAMPLES) <= set(QUERIES)
    for name in EXAMPLES:
        query = QUERIES[name]
        assert query["title"] and (query.get("description") or query.get("description_html")), name
        named = set(re.findall(r":(\w+)", query["sql"]))
        # every parameter is named in the SQL, and the magic parameter that checks them
        assert {n for n in named if not n.startswith("_")} == set(query["params"]), name
        assert f"_checked_{name.replace('-', '_')}" in named, name
        assert set(EXAMPLES[name]) <= set(query["params"]), name


def test_no_rows_messages_name_only_parameters_of_their_query():
    """templates/query-computekb.html formats `no_rows` with the parameters: a
    name that is not one would break the page."""
    with_message = [name for name in QUERIES if "no_rows" in QUERIES[name]]
    assert {"search-articles", "articles-about"} <= set(with_message)
    for name in with_message:
        fields = set(re.findall(r"{(\w*)", QUERIES[name]["no_rows"]))
        assert fields and fields <= set(QUERIES[name]["params"]), name


# what-fits

H100_EXPOSED_GB = 81080 * 2**20 / 1e9  # the 79.18 GiB vLLM sizes its fraction of, as runtime_memory states it


def devices(conn):
    """Accelerators the sizing queries answer for: every one that runs models and has a memory figure."""
    return {d["slug"]: d for d in conn.execute(
        "select * from accelerators where device_class != 'dpu' "
        "and coalesce(memory_gb, addressable_memory_gb) is not null")}


def by_accelerator(rows):
    return {row["accelerator"]: row for row in rows}


async def test_llama_3_1_70b_at_128k_needs_42_9_gb_of_kv_cache_per_sequence(client, conn):
    model = conn.execute("select * from models where slug = 'llama-3-1-70b'").fetchone()
    # The hand-worked case: 2 × 80 layers × 8 KV heads × 128 × 131,072 tokens × 2 bytes = 42.95 GB
    assert (model["layers"], model["kv_heads"], model["head_dim"]) == (80, 8, 128)
    rows = await run(client, "what-fits", **LLAMA_70B_FP16)
    assert rows
    for row in rows:
        assert row["kv_cache_gb_per_sequence"] == 42.9
        assert row["weights_gb"] == round(model["computed_params_b"] * 2, 1)  # FP16: 2 bytes a parameter


async def test_what_fits_sizes_every_accelerator_with_the_memory_the_runtime_sees(client, conn):
    rows = by_accelerator(await run(client, "what-fits", **LLAMA_70B_FP16))
    assert set(rows) == set(devices(conn))
    h100 = rows["nvidia-h100-sxm"]
    assert (h100["memory_gb"], h100["memory_estimated"]) == (round(H100_EXPOSED_GB, 1), 0)
    assert h100["usable_gb_per_device"] == round(H100_EXPOSED_GB * USABLE, 1)
    estimated = [slug for slug, d in devices(conn).items() if slug not in
                 {r[0] for r in conn.execute("select accelerator from runtime_memory")}]
    assert estimated and all(rows[slug]["memory_estimated"] == 1 for slug in estimated)
    # where nothing was measured, the printed capacity is read as GiB: an "80 GB" A100 PCIe is 85.9 GB
    # (rounded to 0.01 GB, then shown to 0.1 GB)
    for slug in estimated:
        assert rows[slug]["memory_gb"] == pytest.approx(usable_memory(devices(conn)[slug]) * 1.073741824, abs=0.06), slug


async def test_llama_3_1_70b_fp16_on_h100_gets_a_tensor_parallel_layout_that_divides_64_heads(client):
    # Per device at TP=2: 141.1 GB / 2 of weights + 42.9 GB / 2 of KV = 92 GB > 77.0 usable (85.52 GB × 0.9);
    # at TP=4: 35.3 + 10.7 = 46 GB fits. 3 would not divide the 64 heads.
    h100 = by_accelerator(await run(client, "what-fits", **LLAMA_70B_FP16))["nvidia-h100-sxm"]
    assert (h100["tp"], h100["pp"], h100["devices_needed"], h100["fits"]) == (4, 1, 4, 1)
    assert 64 % h100["tp"] == 0


async def test_the_batch_counts(client):
    # Batch 32: 32 × 42.95 GB of KV. At TP=8 and one stage that is 171.8 GB a device: too much, so the
    # layout adds pipeline stages; at PP=3 the busiest stage holds 27 of the 80 layers:
    # 171.8 × 27 / 80 = 58.0 GB of KV, + 141.1 / 8 × 27 / 80 + embedding ≈ 6.0 GB of weights, < 77.0 GB.
    rows = by_accelerator(await run(client, "what-fits", **{**LLAMA_70B_FP16, "batch": "32"}))
    h100 = rows["nvidia-h100-sxm"]
    assert (h100["tp"], h100["pp"], h100["devices_needed"]) == (8, 3, 24)
    assert h100["kv_cache_gb_per_device"] == round(42.94967296 * 32 / 8 * 27 / 80, 1)


DEEPSEEK_128K_BATCH_8 = {"model": "deepseek-v3", "checkpoint": "deepseek-v3-fp8", "kv_format": "bf16",
                         "context": "131072", "batch": "8"}


async def test_deepseek_v3_fp8_at_128k_batch_8_does_not_fit_8_h200_with_tp_8(client, conn):
    # The MLA latent is held whole on every rank: 61 layers × (512 + 64) × 131,072 tokens × 2 bytes
    # = 9.21 GB per sequence, × 8 = 73.7 GB on each device, beside 671B / 8 FP8 weights (≥ 83.9 GB):
    # more than the 141 GB × 0.9 = 126.9 GB a device may fill.
    model = conn.execute("select * from models where slug = 'deepseek-v3'").fetchone()
    assert (model["layers"], model["kv_lora_rank"], model["qk_rope_head_dim"]) == (61, 512, 64)
    h200 = by_accelerator(await run(client, "what-fits", **DEEPSEEK_128K_BATCH_8, tp="8"))["nvidia-h200-sxm"]
    assert (h200["tp"], h200["devices_needed"], h200["fits"]) == (8, 8, 0)
    assert h200["kv_cache_gb_per_device"] == round(8 * 9.210691584, 1)
    assert h200["needed_gb_per_device"] > h200["usable_gb_per_device"]


async def test_no_layout_splits_the_heads_unevenly(client, conn):
    """DeepSeek-V3 has 128 heads: never 6 devices of tensor parallelism; 6 asked for is refused with the nearest."""
    rows = await run(client, "what-fits", **DEEPSEEK_128K_BATCH_8)
    assert rows
    for row in rows:
        if row["tp"] is not None:
            assert 128 % row["tp"] == 0 and row["devices_needed"] != 6, row["accelerator"]
    for row in await run(client, "what-fits", **DEEPSEEK_128K_BATCH_8, tp="6"):
        assert row["fits"] == 0 and row["devices_needed"] is None
        assert row["problem"] == ("tp=6 does not divide the 128 attention heads; "
                                  "the nearest valid layouts are tp=4 or tp=8")


async def test_kv_heads_are_replicated_on_real_data(client, conn):
    # Qwen3-30B-A3B has 4 KV heads: at TP=8 each rank keeps one, a quarter of the cache, not an eighth.
    model = conn.execute("select * from models where slug = 'qwen3-30b-a3b'").fetchone()
    assert model["kv_heads"] == 4
    params = {"model": "qwen3-30b-a3b", "weight_format": "bf16", "kv_format": "bf16", "context": "32768", "tp": "8"}
    for row in await run(client, "what-fits", **params):
        whole = 2 * model["layers"] * model["kv_heads"] * model["head_dim"] * 32768 * 2 / 1e9
        assert row["kv_cache_gb_per_sequence"] == round(whole, 1)
        assert row["kv_cache_gb_per_device"] == round(whole / 4, 1), row["accelerator"]


async def test_fp8_on_a100_is_not_native_and_native_fits_come_first(client, conn):
    params = {**LLAMA_70B_FP16, "weight_format": "fp8", "kv_format": "fp8"}
    rows = await run(client, "what-fits", **params)
    a100 = by_accelerator(rows)["nvidia-a100-sxm-80gb"]
    assert a100["fits"] == 1 and a100["native"] == 0
    supported = {f for (f,) in conn.execute("select format from format_support where accelerator = 'nvidia-a100-sxm-80gb'"
                                          " and coalesce(supported, 1) = 1")}
    assert not supported & {"fp8", "fp8-e4m3", "fp8-e5m2"}
    ranks = [(r["fits"] == 1 and r["native"] == 1, r["fits"] == 1) for r in rows]
    assert ranks == sorted(ranks, reverse=True)
    assert ranks[0] == (True, True) and (False, True) in ranks


async def test_a_checkpoint_is_sized_per_tensor_group(client, conn):
    checkpoint = conn.execute("select * from checkpoints where slug = 'gpt-oss-120b-mxfp4'").fetchone()
    rows = await run(client, "what-fits", model="gpt-oss-120b", checkpoint="gpt-oss-120b-mxfp4", kv_format="bf16",
                     context="131072")
    assert rows and {r["weights_gb"] for r in rows} == {round(checkpoint["size_gb"], 1)}
    # 60.8 GiB in OpenAI's model card, within 3%
    assert checkpoint["size_gb"] * 1e9 / 2**30 == pytest.approx(60.8, rel=0.03)


def test_checkpoint_sizes_agree_with_their_publishers_within_three_percent(conn):
    """The size computed per tensor group against the size its publisher states."""
    stated = conn.execute("select slug, size_gb, stated_size_gb from checkpoints where stated_size_gb is not null").fetchall()
    assert len(stated) >= 3
    for row in stated:
        assert row["size_gb"] == pytest.approx(row["stated_size_gb"], rel=0.03), row["slug"]


async def test_gguf_checkpoints_are_offered_and_run_by_no_accelerator_natively(client, conn):
    """llama.cpp's block types are software formats: no accelerator lists them."""
    checkpoint = conn.execute("select * from checkpoints where slug = 'llama-3-1-8b-gguf-q4-k-m'").fetchone()
    rows = await run(client, "what-fits", model="llama-3-1-8b", checkpoint="llama-3-1-8b-gguf-q4-k-m", kv_format="fp16",
                     context="8192")
    assert rows and {r["weights_gb"] for r in rows} == {round(checkpoint["size_gb"], 1)}
    assert {r["native"] for r in rows} <= {0, None} and 0 in {r["native"] for r in rows}


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
                     context="131072", batch="2", tp="1")
    assert rows
    assert rows[0]["kv_cache_gb_per_sequence"] == round(kv_gb, 1)
    assert rows[0]["kv_cache_gb_per_device"] == round(2 * kv_gb, 1)


@pytest.mark.parametrize("params, message", [
    ({**LLAMA_70B_FP16, "model": " "}, "model is required: choose one of the models"),
    ({**LLAMA_70B_FP16, "weight_format": "fp5"},
     "weight_format 'fp5' is not one of the number formats with known bits here; did you mean "
     "FP4 E2M1 (fp4-e2m1), FP6 E2M3 (fp6-e2m3), FP6 E3M2 (fp6-e3m2), FP8 E4M3 (fp8-e4m3), FP8 E5M2 (fp8-e5m2)?"),
    ({**LLAMA_70B_FP16, "context": "12q"}, CONTEXT_PROBLEM + "'12q'"),
    ({**LLAMA_70B_FP16, "context": "0"}, CONTEXT_PROBLEM + "'0'"),
    ({**LLAMA_70B_FP16, "context": ""}, CONTEXT_PROBLEM + "''"),
    ({**LLAMA_70B_FP16, "context": "16385k"}, CONTEXT_PROBLEM + "'16385k'"),
    ({**LLAMA_70B_FP16, "batch": "-2"}, "batch must be a whole number from 1 to 999,999,999, got '-2'"),
    ({**LLAMA_70B_FP16, "tp": "0"}, "tp must be a whole number from 1 to 8, got '0'"),
    ({**LLAMA_70B_FP16, "tp": "9"}, "tp must be a whole number from 1 to 8, got '9'"),
    ({**LLAMA_70B_FP16, "usable_fraction": "1.5"}, "usable_fraction must be a number above 0 and at most 1, got '1.5'"),
    ({**LLAMA_70B_FP16, "usable_fraction": "0"}, "usable_fraction must be a number above 0 and at most 1, got '0'"),
    ({**LLAMA_70B_FP16, "model": "<script>x</script>"}, "model '<script>x</script>' is not one of the models here"),
    ({**LLAMA_70B_FP16, "checkpoint": "gpt-oss-120b-mxfp4"},
     ("checkpoint 'gpt-oss-120b-mxfp4' is not one of the checkpoints of model 'llama-3-1-70b' here; "
      "give checkpoint or weight_format, not both")),
])
async def test_what_fits_refuses_a_bad_parameter(client, params, message):
    assert await refusal(client, "what-fits", **params) == message


async def test_an_offer_without_a_price_is_no_price(client, conn):
    """printf('%.2f') of NULL is 0.00: an accelerator whose current offers state no price has none."""
    unpriced = {slug for slug, in conn.execute(
        "select accelerator from cloud_offers where current group by accelerator "
        "having count(price_per_gpu_hour) = 0")}
    rows = await run(client, "what-fits", **LLAMA_70B_FP16)
    assert unpriced and {r["accelerator"]: r["cheapest_per_gpu_hour"] for r in rows
                         if r["accelerator"] in unpriced} == dict.fromkeys(unpriced & {r["accelerator"] for r in rows})
    assert not [r for r in rows if "0.00 " in (r["cheapest_per_gpu_hour"] or "")]


async def test_an_unknown_model_is_offered_the_closest_names(client):
    message = await refusal(client, "what-fits", **{**LLAMA_70B_FP16, "model": "llama-3-1-7b"})
    assert message.startswith("model 'llama-3-1-7b' is not one of the models here; did you mean ")
    assert "Llama 3.1 70B (llama-3-1-70b)" in message and "Llama 3.1 8B (llama-3-1-8b)" in message


async def test_the_context_reads_as_the_page_writes_it(client):
    """One rule for the context, page and query alike: 128k is 128 × 1,024 tokens."""
    assert await run(client, "what-fits", **{**LLAMA_70B_FP16, "context": "128k"}) == \
        await run(client, "what-fits", **{**LLAMA_70B_FP16, "context": "131072"})


async def test_what_fits_names_every_problem_at_once(client):
    # Only batch given: every required parameter is missing, each is named.
    assert await refusal(client, "what-fits", batch="2") == "; ".join([
        "model is required: choose one of the models",
        "weight_format is required: choose one of the number formats with known bits",
        "kv_format is required: choose one of the number formats with known bits",
        CONTEXT_PROBLEM + "''"])


async def test_every_model_can_be_sized(client, conn):
    slugs = [slug for (slug,) in conn.execute("select slug from models order by slug")]
    assert len(slugs) >= 21
    for slug in slugs:
        rows = await run(client, "what-fits", model=slug, weight_format="bf16", kv_format="bf16", context="4096")
        assert rows and any(r["fits"] == 1 for r in rows), slug


def agrees_with_the_maker(stated, computed):
    """Within 1% of a figure stated to three significant digits or more; a figure stated
    to fewer ("12B", "1T") only says the count rounds to it (half a unit of its last digit)."""
    text = f"{stated:g}"
    digits = text.replace(".", "").strip("0")
    if len(digits) >= 3:
        return computed == pytest.approx(stated, rel=0.01)
    last_digit = 10.0 ** -len(text.split(".")[1]) if "." in text else 10.0 ** (len(text) - len(text.rstrip("0")))
    return abs(computed - stated) <= last_digit / 2


@pytest.mark.parametrize("stated, computed, agrees", [
    (36.7, 36.62, True), (12.9, 12.75, False), (12.9, 12.88, True),   # three digits: 1%
    (12, 12.18, True), (12, 12.80, False), (5.1, 5.13, True), (5.1, 5.16, False),  # fewer: rounds to it
    (1000, 1026.4, True), (1000, 1600, False),
])
def test_agreement_with_a_maker_figure_follows_its_precision(stated, computed, agrees):
    assert agrees_with_the_maker(stated, computed) is agrees


def test_parameter_counts_agree_with_the_makers_figures(conn):
    """Total and active parameters computed from the config fields against the maker's stated
    figures, the active ones counted as the maker counts them (active_params_counted)."""
    checked = 0
    for model in conn.execute("select * from models where total_params_b is not null or active_params_b is not null"):
        for stated, computed in ((model["total_params_b"], model["computed_params_b"]),
                                 (model["active_params_b"], model["computed_active_as_stated_b"])):
            if stated is not None:
                assert agrees_with_the_maker(stated, computed), (model["slug"], stated, computed)
                checked += 1
    assert checked >= 22


async def test_what_fits_defaults_batch_and_usable_fraction(client):
    """Left out or left empty (as the form sends them), batch is 1, the runtime vLLM and usable_fraction
    vLLM's own 0.92."""
    explicit = await run(client, "what-fits", **LLAMA_70B_FP16, usable_fraction="0.92", runtime="vllm")
    assert explicit
    left_out = {k: v for k, v in LLAMA_70B_FP16.items() if k != "batch"}
    assert await run(client, "what-fits", **left_out) == explicit
    assert await run(client, "what-fits", **left_out, batch="", usable_fraction="") == explicit
    assert await run(client, "what-fits", **LLAMA_70B_FP16, usable_fraction="0.5") != explicit


# longest-context and largest-batch

async def test_the_longest_context_for_every_accelerator_and_device_count(client, conn):
    rows = await run(client, "longest-context", **EXAMPLES["longest-context"])
    assert {r["accelerator"] for r in rows} == set(devices(conn))
    assert {r["tp"] for r in rows} == {1, 2, 4, 8}
    h100 = {r["tp"]: r for r in rows if r["accelerator"] == "nvidia-h100-sxm"}
    # Llama 3.1 70B in FP8 on one H100: 85.02 GB × 0.92 = 78.2 GB usable − 70.6 GB of weights − 5.2 GB
    # of vLLM's reserve (its sampler pass: 1,024 × 128,256 logits × 38.67 bytes = 5.08 GB, and 0.13 GiB
    # of non-torch memory) leaves about 2.4 GB for a cache of 2 × 80 × 8 × 128 × 1 byte = 163,840 bytes
    # a token: ~14,800 tokens.
    assert 13_000 < h100[1]["longest_context"] < 16_000 and h100[1]["full_context"] == 0
    assert h100[2]["longest_context"] == 131072 and h100[2]["full_context"] == 1


async def test_the_longest_context_stops_at_the_models_window_or_a_given_maximum(client, conn):
    params = {"model": "gemma-3-4b", "weight_format": "bf16", "kv_format": "bf16"}
    rows = await run(client, "longest-context", **params)
    assert rows and {r["max_context"] for r in rows} == {131072}
    rows = await run(client, "longest-context", **params, max_context="32768")
    assert rows and {r["max_context"] for r in rows} == {32768}


async def test_the_largest_batch_for_every_accelerator_and_device_count(client, conn):
    rows = await run(client, "largest-batch", **EXAMPLES["largest-batch"])
    assert {r["accelerator"] for r in rows} == set(devices(conn))
    h100 = {r["tp"]: r for r in rows if r["accelerator"] == "nvidia-h100-sxm"}
    # Llama 3.1 8B in BF16 at 8,192 tokens: 2 × 32 × 8 × 128 × 8,192 × 2 bytes = 1.07 GB a sequence;
    # 78.2 GB − 16.1 GB of weights − 5.2 GB of vLLM's reserve leaves room for ~53; twice the devices
    # hold more than twice as many.
    assert 50 <= h100[1]["largest_batch"] <= 55
    assert h100[2]["largest_batch"] > 2 * h100[1]["largest_batch"]
    assert h100[1]["ceiling_batch_tokens_per_s"] > 0


# cost-per-million-tokens

async def test_cost_per_million_tokens_per_offer_in_its_own_currency(client, conn):
    model = conn.execute("select * from models where slug = 'llama-3-1-70b'").fetchone()
    weights = model["computed_params_b"] * 1  # FP8: 1 byte a parameter
    weights_read = model["computed_active_params_b"] * 1
    offers = {o["slug"]: o for o in conn.execute(
        "select o.*, coalesce(r.memory_gb, round(coalesce(min(a.memory_gb, a.addressable_memory_gb), a.memory_gb, "
        "a.addressable_memory_gb) * 1.073741824, 2)) as memory, a.memory_bandwidth_gbs, a.interconnect_gbs "
        "from cloud_offers o "
        "join accelerators a on a.slug = o.accelerator left join runtime_memory r on r.accelerator = a.slug "
        "where o.current and o.price_per_hour is not null")}
    cheapest = {}
    for offer in sorted(offers.values(), key=lambda o: (o["price_per_gpu_hour"], o["slug"])):
        cheapest.setdefault((offer["accelerator"], offer["currency"]), offer["slug"])
    # sequences of one token: the KV cache is negligible, and the ceiling is the weights' alone
    rows = await run(client, "cost-per-million-tokens", **EXAMPLES["cost-per-million-tokens"], context="1")
    assert {r["offer"] for r in rows} == set(cheapest.values()), "the cheapest current offer per accelerator"
    for row in rows:
        offer = offers[row["offer"]]
        assert row["currency"] == offer["currency"]
        assert row["price_per_hour"] == round(offer["price_per_hour"], 6), "the provider's digits, no float noise"
        if offer["memory_bandwidth_gbs"] is None:  # no bandwidth known: no speed, no cost
            assert (row["ceiling_tokens_per_s"], row["cost_per_million_tokens"]) == (None, None), row["offer"]
            continue
        if 8 % offer["gpu_count"]:  # tensor parallelism over GPUs that do not divide the 8 KV heads
            assert (row["ceiling_tokens_per_s"], row["cost_per_million_tokens"]) == (None, None), row["offer"]
            assert row["problem"], row["offer"]
            continue
        # A dense model with 8 KV heads on at most 8 GPUs: each reads 1/gpu_count of the weights a token
        # reads (all but the embedding), plus a KV cache of one token per sequence (under 0.1%); with
        # more than one GPU, each of the 80 layers all-reduces the batch's hidden state (32 × 8,192 × 2
        # bytes) twice: 2 (n − 1) / n of it over the link (half its bidirectional figure) and 6 µs.
        n = offer["gpu_count"]
        step = weights_read / (n * offer["memory_bandwidth_gbs"])
        if n > 1:
            link = offer["interconnect_gbs"] / 2 * 1e9 if offer["interconnect_gbs"] else None
            step += 2 * 80 * ((2 * (n - 1) / n * 32 * 8192 * 2 / link if link else 0) + 6e-6)
        assert row["ceiling_tokens_per_s"] == pytest.approx(32 / step, rel=1e-3), row["offer"]
        # Fits: weights / gpu_count plus vLLM's reserve (at most 6 GB) within the usable memory; offers
        # closer than that to the edge are not decided by hand.
        per_gpu, usable = weights / n, offer["memory"] * USABLE
        if per_gpu > usable or per_gpu + 6 < usable:
            assert row["fits"] == (per_gpu < usable), row["offer"]
        if row["fits"]:
            per_million = offer["price_per_hour"] / (row["ceiling_tokens_per_s"] * 3600 / 1e6)
            assert row["ceiling_cost_per_million_tokens"] == pytest.approx(per_million, rel=1e-3), row["offer"]
            # at the expected speed, below the ceiling: a higher cost
            expected = offer["price_per_hour"] / (row["expected_tokens_per_s"] * 3600 / 1e6)
            assert row["cost_per_million_tokens"] == pytest.approx(expected, rel=1e-3), row["offer"]
            assert row["cost_per_million_tokens"] > row["ceiling_cost_per_million_tokens"], row["offer"]
            assert row["expected_basis"].startswith("fitted on "), row["offer"]
        else:
            assert row["cost_per_million_tokens"] is None and row["ceiling_cost_per_million_tokens"] is None
    assert any(r["cost_per_million_tokens"] for r in rows)
    costs = [r["cost_per_million_tokens"] for r in rows]
    priced = [c for c in costs if c is not None]
    assert costs == priced + [None] * (len(costs) - len(priced)) and priced == sorted(priced), "cheapest first"
    assert all(r["no_cost_reason"] for r in rows if r["cost_per_million_tokens"] is None)


async def test_cost_per_million_tokens_opened_bare_answers_llama_70b_in_fp8(client):
    rows = (await client.get("/computekb/cost-per-million-tokens.json?_shape=array")).json()
    h200 = [r for r in rows if r["accelerator"] == "nvidia-h200-sxm"]
    assert h200 and h200[0]["name"] == "H200 SXM" and h200[0]["cost_per_million_tokens"] is not None


def by_offer(rows):
    return {row["offer"]: row for row in rows}


async def test_cost_counts_the_kv_cache(client):
    """Llama 3.1 70B in FP8 on one H100 at batch 32: one token each fits (70.6 GB of weights), 32 sequences of
    2,048 tokens do not (2 × 80 × 8 × 128 × 2 bytes = 327,680 bytes a token: 21.5 GB more)."""
    short, long = [by_offer(await run(client, "cost-per-million-tokens", **EXAMPLES["cost-per-million-tokens"],
                                      context=context)) for context in ("1", "2048")]
    h100 = [offer for offer, row in short.items() if row["accelerator"] == "nvidia-h100-sxm" and row["gpu_count"] == 1]
    assert h100
    for offer in h100:
        assert short[offer]["fits"] and short[offer]["cost_per_million_tokens"]
        assert not long[offer]["fits"] and long[offer]["cost_per_million_tokens"] is None


async def test_cost_counts_the_experts_a_batch_touches(client):
    # Mixtral 8x7B in BF16 on one GPU reads per step: attention 1.342B + head 0.131B + router 0.001B
    # + 32 layers × 8 experts × 176.16M = 45.097B of experts × the share touched.
    # Batch 1: 2 of 8 → 1.474 + 11.274 = 12.748B; batch 8: 7.199 of 8 → 1.474 + 40.583 = 42.057B.
    # So 8 sequences decode at 8 × 12.748 / 42.057 = 2.42 times one sequence's rate, not 8 times
    # (sequences of one token: the KV cache is left out).
    one, eight = [by_offer(await run(client, "cost-per-million-tokens", model="mixtral-8x7b",
                                     weight_format="bf16", batch=batch, context="1")) for batch in ("1", "8")]
    single_gpu = [offer for offer, row in one.items() if row["gpu_count"] == 1 and row["ceiling_tokens_per_s"]]
    assert single_gpu
    for offer in single_gpu:
        assert eight[offer]["ceiling_tokens_per_s"] / one[offer]["ceiling_tokens_per_s"] == pytest.approx(8 * 12.748 / 42.057, rel=0.01)


@pytest.mark.parametrize("params, message", [
    ({"model": "llama-3-1-70b", "weight_format": "qqqq"},
     "weight_format 'qqqq' is not one of the number formats with known bits here"),
    ({"model": "llama-3-1-70b", "weight_format": "fp8", "batch": "1.5"},
     "batch must be a whole number from 1 to 999,999,999, got '1.5'"),
    ({"model": "qqqq", "weight_format": "fp8"}, "model 'qqqq' is not one of the models here"),
])
async def test_cost_refuses_a_bad_parameter(client, params, message):
    assert await refusal(client, "cost-per-million-tokens", **params) == message


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
    message = await refusal(client, "per-dollar-per-watt", device_class="quantum")
    classes = [c for (c,) in conn.execute("select distinct device_class from accelerators order by 1")]
    assert message == f"device_class 'quantum' is not one of: {', '.join(classes)} (leave it empty for all)"


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
    (" ", "accelerator is required: choose one of the accelerators"),
    ("nvidia-h1000x", "accelerator 'nvidia-h1000x' is not one of the accelerators here; did you mean "),
])
async def test_articles_about_refuses_a_bad_parameter(client, accelerator, message):
    assert (await refusal(client, "articles-about", accelerator=accelerator)).startswith(message)


async def test_articles_about_an_accelerator_no_article_discusses(client, conn):
    unlinked = conn.execute("select slug from accelerators where slug not in "
                            "(select accelerator from article_accelerators) order by slug limit 1").fetchone()
    if unlinked is None:
        pytest.skip("every accelerator is discussed by an article")
    assert await run(client, "articles-about", accelerator=unlinked[0]) == []
    page = await client.get(f"/computekb/articles-about?accelerator={unlinked[0]}")
    assert page.status_code == 200
    assert f'<p class="zero-results no-rows">No catalogued article discusses {unlinked[0]}.</p>' in page.text


# search-articles

def article_text(article):
    return " ".join(article[c] or "" for c in ("title", "subtitle", "summary", "takeaways")).lower()


async def test_search_ranks_articles_with_every_word(client, conn):
    rows = await run(client, "search-articles", q="kv cache")
    direct = conn.execute("select count(*) from articles_fts where articles_fts match 'kv cache'").fetchone()[0]
    assert rows and len(rows) == direct
    articles = {a["slug"]: a for a in conn.execute("select * from articles")}
    for row in rows:
        text = article_text(articles[row["article"]])
        assert "kv" in text and "cache" in text
        assert "<mark>" in row["title"] + row["snippet"]
    assert [r["bm25"] for r in rows] == sorted(r["bm25"] for r in rows)


async def test_search_answers_in_the_language_of_the_match(client, conn):
    rows = await run(client, "search-articles", q="memoire")
    articles = {a["slug"]: a for a in conn.execute("select * from articles")}
    assert rows
    for row in rows:
        article = articles[row["article"]]
        assert row["language"] == article["language"]
        assert "mémoire" in article_text(article) or "memoire" in article_text(article)
    assert "fr" in {r["language"] for r in rows}


@pytest.mark.parametrize("q", ['"', "kv AND (", "NEAR(a b", "*", "cache OR", "'; drop table articles; --",
                               "a" * 200, " ".join("kv" for _ in range(12)), "mémoire\tkv"])
async def test_search_never_fails_on_query_syntax(client, q):
    await run(client, "search-articles", q=q)  # 200: matches or none


@pytest.mark.parametrize(("q", "message"), [
    ("a" * 201, "the search is 201 characters long: at most 200 are searched for"),
    (" ".join("kv" for _ in range(13)), "the search has 13 words: at most 12 are searched for at once")])
async def test_a_search_past_its_bounds_is_refused_with_the_bound(client, q, message):
    assert await refusal(client, "search-articles", q=q) == message


@pytest.mark.parametrize("q", ["  ", "\t", "\x00kv"])
async def test_search_asks_for_words(client, q):
    assert await refusal(client, "search-articles", q=q) == "q is required: words to search for"


async def test_a_search_that_finds_nothing_says_so(client, conn):
    q = "zzqx <b>unfindable</b>"
    assert conn.execute("select count(*) from articles_fts where articles_fts match ?",
                        ('"zzqx"',)).fetchone()[0] == 0
    assert await run(client, "search-articles", q=q) == []
    page = await client.get("/computekb/search-articles?" + urlencode({"q": q}))
    assert page.status_code == 200 and 'class="message-error"' not in page.text
    assert f'<p class="zero-results no-rows">No article matches “{escape(q)}”' in page.text


# Every query

@pytest.mark.parametrize("name", sorted(EXAMPLES))
@pytest.mark.parametrize("value", ["'", "%", "1e400", "nan", "-1", "x" * 5000, "１２", "\x00"])
async def test_a_parameter_value_gets_an_answer_or_a_400_with_a_message(client, name, value):
    for param in QUERIES[name]["params"]:
        params = {**EXAMPLES[name], param: value}
        response = await client.get(f"/computekb/{name}.json?" + urlencode(params))
        assert response.status_code in (200, 400), (name, param, value, response.text[:300])
        if response.status_code == 400:
            assert response.json()["error"], (name, param, value)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
async def test_a_form_opened_blank_is_no_error(client, name):
    """The first visit: no query string at all. The form, no message, no refusal."""
    page = await client.get(f"/computekb/{name}")
    assert page.status_code == 200
    assert 'class="message-error"' not in page.text and "no-rows" not in page.text
    for param in QUERIES[name]["params"]:
        assert f'name="{param}" value=""' in page.text
    blank = await client.get(f"/computekb/{name}.json")
    assert blank.status_code == 200 and blank.json()["ok"] is True
    # What the form sends when submitted untouched is the same blank form.
    empty = await client.get(f"/computekb/{name}.json?" + urlencode(dict.fromkeys(QUERIES[name]["params"], "")))
    assert empty.status_code == 200 and empty.json()["rows"] == blank.json()["rows"]


async def test_a_blank_form_needing_parameters_answers_no_rows(client):
    assert (await client.get("/computekb/what-fits.json")).json()["rows"] == []


async def test_a_check_stops_the_query_before_it_runs(client):
    """The canned queries check their parameters in a magic parameter, bound
    before the query runs: a bad value reaches no SQL function."""
    message = await refusal(client, "what-fits", **{**LLAMA_70B_FP16, "context": "1e400"})
    assert message == CONTEXT_PROBLEM + "'1e400'"
    response = await client.get(query_path("json") + "?sql=" + quote("select :_checked_what_fits as ok"))
    assert response.status_code == 400  # outside a canned query there is no such parameter


async def test_a_refusal_belongs_to_its_own_request(client):
    """The CSV of a good query right after a refused one is a CSV."""
    await refusal(client, "what-fits", **{**LLAMA_70B_FP16, "context": "128q"})
    csv = await client.get("/computekb/what-fits.csv?" + urlencode(LLAMA_70B_FP16))
    assert csv.status_code == 200 and csv.text.startswith("accelerator,")
    failed_sql = await client.get(query_path("csv") + "?sql=" + quote("select weights_gb(-1, 2)"))
    assert "128q" not in failed_sql.text, "a refusal is the message of its own request only"


@pytest.mark.parametrize("name", sorted(EXAMPLES))
async def test_realistic_parameters_give_rows(client, name):
    rows = await run(client, name, **EXAMPLES[name])
    assert rows and "error" not in rows[0]


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
        assert rows, link


async def test_what_fits_page_renders(client):
    response = await client.get("/computekb/what-fits?" + urlencode(LLAMA_70B_FP16))
    assert response.status_code == 200
    assert "What fits this model?" in response.text
    assert ">42.9<" in response.text


def test_every_model_states_its_context_window(conn):
    # max_context is required by the schema; this guards the built table as well.
    missing = {row[0] for row in conn.execute("select slug from models where max_context is null")}
    assert missing == set()
