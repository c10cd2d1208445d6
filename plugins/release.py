"""Show the data release and the real mix of source tiers on every page.

The release lets a citation name the version it saw; the provenance line counts
the cited values by the authority tier of their source, so the footer states
what the data holds rather than a claim about it.
"""

from datasette import hookimpl

from etl.schema import TIERS

DATABASE = "computekb"
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
        # The database is immutable: read the release once, not on every page.
        datasette._computekb_release = await read_release(datasette)
    return inner


@hookimpl
def extra_template_vars(datasette):
    release = getattr(datasette, "_computekb_release", None)
    return {"data_release": release, "provenance": release["provenance"] if release else None}
