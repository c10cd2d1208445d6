"""Show the data release on every page, so a citation can name the version it saw."""

from datasette import hookimpl

DATABASE = "computekb"


async def read_release(datasette):
    """The release row of the database, or None when there is no such database."""
    if DATABASE not in datasette.databases:
        return None
    result = await datasette.get_database(DATABASE).execute(
        "select data_release, data_hash, built_at from release limit 1")
    row = result.first()
    return dict(row) if row else None


@hookimpl
def startup(datasette):
    async def inner():
        # The database is immutable: read the release once, not on every page.
        datasette._computekb_release = await read_release(datasette)
    return inner


@hookimpl
def extra_template_vars(datasette):
    return {"data_release": getattr(datasette, "_computekb_release", None)}
