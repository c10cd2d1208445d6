"""The cost per million tokens page: its figures as a reader reads them, its defaults and its refusals."""

import pytest

from plugins import reader_cost


@pytest.mark.parametrize("value, text", [(12.932, "12.9"), (1.0777, "1.08"), (0.5758, "0.576"), (0.04123, "0.0412"),
                                         (129.6, "130"), (1.2, "1.20")])
def test_a_cost_has_three_significant_digits(value, text):
    assert reader_cost.money(value) == text


@pytest.mark.parametrize("price, text", [(1.8214000000000001, "1.8214"), (2.0, "2"), (2.55822, "2.55822"),
                                         (0.36979999999999996, "0.3698")])
def test_a_price_reads_as_its_provider_prints_it(price, text):
    assert reader_cost.printed(price) == text


async def test_opened_bare_the_page_costs_llama_70b_in_fp8_with_names(client):
    response = await client.get("/-/cost-per-token")
    assert response.status_code == 200
    assert "Llama 3.1 70B, FP8 weights, batch 32" in response.text
    assert '<a href="/computekb/accelerators/nvidia-h200-sxm">H200 SXM</a>' in response.text


async def test_every_problem_is_named_at_once_with_close_models(client):
    response = await client.get("/-/cost-per-token?model=lama-3-1-70b&batch=0")
    assert response.status_code == 400
    assert "batch must be" in response.text and "is not one of the models here" in response.text
    assert "model=llama-3-1-70b" in response.text, "the closest model, one click away"


@pytest.mark.parametrize("counts, text", [([1], "1 accelerator"), ([8], "8 accelerators"),
                                          ([1, 4, 6], "1, 4 or 6 accelerators"), ([2, 8], "2 or 8 accelerators")])
def test_the_sizes_rented_read_as_words(counts, text):
    assert reader_cost.sizes_rented([{"gpu_count": c} for c in counts]) == text
