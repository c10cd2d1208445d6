"""The error answer of the safety plugins: Datasette's error page, or its JSON error shape.

The guard (400, 405, 414) and the SQL cap (503) answer before Datasette's own
views run, so they build the page Datasette would show for an error itself.
"""

from datasette.utils.asgi import Response


async def error_response(datasette, request, message: str, status: int) -> Response:
    """An error page in Datasette's template (HTML), or its JSON error shape when the path ends in .json."""
    info = {"ok": False, "error": message, "status": status, "title": None}
    if request.path.endswith(".json"):
        return Response.json(info, status=status)
    await datasette.invoke_startup()  # an ASGI wrapper can run before Datasette's own first-request startup
    # No request: its CSRF token is set further in, and an error page has no form.
    return Response.html(await datasette.render_template("error.html", info), status=status)
