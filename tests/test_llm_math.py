"""The LLM math SQL functions: hand-worked cases, NULLs, bad arguments, and
the same functions called through Datasette's SQL.

Every expected value below is worked out by hand in its comment; GB are
decimal (10^9 bytes).
"""

from urllib.parse import quote

import pytest

from plugins import llm_math


def gb(value):
    return pytest.approx(value, rel=1e-12)


def test_llama_3_1_70b_kv_cache_at_128k_in_fp16():
    # 80 layers, 8 KV heads, head_dim 128, 131,072 tokens, batch 1, 2 bytes:
    # 2 × 80 × 8 × 128 × 131,072 × 2 = 42,949,672,960 bytes = 42.95 GB
    assert llm_math.kv_cache_gb(80, 8, 128, 131072, 1, 2) == gb(42.94967296)


def test_kv_cache_grows_with_batch_and_shrinks_with_bytes():
    # Llama 3.1 8B, 8,192 tokens, batch 4, FP8 (1 byte):
    # 2 × 32 × 8 × 128 × 8,192 × 4 × 1 = 2,147,483,648 bytes
    assert llm_math.kv_cache_gb(32, 8, 128, 8192, 4, 1) == gb(2.147483648)


@pytest.mark.parametrize("params_b, bits, expected", [
    (70.6, 4.5, 39.7125),    # NVFP4: 70.6e9 × 4.5 / 8 = 39,712,500,000 bytes
    (70, 16, 140.0),         # FP16: 70e9 × 2 bytes
    (117, 4.25, 62.15625),   # MXFP4: 117e9 × 4.25 / 8 = 62,156,250,000 bytes
    (0, 16, 0.0),            # no parameters, no memory
])
def test_weights(params_b, bits, expected):
    assert llm_math.weights_gb(params_b, bits) == gb(expected)


def test_mla_caches_one_latent_and_the_rope_key():
    # DeepSeek-V3: 61 layers × (512 latent + 64 RoPE) = 35,136 values per token;
    # × 131,072 tokens × 2 bytes = 9,210,691,584 bytes
    assert llm_math.kv_cache_mla_gb(61, 512, 64, 131072, 1, 2) == gb(9.210691584)


def test_sliding_window_layers_cache_at_most_the_window():
    # gpt-oss-120b: 18 of 36 layers full, window 128, 8 KV heads × 64 dims.
    # 18 × 131,072 + 18 × 128 = 2,361,600 cached token-layers;
    # × 2 × 8 × 64 values × 2 bytes = 4,836,556,800 bytes
    assert llm_math.kv_cache_swa_gb(36, 18, 8, 64, 131072, 128, 1, 2) == gb(4.8365568)
    # Gemma 3 27B: 10 of 62 layers full, window 1,024, 16 KV heads × 128 dims.
    # 10 × 131,072 + 52 × 1,024 = 1,363,968; × 4,096 values × 2 bytes = 11,173,625,856 bytes
    assert llm_math.kv_cache_swa_gb(62, 10, 16, 128, 131072, 1024, 1, 2) == gb(11.173625856)


@pytest.mark.parametrize("full_layers, tokens", [(10, 512), (62, 131072)])
def test_sliding_window_equals_full_attention_when_the_window_never_binds(full_layers, tokens):
    # Shorter than the window, or every layer full: the windowed layers hold every token.
    assert llm_math.kv_cache_swa_gb(62, full_layers, 16, 128, tokens, 1024, 3, 2) == \
        gb(llm_math.kv_cache_gb(62, 16, 128, tokens, 3, 2))


def test_decode_ceiling():
    # H100 SXM, 3,350 GB/s, reading 70 GB of FP8 weights per token: 3,350 / 70 = 47.857...
    assert llm_math.decode_tokens_per_s(3350, 70) == pytest.approx(47.857142857)


@pytest.mark.parametrize("required, memory, fraction, expected", [
    (144, 80, 0.9, 2),   # 144 / 72 = 2
    (22.8, 24, 0.95, 1),  # 22.8 / 22.8 = 1 exactly (1.0000000000000002 in floating point)
    (145, 80, 0.9, 3),   # 145 / 72 = 2.01
    (70, 80, 0.9, 1),    # 70 / 72
    (80, 80, 1, 1),      # a full device
    (0, 80, 0.9, 0),     # nothing to hold
])
def test_accelerators_needed(required, memory, fraction, expected):
    assert llm_math.accelerators_needed(required, memory, fraction) == expected


@pytest.mark.parametrize("slug, bits", [
    ("fp16", 16), ("bf16", 16), ("fp8", 8), ("int8", 8), ("int4", 4),
    ("mxfp4", 4.25),   # 4 + 8-bit scale / 32 elements
    ("nvfp4", 4.5),    # 4 + 8-bit scale / 16 elements
    ("mxfp8", 8.25),   # 8 + 8 / 32
    ("mxfp6", 6.25),   # 6 + 8 / 32
    (" NVFP4 ", 4.5),  # as a person might type it
])
def test_bits_per_weight(slug, bits):
    assert llm_math.bits_per_weight(slug) == bits


