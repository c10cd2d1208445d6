"""The dashboards' charts drawn as SVG on the server, so a reader's browser loads no chart library.

datasette-dashboards draws each Vega-Lite chart in the browser with Vega, Vega-Lite and vega-embed: 277 KB
compressed before any data, on a page whose goal is 150 KB. Here the same specification, with the same
defaults as the plugin's own renderer, is drawn by vl-convert (Vega's own SVG renderer, run by the package)
and the page takes the SVG as it is. What the browser's renderer gave beyond a picture is kept:

- each mark's link (the spec's `href` channel) is a link of the SVG; vl-convert resolves a link against its
  own data loader's base URL, which is taken off again so the link stays on this site;
- each mark's tooltip (the spec's `tooltip` fields, with their titles and formats) becomes its accessible
  description (Vega-Lite's `description` channel) and an SVG `<title>`, which a browser shows on hover.

Drawing is work of a core (0.05 to 0.5 s a chart here, more on a loaded machine), done in a process of its
own, one chart at a time: a request waits for the drawing in hand at most RENDER_WAIT_S, and the server's
process, with every other page, keeps the other core.
A drawing is kept for its specification, rows included (`Drawings`), so a filter state or a release never
gets another's chart; with the speed-ups off each request draws anew (serving/speedups.py).
"""

import asyncio
import functools
import html
import json
import multiprocessing
import os
import re
import threading
import time
import weakref
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import vl_convert

from serving import speedups

# The widths a chart is drawn at: the page asks for its card's width and gets the widest of these that
# fits, so a phone and a desktop each get legible text, and the drawings kept stay few.
WIDTHS = (320, 400, 480, 640, 800, 960, 1280)
DEFAULT_WIDTH = 640
DRAWINGS_KEPT = 256  # about 40 MB at most: a specification of 50 KB and its SVG of 100 KB each
# The base URL of vl-convert's data loader, which Vega puts before a relative link.
LOADER_BASE = "https://vega.github.io/vega-datasets/"
LOADER_LINK = re.compile(r'xlink:href="' + re.escape(LOADER_BASE) + r'/?')
DESCRIBED_MARK = re.compile(r'<(path|text|line|rect|image)(\s[^>]*?aria-label="([^"]*)"[^>]*?)/>')
DESCRIPTION_FIELD = "_description"
WARM_UP = json.dumps({"mark": "point", "data": {"values": []}})
DRAWINGS_AT_ONCE = 1
RENDER_WAIT_S = 1.0  # as the SQL cap's wait (plugins/sql_cap.py)
RETRY_AFTER_S = 1
# One drawing slot and one store of drawings per Datasette instance: its test client and server share them.
slot_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
drawings_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
OPTIONAL_PART = re.compile(r"\[\[.*?\]\]")
PARAMETER = re.compile(r":([a-zA-Z0-9_]+)")


def with_filters(query: str, filters: dict) -> str:
    """A chart query with its filters, by the syntax datasette-dashboards documents: each optional part
    `[[ AND col = :name ]]` is kept, without its brackets, when the filter `name` has a value, and left out
    otherwise. (The plugin's own function for it is not part of its public API; tests/test_charts.py
    holds the two to the same answers.)"""
    def fill(part):
        name = PARAMETER.search(part.group(0))
        return part.group(0).strip("[]") if name and filters.get(name.group(1)) else ""
    return OPTIONAL_PART.sub(fill, query)


def reading_order(layout: list[list[str]] | None, charts: list[str]) -> list[str]:
    """The charts in the order a reader meets them in the layout (row by row, a chart spanning cells once),
    then any the layout leaves out: on a phone the grid is one column in this order."""
    placed = [chart for row in layout or [] for chart in row if chart in charts]
    return list(dict.fromkeys([*placed, *charts]))


def width_for(asked: int) -> int:
    """The widest drawing width that fits a card `asked` pixels wide (the narrowest when none does)."""
    return max((w for w in WIDTHS if w <= asked), default=WIDTHS[0])


def tooltip_text(fields: list[dict]) -> str:
    """A Vega expression for a mark's tooltip as one text: a line per field, `Title: value`, a number in
    its field's format where it has one, a date as YYYY-MM-DD, a missing value as a dash."""
    def line(field: dict) -> str:
        value = f"datum[{json.dumps(field['field'])}]"
        if field.get("type") == "temporal":  # a date as the source gives it (Vega-Lite parsed it to a time)
            shown = f"utcFormat({value}, '%Y-%m-%d')"
        elif "format" in field:
            shown = f"format({value}, {json.dumps(field['format'])})"
        else:
            shown = f"'' + {value}"
        title = json.dumps(f"{field.get('title', field['field'])}: ")
        return f"{title} + ({value} == null ? '–' : {shown})"
    return " + '\\n' + ".join(line(field) for field in fields)


