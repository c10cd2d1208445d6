"""The model page's sizes and contexts, as pure functions, and the page on the fixture's model."""

import re

from plugins.reader_model import contexts, tokens_text


def test_contexts_stop_at_the_models_window_and_include_it():
    assert contexts(None) == [8192, 32768, 131072]
    assert contexts(131072) == [8192, 32768, 131072]
    assert contexts(4096) == [4096], "Llama 2's window, shorter than every preset"
    assert contexts(40960) == [8192, 32768, 40960]
    assert contexts(1048576) == [8192, 32768, 131072]


def test_tokens_read_as_the_what_fits_page_reads_them():
    assert [tokens_text(t) for t in (4096, 131072, 40000)] == ["4k", "128k", "40000"]


async def test_the_fixture_models_page_sizes_its_cache_and_asks_what_fits_at_its_window(fixture_client):
    page = (await fixture_client.get("/computekb/models/tiny-dense")).text
    assert "<h1>Tiny Dense</h1>" in page
    # one 4,096-token sequence: 2 (K and V) × 8 heads × 125 dims × 2 layers × 4,096 tokens × 2 bytes = 32,768,000 B
    assert re.search(r'<th scope="row">4k tokens</th><td class="num">0.0328</td>', page)
    assert 'href="/-/what-fits?model=tiny-dense&amp;weights=format%3Afp8&amp;kv_format=fp8&amp;context=4k&amp;batch=1"' in page
    measured = page[page.index('class="model-measured'):page.index("</table>", page.index('class="model-measured'))]
    assert "tiny-dense Offline, v1.0" in measured and "120,000" in measured, "acme-x1's best, per accelerator"
