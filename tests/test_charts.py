"""The dashboards' charts drawn as SVG on the server (serving/charts.py, plugins/dashboard_charts.py).

The functions on literal inputs; the route and the pages on the fixture database, whose three accelerators
(acme-x1, acme-x2 of vendor acme, beta-b1 of beta) each have memory and bandwidth.
"""

import asyncio
import functools
import re
import subprocess
import sys
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from datasette_dashboards import replace_opts_in_query

from serving import charts
from serving.metadata import full_metadata
from serving.paths import METADATA_YML, ROOT
from serving.serve import make_datasette

from conftest import DASHBOARD_PAGES_FAIL_ON_1

CHART = "/-/charts/accelerator-landscape/memory-vs-bandwidth.svg"
LINK = re.compile(r'xlink:href="([^"]*)"')


# --- the chart's query and specification --------------------------------------------------------

@pytest.mark.parametrize("query, filters, sent", [
    ("SELECT * FROM t WHERE TRUE [[ AND vendor = :vendor ]] [[ AND m >= :min_memory ]]", {"vendor": "acme"},
     "SELECT * FROM t WHERE TRUE  AND vendor = :vendor  "),
    ("SELECT * FROM t [[ WHERE m >= :min_memory ]]", {"min_memory": ""}, "SELECT * FROM t "),
    ("SELECT 1 [[ AND TRUE ]]", {"x": "1"}, "SELECT 1 "),
])
def test_a_chart_query_is_filled_as_documented(query, filters, sent):
    assert charts.with_filters(query, filters) == sent


def test_a_chart_query_is_filled_as_datasette_dashboards_fills_it():
    """The plugin's own function (not part of its public API) and ours agree on every chart of the site."""
    queries = [chart["query"] for dashboard in full_metadata(METADATA_YML)["plugins"]["datasette-dashboards"].values()
               for chart in dashboard["charts"].values() if "query" in chart]
    names = sorted({name for query in queries for name in re.findall(r":([a-zA-Z0-9_]+)", query)})
    assert queries and names
    for filters in [{}, dict.fromkeys(names, "1"), dict.fromkeys(names, ""), {names[0]: "x"}, {names[-1]: "9"}]:
        for query in queries:
            assert charts.with_filters(query, filters) == replace_opts_in_query(query, filters), (query, filters)


@pytest.mark.parametrize(("layout", "order"), [
    ([["compare", "compare"], ["a", "b"], [".", "c"]], ["compare", "a", "b", "c", "d"]),
    (None, ["a", "b", "c", "compare", "d"]),
    ([["b", "gone"]], ["b", "a", "c", "compare", "d"]),
])
def test_charts_are_read_in_the_layouts_order_then_the_rest(layout, order):
    assert charts.reading_order(layout, ["a", "b", "c", "compare", "d"]) == order


@pytest.mark.parametrize(("asked", "width"), [(1, 320), (319, 320), (320, 320), (390, 320), (400, 400),
                                              (658, 640), (1299, 1280), (4000, 1280)])
def test_a_chart_is_drawn_at_the_widest_width_that_fits(asked, width):
    assert charts.width_for(asked) == width


def test_a_tooltip_becomes_one_text_in_its_fields_formats():
    fields = [{"field": "name", "title": "Accelerator"}, {"field": "tokens", "title": "Tokens/s", "format": ",.0f"},
              {"field": "round"}, {"field": "observed", "type": "temporal", "title": "Date"}]
    assert charts.tooltip_text(fields) == (
        """"Accelerator: " + (datum["name"] == null ? '–' : '' + datum["name"])"""
        """ + '\\n' + "Tokens/s: " + (datum["tokens"] == null ? '–' : format(datum["tokens"], ",.0f"))"""
        """ + '\\n' + "round: " + (datum["round"] == null ? '–' : '' + datum["round"])"""
        """ + '\\n' + "Date: " + (datum["observed"] == null ? '–' : utcFormat(datum["observed"], '%Y-%m-%d'))""")


def test_each_mark_with_a_tooltip_is_described_by_it_and_the_input_is_kept():
    mark = {"mark": "bar", "transform": [{"filter": "datum.x"}],
            "encoding": {"x": {"field": "x"}, "tooltip": [{"field": "x", "title": "X"}]}}
    spec = {"layer": [{"mark": "text"}, mark]}
    assert charts.described(spec) == {"layer": [{"mark": "text"}, {
        "mark": "bar",
        "transform": [{"filter": "datum.x"}, {"calculate": """"X: " + (datum["x"] == null ? '–' : '' + datum["x"])""",
                                              "as": "_description"}],
        "encoding": {"x": {"field": "x"}, "tooltip": [{"field": "x", "title": "X"}],
                     "description": {"field": "_description"}}}]}
    assert mark == {"mark": "bar", "transform": [{"filter": "datum.x"}],
                    "encoding": {"x": {"field": "x"}, "tooltip": [{"field": "x", "title": "X"}]}}