def test_numeric_text_is_read_as_a_number():
    # Datasette passes query parameters as strings.
    assert llm_math.weights_gb("70", "16") == 140.0


@pytest.mark.parametrize("fn", llm_math.FUNCTIONS, ids=lambda fn: fn.__name__)
def test_null_in_gives_null_out(fn):
    for position in range(llm_math.arity(fn)):
        args = [1] * llm_math.arity(fn)
        args[position] = None
        assert fn(*args) is None, (fn.__name__, position)


@pytest.mark.parametrize("call, message", [
    (lambda: llm_math.weights_gb(-70, 16), "params_b must not be negative"),
    (lambda: llm_math.weights_gb(70, 0), "bits_per_weight must be positive"),
    (lambda: llm_math.weights_gb("seventy", 16), "params_b must be a number, got 'seventy'"),
    (lambda: llm_math.weights_gb(b"\x00", 16), "params_b must be a number"),
    (lambda: llm_math.weights_gb("inf", 16), "params_b must be finite"),
    (lambda: llm_math.kv_cache_gb(80, 8, 128, -1, 1, 2), "tokens must not be negative"),
    (lambda: llm_math.kv_cache_gb(0, 8, 128, 1, 1, 2), "layers must be positive"),
    (lambda: llm_math.kv_cache_mla_gb(61, 0, 64, 1, 1, 2), "latent_dim must be positive"),
    (lambda: llm_math.kv_cache_swa_gb(36, 40, 8, 64, 1, 128, 1, 2), "full_layers (40) cannot exceed layers (36)"),
    (lambda: llm_math.kv_cache_swa_gb(36, 18, 8, 64, 1, 0, 1, 2), "window must be positive"),
    (lambda: llm_math.decode_tokens_per_s(3350, 0), "gb_read_per_token must be positive"),
    (lambda: llm_math.accelerators_needed(100, 0, 0.9), "memory_gb must be positive"),
    (lambda: llm_math.accelerators_needed(100, 80, 0), "usable_fraction must be positive"),
    (lambda: llm_math.accelerators_needed(100, 80, 1.1), "usable_fraction must be in (0, 1]"),
    (lambda: llm_math.bits_per_weight("fp5"), "unknown format 'fp5'"),
])
def test_nonsense_raises_a_clear_message(call, message):
    with pytest.raises(ValueError) as error:
        call()
    assert message in str(error.value)


# Through Datasette: the functions are registered on its connections.

async def sql(client, query):
    return await client.get("/computekb.json?_shape=objects&sql=" + quote(query))


async def test_functions_answer_through_datasette_sql(client):
    response = await sql(client, "select kv_cache_gb(80, 8, 128, 131072, 1, 2) as kv, "
                                 "weights_gb(null, 16) is null as null_out, bits_per_weight('nvfp4') as bits")
    assert response.status_code == 200
    row = response.json()["rows"][0]
    assert row["kv"] == gb(42.94967296)
    assert row["null_out"] == 1
    assert row["bits"] == 4.5


# Datasette turns on sqlite callback tracebacks, so each failing call is also
# reported to sys.unraisablehook (the server log); pytest would warn about it.
logged_to_stderr = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@logged_to_stderr
@pytest.mark.parametrize("query, message", [
    ("select weights_gb(-1, 16)", "weights_gb(): params_b must not be negative, got -1"),
    ("select kv_cache_gb('many', 8, 128, 1024, 1, 2)", "kv_cache_gb(): layers must be a number, got 'many'"),
    ("select accelerators_needed(100, 80, 2)", "accelerators_needed(): usable_fraction must be in (0, 1], got 2"),
])
async def test_a_bad_argument_is_a_400_with_the_message(client, query, message):
    response = await sql(client, query)
    assert response.status_code == 400
    assert response.json()["error"] == message
    page = await client.get("/computekb?sql=" + quote(query))
    assert page.status_code == 400
    assert message.replace("'", "&#39;") in page.text


@logged_to_stderr
async def test_other_sql_errors_keep_their_own_message(client):
    # The remembered message must not leak into the next failure on the same thread.
    await sql(client, "select weights_gb(-1, 16)")
    response = await sql(client, "select * from no_such_table")
    assert response.status_code == 400
    assert response.json()["error"] == "no such table: no_such_table"
    response = await sql(client, "select weights_gb(1)")
    assert response.json()["error"] == "wrong number of arguments to function weights_gb()"


async def test_bits_per_weight_agrees_with_the_number_formats_table(client):
    slugs = sorted(llm_math.ELEMENT_BITS) + sorted(llm_math.BLOCK_SCALED)
    listed = ", ".join(f"'{slug}'" for slug in slugs)
    response = await sql(client, "select slug, coalesce(effective_bits, bits) as table_bits, "
                                 f"bits_per_weight(slug) as function_bits from number_formats where slug in ({listed})")
    rows = response.json()["rows"]
    assert {"nvfp4", "mxfp4"} <= {r["slug"] for r in rows}
    for row in rows:
        assert row["function_bits"] == row["table_bits"], row["slug"]
