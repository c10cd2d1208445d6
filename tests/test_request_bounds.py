"""Every request's cost is bounded by the request: search words, the sizing's work, the length of
any one value, the bytes of any answer (plugins/limits.py, serving/query_args.py, domain/sizing.py)."""

import json
from urllib.parse import urlencode

import pytest

from domain import sizing
from plugins.limits import MAX_ANSWER_BYTES
from serving.site import query_path

from conftest import assert_refused


def sql(query):
    return query_path("json") + "?" + urlencode({"sql": query, "_shape": "array"})


@pytest.mark.parametrize(("q", "message"), [
    (" ".join(["memory"] * 300), "the search has 300 words: at most 12 are searched for at once"),
    ("m" * 201, "the search is 201 characters long: at most 200 are searched for"),
])
async def test_the_search_page_refuses_a_query_past_its_bounds_and_says_which(fixture_client, q, message):
    response = await fixture_client.get("/-/search?" + urlencode({"q": q}))
    assert response.status_code == 400
    assert message in response.text


async def test_the_search_page_takes_a_query_at_its_bounds(fixture_client):
    response = await fixture_client.get("/-/search?" + urlencode({"q": " ".join(["memory"] * 12)}))
    assert response.status_code == 200 and "search-results" in response.text


async def test_a_value_over_100000_bytes_is_refused(fixture_client):
    await assert_refused(fixture_client, query_path(), urlencode({"sql": "select length(zeroblob(100001))"}),
                         "string or blob too big", "string or blob too big")


async def test_a_value_at_100000_bytes_is_answered(fixture_client):
    response = await fixture_client.get(sql("select length(zeroblob(100000)) as n"))
    assert response.json() == [{"n": 100000}]


# 99,999 a's then b, searched for 50,000 a's then b: found at 50,000 (49,999 a's before it).
LONG_A = "printf('%.*c', 99999, 'a') || 'b'"
NEEDLE = "printf('%.*c', 50000, 'a') || 'b'"


@pytest.mark.parametrize(("expression", "expected"), [
    (f"instr({LONG_A}, {NEEDLE})", 50000),
    ("instr('computekb', 'kb')", 8), ("instr('mémoire', 'moi')", 3), ("instr(x'00ff01', x'01')", 3),
    ("instr('abc', '')", 1), ("instr(null, 'a')", None), ("instr(12345, 34)", 3),
    (f"length(replace({LONG_A}, 'aa', 'a'))", 50001), ("replace('a-b-c', '-', '+')", "a+b+c"),
    ("replace('abc', '', 'x')", "abc"), ("replace(null, 'a', 'b')", None), ("replace(1.5, '.', ',')", "1,5"),
    (f"length(trim({LONG_A}, 'a' || {NEEDLE}))", 0), ("trim('xxhixx', 'x')", "hi"), ("ltrim('xxhixx', 'x')", "hixx"),
    ("rtrim('xxhixx', 'x')", "xxhi"), ("trim(' hi ')", "hi"),
])
async def test_string_functions_answer_as_sqlite_does(fixture_client, expression, expected):
    response = await fixture_client.get(sql(f"select {expression} as v"))
    assert response.status_code == 200, response.text
    assert response.json() == [{"v": expected}]


async def test_replace_refuses_a_result_over_the_length_limit_before_building_it(fixture_client):
    query = "select length(replace(printf('%.*c', 99999, 'a'), 'a', printf('%.*c', 99999, 'a')))"
    message = "replace(): replace() would build a string over 100,000 characters"
    await assert_refused(fixture_client, query_path(), urlencode({"sql": query}), message, message)


async def test_an_answer_over_the_byte_limit_is_refused_naming_it(fixture_client):
    # 200 rows of 99,999 bytes: 20 MB
    query = ("with recursive c(x) as (select 1 union all select x + 1 from c limit 200) "
             "select zeroblob(99999) from c")
    message = f"the answer is over {MAX_ANSWER_BYTES:,} bytes"
    await assert_refused(fixture_client, query_path(), urlencode({"sql": query}), message, message)


async def test_an_answer_under_the_byte_limit_is_answered(fixture_client):
    query = "with recursive c(x) as (select 1 union all select x + 1 from c limit 50) select zeroblob(99999) as b from c"
    response = await fixture_client.get(sql(query))
    assert response.status_code == 200 and len(response.json()) == 50


ARCHITECTURE = {"layers": 2, "hidden_size": 8, "attention_heads": 4, "kv_heads": 2, "head_dim": 2,
                "intermediate_size": 16, "vocab_size": 10, "attention": "gqa"}