def test_a_described_mark_gets_a_title_and_its_link_stays_on_the_site():
    svg = ('<g><a xlink:href="https://vega.github.io/vega-datasets//computekb/accelerators/acme-x1">'
           '<path aria-label="Accelerator: X1&#xA;Note: &lt;b&gt; &amp; &quot;q&quot;" role="graphics-symbol" d="M0"/></a>'
           '<path class="background" aria-hidden="true" d="M1"/></g>')
    assert charts.with_titles(svg) == (
        '<g><a xlink:href="/computekb/accelerators/acme-x1">'
        '<path aria-label="Accelerator: X1&#xA;Note: &lt;b&gt; &amp; &quot;q&quot;" role="graphics-symbol" d="M0">'
        '<title>Accelerator: X1\nNote: &lt;b&gt; &amp; "q"</title></path></a>'
        '<path class="background" aria-hidden="true" d="M1"/></g>')


def test_a_drawing_has_the_marks_links_and_tooltips():
    spec = charts.vega_lite_spec({"title": "Two bars", "display": {
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {"y": {"field": "name", "type": "nominal"}, "x": {"field": "gb", "type": "quantitative"},
                     "href": {"field": "url"}, "tooltip": [{"field": "name", "title": "Accelerator"},
                                                          {"field": "gb", "title": "Memory (GB)"},
                                                          {"field": "seen", "type": "temporal", "title": "Seen"}]}}},
        [{"name": "X1", "gb": 96, "url": "/computekb/accelerators/acme-x1", "seen": "2026-12-01"},
         {"name": "B1", "gb": 24, "url": "/computekb/accelerators/beta-b1", "seen": None}], 320)
    svg = charts.draw(charts.spec_json(spec))
    assert svg.startswith("<svg") and 'width="320"' in svg
    assert LINK.findall(svg) == ["/computekb/accelerators/acme-x1", "/computekb/accelerators/beta-b1"]
    assert re.findall(r"<title>([^<]*)</title>", svg) == ["Accelerator: X1\nMemory (GB): 96\nSeen: 2026-12-01",
                                                           "Accelerator: B1\nMemory (GB): 24\nSeen: –"]


def test_the_store_forgets_the_least_recently_asked_drawing(monkeypatch):
    monkeypatch.delenv("COMPUTEKB_SPEEDUPS", raising=False)
    drawings = charts.Drawings(kept=2)
    drawings.put("a", "<svg>a</svg>")
    drawings.put("b", "<svg>b</svg>")
    assert drawings.get("a") == "<svg>a</svg>"
    drawings.put("c", "<svg>c</svg>")
    assert (drawings.get("a"), drawings.get("b"), drawings.get("c")) == ("<svg>a</svg>", None, "<svg>c</svg>")


def test_with_the_speed_ups_off_no_drawing_is_kept(monkeypatch):
    monkeypatch.setenv("COMPUTEKB_SPEEDUPS", "off")
    drawings = charts.Drawings()
    drawings.put("a", "<svg>a</svg>")
    assert drawings.get("a") is None


# --- the route, on the fixture database -----------------------------------------------------------

@pytest.fixture(scope="module")
async def datasette(fixture_db):
    datasette = make_datasette(fixture_db)
    await datasette.invoke_startup()
    return datasette


@pytest.fixture(scope="module")
def fixture_client(datasette):
    return datasette.client


@pytest.mark.speedups
async def test_a_chart_is_an_svg_of_the_filtered_rows_with_links(fixture_client):
    response = await fixture_client.get(CHART)
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml; charset=utf-8"
    assert response.text.startswith("<svg") and 'width="640"' in response.text
    assert LINK.findall(response.text) == ["/computekb/accelerators/acme-x1", "/computekb/accelerators/acme-x2",
                                           "/computekb/accelerators/beta-b1"]
    assert "Accelerator: " in response.text
    only_beta = await fixture_client.get(CHART + "?vendor=beta&width=390")
    assert 'width="320"' in only_beta.text
    assert LINK.findall(only_beta.text) == ["/computekb/accelerators/beta-b1"]
    none = await fixture_client.get(CHART + "?vendor=nobody")
    assert LINK.findall(none.text) == [] and "No data for these filters" in none.text


