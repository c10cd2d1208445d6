"""The dashboards' charts as SVG drawn on the server (serving/charts.py), and their table charts' rows.

`/-/charts/<dashboard>/<chart>.svg?<filters>&width=<px>` is a chart of datasette-dashboards' configuration
in metadata.yml, with the dashboard's filters as its page takes them, drawn at the widest of
serving/charts.py's widths that fits `width`: the dashboard and chart pages (templates/dashboard_view.html,
dashboard_chart.html) put each one in its card, and the address is a permalink of the picture. Its
query is the configuration's, never the client's (as a canned query is), so it runs as any page's does,
within Datasette's time limit. The template function `chart_rows` gives a table chart's rows to the page.

A chart is drawn one at a time and kept once drawn (serving/charts.py); a request that finds the drawing
slot taken for too long gets a 503 with `Retry-After`, and static/reader.js asks again.
"""

import sqlite3
from dataclasses import dataclass

from datasette import hookimpl
from datasette.database import QueryInterrupted
from datasette.utils.asgi import BadRequest, NotFound, Response

from serving import charts
from serving.error_page import error_response

PATH = "/-/charts"
MAX_WIDTH = 4000


@dataclass
class ChartRows:
    """A chart's rows as its query gives them, and whether Datasette cut them at its row limit."""
    columns: list[str]
    rows: list[dict]
    truncated: bool


def chart_config(datasette, dashboard: str, chart: str) -> dict:
    """The chart's configuration, or a 404 naming what is not there."""
    dashboards = datasette.plugin_config("datasette-dashboards") or {}
    if dashboard not in dashboards:
        raise NotFound(f"No dashboard is named {dashboard!r}.")
    config = (dashboards[dashboard].get("charts") or {}).get(chart)
    if config is None:
        raise NotFound(f"The dashboard {dashboard!r} has no chart named {chart!r}.")
    return config


def filter_values(datasette, dashboard: str, args) -> dict[str, str]:
    """The value of each of the dashboard's filters in the request (empty when not sent): other arguments
    are not the chart's."""
    names = (datasette.plugin_config("datasette-dashboards") or {})[dashboard].get("filters") or {}
    return {name: args.get(name, "") for name in names}


async def rows_of(datasette, dashboard: str, chart: str, filters: dict[str, str]) -> ChartRows:
    """The rows of a chart's query with the dashboard's filters; a query that fails or runs out of time is a
    400 that says so."""
    config = chart_config(datasette, dashboard, chart)
    try:
        results = await datasette.execute(config["db"], charts.with_filters(config["query"], filters), filters)
    except QueryInterrupted:
        raise BadRequest(f"The chart {chart!r} took longer than the time limit to query; try fewer filters.") from None
    except sqlite3.DatabaseError as error:
        raise BadRequest(f"The chart {chart!r} could not be queried with these filters: {error}") from None
    return ChartRows(columns=list(results.columns), rows=[dict(row) for row in results.rows],
                     truncated=results.truncated)


def asked_width(args) -> int:
    text = args.get("width", str(charts.DEFAULT_WIDTH))
    if not text.isdigit() or not 0 < int(text) <= MAX_WIDTH:
        raise BadRequest(f"width must be a whole number of pixels from 1 to {MAX_WIDTH}, not {text!r}.")
    return int(text)


async def chart_svg(request, datasette):
    dashboard, chart = request.url_vars["dashboard"], request.url_vars["chart"]
    config = chart_config(datasette, dashboard, chart)
    if config.get("library") != "vega-lite":
        raise NotFound(f"The chart {chart!r} is a {config.get('library')} chart: its page shows it, not a picture.")
    width = charts.width_for(asked_width(request.args))
    found = await rows_of(datasette, dashboard, chart, filter_values(datasette, dashboard, request.args))
    svg = await charts.drawn(datasette, charts.spec_json(charts.vega_lite_spec(config, found.rows, width)))
    if svg is None:
        response = await error_response(datasette, request, "The server is drawing other charts: try again in a moment.", 503)
        response.headers["Retry-After"] = str(charts.RETRY_AFTER_S)
        return response
    return Response(svg, content_type="image/svg+xml; charset=utf-8",
                    headers={"X-Rows-Truncated": "1"} if found.truncated else {})


@hookimpl
def register_routes():
    return [(rf"^{PATH}/(?P<dashboard>[a-z0-9-]+)/(?P<chart>[a-z0-9-]+)\.svg$", chart_svg)]


@hookimpl
def extra_template_vars(template, datasette, request):
    if template in ("dashboard_view.html", "dashboard_chart.html"):
        charts.drawing_process()  # started while the page loads, before it asks for its charts
    async def chart_rows(dashboard: str, chart: str) -> ChartRows:
        """A table chart's rows, with the filters of the page's request."""
        args = request.args if request else {}
        return await rows_of(datasette, dashboard, chart, filter_values(datasette, dashboard, args))

    def chart_picture(dashboard: str, chart: str, query_string: str, width: int | None = charts.DEFAULT_WIDTH) -> str:
        """The address of a chart's picture with the page's filters, at `width` (None: the default width,
        for static/reader.js to set)."""
        arguments = [part for part in (query_string, f"width={width}" if width else "") if part]
        return f"{datasette.urls.path(PATH)}/{dashboard}/{chart}.svg" + ("?" + "&".join(arguments) if arguments else "")

    return {"chart_rows": chart_rows, "chart_picture": chart_picture, "reading_order": charts.reading_order}
