"""What every template is given: the name of the knowledge base's database.

Templates link to its tables (`urls.table(kb_database, "accelerators")`); the
name is the one constant of etl/metadata.py, so templates never spell it.
"""

from datasette import hookimpl

from etl.metadata import DATABASE


@hookimpl
def extra_template_vars():
    return {"kb_database": DATABASE}