@pytest.mark.parametrize(("path", "status", "message"), [
    (CHART + "?width=abc", 400, "width must be a whole number of pixels from 1 to 4000, not &#39;abc&#39;."),
    (CHART + "?width=0", 400, "width must be a whole number of pixels from 1 to 4000, not &#39;0&#39;."),
    (CHART + "?width=4001", 400, "from 1 to 4000, not &#39;4001&#39;."),
    ("/-/charts/no-such/memory-vs-bandwidth.svg", 404, "No dashboard is named &#39;no-such&#39;."),
    ("/-/charts/accelerator-landscape/no-such.svg", 404,
     "The dashboard &#39;accelerator-landscape&#39; has no chart named &#39;no-such&#39;."),
    ("/-/charts/accelerator-landscape/compare.svg", 404, "The chart &#39;compare&#39; is a table chart"),
])
async def test_a_chart_asked_wrongly_is_refused_in_words(fixture_client, path, status, message):
    response = await fixture_client.get(path)
    assert response.status_code == status
    assert message in response.text


async def test_a_chart_waits_for_the_drawing_in_hand_then_says_when_to_retry(datasette, fixture_client, monkeypatch):
    monkeypatch.setattr(charts, "RENDER_WAIT_S", 0.05)
    monkeypatch.setitem(charts.slot_of, datasette, asyncio.Semaphore(0))  # a drawing holds the slot
    response = await fixture_client.get(CHART + "?vendor=acme&width=700")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert "The server is drawing other charts: try again in a moment." in response.text


async def test_a_chart_drawn_once_is_sent_again_without_drawing(fixture_client, monkeypatch):
    monkeypatch.delenv("COMPUTEKB_SPEEDUPS", raising=False)
    first = await fixture_client.get(CHART + "?vendor=acme&width=800")
    drawn = []
    # drawn in this process from here on, so that the drawing counted is the one called
    monkeypatch.setattr(charts, "drawing_process", functools.cache(lambda: ThreadPoolExecutor(1)))
    monkeypatch.setattr(charts, "draw", lambda spec_json: drawn.append(spec_json) or "<svg>new</svg>")
    again = await fixture_client.get(CHART + "?vendor=acme&width=800")
    assert again.status_code == 200 and again.text == first.text and drawn == []
    other = await fixture_client.get(CHART + "?vendor=acme&width=960")
    assert other.text == "<svg>new</svg>" and len(drawn) == 1, "a chart not drawn before is drawn"


async def test_a_drawing_process_that_died_is_a_retry_and_the_next_chart_starts_another(fixture_client, monkeypatch):
    class Dead(Executor):
        def submit(self, *args, **kwargs):
            raise BrokenProcessPool("the drawing process died")
    started = []
    monkeypatch.setattr(charts, "drawing_process", functools.cache(lambda: started.append(1) or Dead()))
    response = await fixture_client.get(CHART + "?vendor=beta&width=1280")
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    await fixture_client.get(CHART + "?vendor=beta&width=1280")
    assert started == [1, 1], "a new process for the next chart"


@DASHBOARD_PAGES_FAIL_ON_1
async def test_the_dashboard_page_loads_no_chart_library_and_names_each_picture(fixture_client):
    page = await fixture_client.get("/-/dashboards/accelerator-landscape?vendor=acme")
    assert page.status_code == 200
    assert "vega" not in page.text.lower().replace("vega-lite chart", "")
    assert ('data-chart-picture="/-/charts/accelerator-landscape/memory-vs-bandwidth.svg?vendor=acme"'
            in page.text)
    assert '<label for="vendor">Vendor</label>' in page.text
    assert '<a href="/-/compare?ids=acme-x1,acme-x2">Compare these 2 side by side</a>' in page.text


def running(pid: int) -> bool:
    """Whether the process runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_drawing_process_ends_when_its_server_is_killed():
    script = ("import os, time\nfrom serving import charts\n"
              "print(charts.drawing_process().submit(os.getpid).result(), flush=True)\ntime.sleep(60)")
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    drawing = int(server.stdout.readline())
    assert running(drawing)
    server.kill()
    server.wait()
    deadline = time.monotonic() + 10
    while running(drawing) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running(drawing), "the drawing process outlived its server"
