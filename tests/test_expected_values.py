"""Derived columns, pages and citation formats against values worked out by hand from the
fixture's YAML (tests/fixture/data): the arithmetic is in the comments, never read back
from the database under test."""

import html
import re
import sqlite3

import pytest

from plugins.cite import citation_texts
from serving.citation_text import Shown, bibtex_escape, markdown_escape, value_anchor


def rows(db, sql):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchall()


async def page(client, path):
    response = await client.get(path)
    assert response.status_code == 200, path
    return response.text


# --- derived columns -------------------------------------------------------------------

def test_price_per_gpu_hour_divides_the_instance_price_by_its_gpus(fixture_db):
    assert dict(rows(fixture_db, "select slug, price_per_gpu_hour from cloud_offers")) == {
        "cloudco-x1-8": 2.5625,          # 20.5 USD / 8 GPUs
        "cloudco-x1-4-2026-01": 3.0,     # 12 USD / 4 GPUs
        "cloudco-x1-2-2026-06": 2.5,     # 5 USD / 2 GPUs
        "cloudco-b1-3-2026-06": 0.9,     # 2.7 EUR / 3 GPUs
    }


def test_fp8_and_fp4_support_follow_every_cited_claim(fixture_db):
    found = rows(fixture_db, "select slug, native_fp8, native_fp4, fp4_formats from accelerators order by slug")
    assert found == [
        ("acme-x1", "unknown", "unknown", "[]"),     # no claim and no figure of either family
        # FP8 claimed and FP8 figures; NVFP4 cited as not supported beside MXFP4 cited as
        # supported: the support stands and the list holds only the supported format.
        ("acme-x2", "yes", "yes", '["mxfp4"]'),
        ("beta-b1", "no", "unknown", "[]"),          # only a cited "not supported" for FP8
    ]


def test_tier_range_spans_the_sources_of_every_value(fixture_db):
    found = rows(fixture_db, "select slug, strongest_tier, weakest_tier from accelerators order by slug")
    assert found == [
        ("acme-x1", "vendor-primary", "vendor-primary"),       # the datasheet
        ("acme-x2", "vendor-primary", "vendor-secondary"),     # the whitepaper, the press release
        ("beta-b1", "vendor-primary", "third-party"),          # datasheet, and a review for its power
    ]


# --- citation formats ------------------------------------------------------------------

def test_bibtex_escapes_every_special_character():
    assert bibtex_escape("100% of {FP8} & $5 #1 a_b ^ ~ \\") == (
        r"100\% of \{FP8\} \& \$5 \#1 a\_b \^{} \~{} \textbackslash{}")


def test_markdown_escapes_link_text_and_markup():
    assert markdown_escape("[X1] <b>*fast*</b> `a_b`") == r"\[X1\] \<b\>\*fast\*\</b\> \`a\_b\`"


def test_a_row_citation_in_markdown_and_bibtex():
    markdown, bibtex = citation_texts("computekb", "articles", "x1-review", Shown("100% of {FP8}: [X1]", True),
                                      "https://kb.example/computekb/articles/x1-review", "abc123", "2026-12-02")
    assert markdown == ("[100% of {FP8}: \\[X1\\]](https://kb.example/computekb/articles/x1-review), computekb, "
                        "articles `x1-review`, data release `abc123`, accessed 2026-12-02.")
    assert bibtex == "\n".join([
        "@misc{computekb-articles-x1-review,",
        r"  title = {{100\% of \{FP8\}: [X1]}},",
        r"  howpublished = {\url{https://kb.example/computekb/articles/x1-review}},",
        "  note = {computekb, articles table, data release abc123},",
        "  urldate = {2026-12-02}",
        "}",
    ])


def test_an_untitled_row_is_cited_by_its_slug_with_its_summary_quoted():
    markdown, bibtex = citation_texts("computekb", "articles", "note-1", Shown("Power of 50% more", False),
                                      "https://kb.example/computekb/articles/note-1", "abc123", "2026-12-02")
    assert markdown == ("[note-1](https://kb.example/computekb/articles/note-1) (title not published; its summary "
                        "begins: “Power of 50% more”), computekb, articles `note-1`, data release `abc123`, "
                        "accessed 2026-12-02.")
    assert "title =" not in bibtex
    assert "  note = {computekb, articles table, data release abc123; title not published, its summary begins: " \
           "“Power of 50\\% more”}," in bibtex


