"""Show the data release and the real mix of source tiers on every page.

The release lets a citation name the version it saw; the provenance line counts
the cited values by the authority tier of their source, so the footer states
what the data holds rather than a claim about it.
"""

import weakref

from datasette import hookimpl

from etl.metadata import DATABASE
from etl.schema import TIERS

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
