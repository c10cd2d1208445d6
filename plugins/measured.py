"""The spec sheet's *Measured* section: the accelerator's audited results and achieved rates (serving/measured.py)."""

from datasette import hookimpl
from datasette.utils import urlsafe_components
from datasette.utils.asgi import BadRequest

from domain.parameters import ParameterError, usd_per_kwh
from serving.measured import by_round, electricity_price, read, read_energy, shown
from serving.metadata import DATABASE


@hookimpl
def extra_template_vars(view_name, database, table, request, datasette):
    """The spec sheet's Measured section: `measured` (results of the latest round a round each, power results,
    achieved rates)."""
    if view_name != "row" or database != DATABASE or table != "accelerators":
        return {}

    async def inner():
        slug = urlsafe_components(request.url_vars["pks"])[0]
        try:
            price = usd_per_kwh(request.args.get("kwh_usd", "").strip())
        except ParameterError as error:
            raise BadRequest(str(error)) from None
        db = datasette.get_database(DATABASE)
        results, rates = await read(db, [slug])
        return {"measured": {"rounds": by_round(results.get(slug, [])), "rates": rates.get(slug, []),
                             "energy": await read_energy(db, slug, await electricity_price(db, price))}}
    return inner


@hookimpl
def prepare_jinja2_environment(env):
    """`measured_number`: a measured figure with no more digits than a measurement gives (serving/measured.py)."""
    env.filters["measured_number"] = shown