@pytest.mark.parametrize("sparsity, anchor", [("dense", "fp8_matrix_dense"), ("sparse-2-4", "fp8_matrix_sparse")])
def test_the_anchor_of_a_throughput_figure(sparsity, anchor):
    assert value_anchor("fp8", "matrix", sparsity) == anchor


async def test_a_value_cited_in_bibtex_escapes_its_source_title(fixture_client):
    sheet = html.unescape(await page(fixture_client, "/computekb/accelerators/acme-x2"))
    # The whitepaper is titled "Acme X2 architecture: 100% of FP8 {dense} peaks".
    notes = re.findall(r"  note = \{computekb, field fp8\\_matrix\\_dense, data release [0-9a-f]+; (.*)\},\n", sheet)
    # the cite button carries the BibTeX, and the value's formats panel offers it again: each escaped alike
    assert notes and set(notes) == {r"source: Acme X2 architecture: 100\% of FP8 \{dense\} peaks "
                                    r"\url{https://example.com/acme-x2-whitepaper}"}


# --- pages -----------------------------------------------------------------------------

async def test_a_citation_note_is_shown_as_text_never_as_markup(fixture_client):
    sheet = await page(fixture_client, "/computekb/accelerators/beta-b1")
    assert ("<br><small>Measured at the wall, &lt;b&gt;not&lt;/b&gt; the board "
            "&lt;script&gt;alert(1)&lt;/script&gt;</small>") in sheet
    assert "<script>alert(1)" not in sheet and "<b>not</b>" not in sheet


@pytest.mark.parametrize("citation, href", [
    ("throughput-acme-x2-fp8-dense-matrix-tflops", "/computekb/accelerators/acme-x2#fp8_matrix_dense"),
    ("throughput-acme-x2-fp8-sparse-2-4-matrix-tflops", "/computekb/accelerators/acme-x2#fp8_matrix_sparse"),
    ("format-support-acme-x2-nvfp4-format", "/computekb/accelerators/acme-x2#section-compute"),
    ("accelerators-beta-b1-tdp-w", "/computekb/accelerators/beta-b1#tdp_w"),
])
async def test_a_citation_page_links_to_the_value_it_cites(fixture_client, citation, href):
    text = await page(fixture_client, f"/computekb/citations/{citation}")
    assert re.findall(r'<a class="cited-value" href="([^"]+)"', text) == [href]
    sheet = await page(fixture_client, href.split("#")[0])
    assert f'id="{href.split("#")[1]}"' in sheet, "the anchor is on the spec sheet"


def best_of_rows(text):
    """{row field: accelerators whose cell is marked best} of the compare table."""
    marked = {}
    for chunk in text.split('<tr data-field="')[1:]:
        field, body = chunk.split('"', 1)
        body = body.split("</tr>", 1)[0]
        marked[field] = set(re.findall(r'<td data-accelerator="([^"]+)" class="best">', body))
    return {field: found for field, found in marked.items() if found}


async def test_compare_marks_the_lowest_price_and_power_and_the_highest_of_the_rest(fixture_client):
    text = await page(fixture_client, "/-/compare?ids=acme-x1,beta-b1")
    assert best_of_rows(text) == {
        "memory_gb": {"acme-x1"},                    # 96 GB > 24 GB
        "memory_bandwidth_gbs": {"acme-x1"},         # 4,800 GB/s > 900 GB/s
        "tdp_w": {"beta-b1"},                        # 350 W < 700 W
        "launch_price_usd": {"beta-b1"},             # 5,000 USD for a kit of 2 = 2,500 < 30,000 USD
        "memory_bandwidth_gbs_per_w": {"acme-x1"},   # 4800 / 700 = 6.86 > 900 / 350 = 2.57
        "memory_gb_per_1000_usd": {"beta-b1"},       # 1000 × 24 / 2500 = 9.6 > 1000 × 96 / 30000 = 3.2
    }