BITS = {"embedding": 16, "output_head": 16, "attention": 16, "dense_ffn": 16, "experts": 16, "other": 16}


def llm_size_query(architecture, bits=BITS):
    return ("select llm_size(" + ", ".join(["'" + json.dumps(architecture) + "'", "'" + json.dumps(bits) + "'",
                                            "80", "3350", "1024", "1", "16", "null", "null", "0.9"]) + ") as v")


@pytest.mark.parametrize(("changes", "message"), [
    ({"attention_heads": 100_000_000}, "attention_heads must be a number from 1 to 10,000, got 100000000"),
    ({"layers": 9223372036854775807}, "layers must be a number from 1 to 10,000"),
    ({"layers": 0}, "layers must be a number from 1 to 10,000, got 0"),
    ({"head_dim": 2.5}, "head_dim must be a whole number, got 2.5"),
    ({"vocab_size": True}, "vocab_size must be a number from 1 to 100,000,000, got True"),
])
def test_sizing_functions_refuse_an_architecture_out_of_range(conn, changes, message):
    from domain.parameters import architecture as checked_architecture
    with pytest.raises(ValueError, match="^" + message):
        checked_architecture(json.dumps({**ARCHITECTURE, **changes}))


def test_sizing_functions_refuse_bits_out_of_range():
    from domain.parameters import bits as checked_bits
    with pytest.raises(ValueError, match="^attention bits must be a number above 0 to 64, got 1e"):
        checked_bits(json.dumps({**BITS, "attention": 1e308}))


async def test_llm_size_with_absurd_heads_is_a_400_naming_the_range(fixture_client):
    query = llm_size_query({**ARCHITECTURE, "attention_heads": 100_000_000})
    response = await fixture_client.get(query_path("json") + "?" + urlencode({"sql": query}))
    assert response.status_code == 400


def brute_force_smallest_layout(arch, checkpoint, device, workload, max_tp):
    """The definition: pipeline stages from 1, each with the smallest TP (a divisor of the heads) that fits."""
    tps = [d for d in range(1, arch.attention_heads + 1) if arch.attention_heads % d == 0 and d <= max_tp]
    for pp in range(1, arch.layers + 1):
        for tp in tps:
            found = sizing.size(arch, checkpoint, sizing.Layout(tp, pp), device, workload)
            if found.fits:
                return found
    return None


LLAMA_70B = sizing.Architecture(layers=80, hidden_size=8192, attention_heads=64, kv_heads=8, head_dim=128,
                                intermediate_size=28672, vocab_size=128256)
CHECKPOINT = sizing.Checkpoint.uniform(16)


@pytest.mark.parametrize("memory_gb", [1, 8, 24, 40, 80, 141, 192, 1000])
def test_the_smallest_layout_is_the_first_that_fits_in_growing_order(memory_gb):
    device, workload = sizing.Device(memory_gb * sizing.GB, 3350), sizing.Workload(32768, 4, 16)
    assert sizing.smallest_layout(LLAMA_70B, CHECKPOINT, device, workload) == \
        brute_force_smallest_layout(LLAMA_70B, CHECKPOINT, device, workload, 8)


def test_a_model_that_fits_nowhere_is_sized_once_not_once_per_layout(monkeypatch):
    calls = []
    real_size = sizing.size
    monkeypatch.setattr(sizing, "size", lambda *args: calls.append(args) or real_size(*args))
    device, workload = sizing.Device(0.5 * sizing.GB, 3350), sizing.Workload(32768, 1, 16)
    assert sizing.smallest_layout(LLAMA_70B, CHECKPOINT, device, workload) is None
    assert len(calls) == 1  # 80 stages x 4 TP layouts before


def test_a_model_that_fits_is_found_in_logarithmic_work(monkeypatch):
    calls = []
    real_size = sizing.size
    monkeypatch.setattr(sizing, "size", lambda *args: calls.append(args) or real_size(*args))
    device, workload = sizing.Device(8 * sizing.GB, 3350), sizing.Workload(32768, 1, 16)
    found = sizing.smallest_layout(LLAMA_70B, CHECKPOINT, device, workload)
    assert found is not None and found.layout.pp > 1
    assert len(calls) <= 1 + 7 + 4  # the whole check, at most log2(80) halvings, the TP layouts of the answer


def test_divisors_in_order():
    assert sizing.divisors(64) == [1, 2, 4, 8, 16, 32, 64]
    assert sizing.divisors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36]
    assert sizing.divisors(1) == [1]
