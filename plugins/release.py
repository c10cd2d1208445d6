"""Show the data release and the real mix of source tiers on every page, and at `/-/release`.

The release lets a citation name the version it saw; the provenance line counts
the cited values by the authority tier of their source, so the footer states
what the data holds rather than a claim about it.
"""

import weakref

from datasette import hookimpl
from datasette.utils.asgi import Response

from domain.schema import TIERS
from serving.metadata import DATABASE
from serving.site import PLUGIN

# The release each server read at its start (the database is immutable: read once, not on every page).
# Kept here, not on the Datasette object: state of a plugin's own stays out of objects Datasette owns.
RELEASES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
TIER_ORDER = "CASE tier " + " ".join(f"WHEN '{tier}' THEN {i}" for i, tier in enumerate(TIERS)) + " END"


async def read_release(datasette):
    """The release row of the database, with the cited values per tier; None when there is no such database."""
    if DATABASE not in datasette.databases:
        return None
    db = datasette.get_database(DATABASE)
    row = (await db.execute("select data_release, data_hash, built_at from release limit 1")).first()
    if not row:
        return None
    tiers = await db.execute(f"select tier, count(*) as n from citations group by tier order by {TIER_ORDER}")
    return {**dict(row), "provenance": [{"tier": r["tier"], "values": r["n"]} for r in tiers.rows]}


@hookimpl
def startup(datasette):
    async def inner():
        RELEASES[datasette] = await read_release(datasette)
    return inner


@hookimpl
def extra_template_vars(datasette):
    release = RELEASES.get(datasette)
    return {"data_release": release, "provenance": release["provenance"] if release else None}


async def release_page(request, datasette):
    """The release this server answers from, and whether it is the data folder's: `computekb serve` serves
    the last good release when a rebuild fails, and says so here (`rebuild_failed`) as on its console."""
    release = RELEASES.get(datasette) or {}
    failed = (datasette.plugin_config(PLUGIN) or {}).get("rebuild_failed")
    return Response.json({"data_release": release.get("data_release"), "data_hash": release.get("data_hash"),
                          "built_at": release.get("built_at"), "current": failed is None, "rebuild_failed": failed})


@hookimpl
def register_routes():
    return [(r"^/-/release(\.json)?$", release_page)]
