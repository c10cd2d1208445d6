"""The spec sheet's *Measured* section: the accelerator's audited results and achieved rates (serving/measured.py)."""

from datasette import hookimpl
from datasette.utils import urlsafe_components

from serving.measured import by_round, read, read_energy, shown
from serving.metadata import DATABASE


@hookimpl
def extra_template_vars(view_name, database, table, request, datasette):
    """The spec sheet's Measured section: `measured` (results of the latest round a round each, power results,
    achieved rates)."""
    if view_name != "row" or database != DATABASE or table != "accelerators":
        return {}

    async def inner():
        slug = urlsafe_components(request.url_vars["pks"])[0]
        db = datasette.get_database(DATABASE)
        results, rates = await read(db, [slug])
        return {"measured": {"rounds": by_round(results.get(slug, [])), "rates": rates.get(slug, []),
                             "energy": await read_energy(db, slug)}}
    return inner


@hookimpl
def prepare_jinja2_environment(env):
    """`measured_number`: a measured figure with no more digits than a measurement gives (serving/measured.py)."""
    env.filters["measured_number"] = shown