def described(spec):
    """The specification with each mark's tooltip fields as its description (a copy; the input is kept)."""
    if isinstance(spec, list):
        return [described(item) for item in spec]
    if not isinstance(spec, dict):
        return spec
    spec = {key: described(value) for key, value in spec.items()}
    tooltip = (spec.get("encoding") or {}).get("tooltip")
    if "mark" in spec and isinstance(tooltip, list) and tooltip:
        spec["transform"] = [*spec.get("transform", []), {"calculate": tooltip_text(tooltip), "as": DESCRIPTION_FIELD}]
        spec["encoding"] = {**spec["encoding"], "description": {"field": DESCRIPTION_FIELD}}
    return spec


def vega_lite_spec(chart: dict, rows: list[dict], width: int) -> dict:
    """The chart's full specification, with the defaults datasette-dashboards gives it in the browser (its
    title as description, no view border, a clear background, points on lines) and a width that fits."""
    return described({
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "description": chart.get("title", ""),
        "width": width,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "view": {"stroke": None},
        "config": {"background": "#00000000", "arc": {"innerRadius": 50}, "line": {"point": True}},
        "data": {"values": rows},
        **chart.get("display", {}),
    })


def with_titles(svg: str) -> str:
    """Each described mark with an SVG `<title>` of its description, and links to this site's own pages."""
    def titled(mark):
        title = html.escape(html.unescape(mark.group(3)), quote=False)
        return f"<{mark.group(1)}{mark.group(2)}><title>{title}</title></{mark.group(1)}>"
    return DESCRIBED_MARK.sub(titled, LOADER_LINK.sub('xlink:href="/', svg))


class Drawings:
    """The SVG drawn for each specification (its JSON, rows included), the least recently asked for
    forgotten first; with the speed-ups off (serving/speedups.py) none is kept."""

    def __init__(self, kept: int = DRAWINGS_KEPT):
        self.kept = kept
        self.svg_of: OrderedDict[str, str] = OrderedDict()

    def get(self, spec_json: str) -> str | None:
        if spec_json in self.svg_of:
            self.svg_of.move_to_end(spec_json)
        return self.svg_of.get(spec_json)

    def put(self, spec_json: str, svg: str) -> None:
        if not speedups.enabled():
            return
        self.svg_of[spec_json] = svg
        self.svg_of.move_to_end(spec_json)
        while len(self.svg_of) > self.kept:
            self.svg_of.popitem(last=False)


def spec_json(spec: dict) -> str:
    return json.dumps(spec, sort_keys=True)


def draw(spec_json: str) -> str:
    """The SVG of a Vega-Lite specification."""
    return with_titles(vl_convert.vegalite_to_svg(spec_json))


def exit_with_the_server() -> None:
    """Run in the drawing process: it ends when the server that started it is gone, even killed at once."""
    server = os.getppid()

    def watch():
        while os.getppid() == server:
            time.sleep(1)
        os._exit(0)
    threading.Thread(target=watch, daemon=True).start()


@functools.cache
def drawing_process() -> ProcessPoolExecutor:
    """The process that draws. vl-convert holds the GIL while it draws: in the server's own process, even in a
    thread, each chart stopped every other request for its 0.05 to 0.5 s. Started on the first chart
    ("spawn": the server's threads are not copied into it) when a page with charts is made, and again if
    it dies."""
    process = ProcessPoolExecutor(max_workers=DRAWINGS_AT_ONCE, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=exit_with_the_server)
    process.submit(draw, WARM_UP)  # the renderer starts (about 0.8 s) while the page asking for charts loads
    return process


async def drawn(datasette, spec_json: str) -> str | None:
    """The chart's SVG, from memory or drawn by the drawing process once the drawing slot is free; None when
    the slot stayed taken for RENDER_WAIT_S, or the drawing process died (the next chart starts another)."""
    drawings = drawings_of.setdefault(datasette, Drawings())
    if (svg := drawings.get(spec_json)) is not None:
        return svg
    slot = slot_of.setdefault(datasette, asyncio.Semaphore(DRAWINGS_AT_ONCE))
    try:
        async with asyncio.timeout(RENDER_WAIT_S):
            await slot.acquire()
    except TimeoutError:
        return None
    try:
        if (svg := drawings.get(spec_json)) is None:  # drawn by the request the slot waited for
            try:
                svg = await asyncio.get_running_loop().run_in_executor(drawing_process(), draw, spec_json)
            except BrokenProcessPool:
                drawing_process.cache_clear()
                return None
            drawings.put(spec_json, svg)
        return svg
    finally:
        slot.release()
