"""The spec sheet's *Measured* section: the accelerator's audited results and achieved rates (serving/measured.py)."""

from datasette import hookimpl
from datasette.utils import urlsafe_components

from serving.measured import read
from serving.metadata import DATABASE


@hookimpl
def extra_template_vars(view_name, database, table, request, datasette):
    """The spec sheet's Measured section: `measured` (results of the latest round, achieved rates)."""
    if view_name != "row" or database != DATABASE or table != "accelerators":
        return {}

    async def inner():
        slug = urlsafe_components(request.url_vars["pks"])[0]
        results, rates = await read(datasette.get_database(DATABASE), [slug])
        return {"measured": {"results": results.get(slug, []), "rates": rates.get(slug, [])}}
    return inner
