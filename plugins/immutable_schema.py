"""Read the schema of an immutable database once, not on every request.

Datasette 0.65 asks a database for its schema again on every page: whether the
schema changed (`PRAGMA schema_version`), the real spelling of the table name
for each permission check, the table's columns, primary keys and foreign keys,
every foreign key of the database for a row page. Each question is a round trip
to a query thread: 10 of the 12 on an accelerator row page, about 1.5 ms of it.

A database served immutable (`-i`, as `computekb serve` and `computekb publish`
run it) cannot change while the server runs, so each answer is the same every
time: it is kept after the first. Answers are read-only (a caller that tried to
change one would raise rather than change it for the next request) and kept per
question up to a bound, as table names come from URLs. Mutable databases are
left alone, and schemas are refreshed again whenever one is served.
"""

from collections import OrderedDict

from datasette import hookimpl

from etl.read_only import read_only

# Database methods whose answer depends on the schema alone. `label_column_for_table`
# also reads the table's metadata, which plugins/shared_metadata.py makes read-only.
SCHEMA_METHODS = ("table_exists", "table_names", "view_names", "table_columns", "table_column_details",
                  "primary_keys", "fts_table", "label_column_for_table", "foreign_keys_for_table",
                  "get_all_foreign_keys", "hidden_table_names", "get_table_definition", "get_view_definition")
# Schema questions Datasette asks with `Database.execute` (Datasette.permission_allowed,
# Datasette._refresh_schemas); any other SQL runs every time.
SCHEMA_SQL = ("select name from sqlite_master where type in ('table', 'view') and name = ? collate nocase",
              "PRAGMA schema_version")
BOUND = 1024


def remembered(ask, bound=BOUND):
    """The async `ask`, answering each question (its arguments) from memory after the first time."""
    answers = OrderedDict()

    async def remembered_ask(*args, **kwargs):
        question = (args, tuple(sorted(kwargs.items())))
        if question in answers:
            answers.move_to_end(question)
            return answers[question]
        answer = read_only(await ask(*args, **kwargs))
        answers[question] = answer
        if len(answers) > bound:
            answers.popitem(last=False)
        return answer
    return remembered_ask


def schema_sql_remembered(execute):
    """`Database.execute`, with the answers to SCHEMA_SQL remembered; other SQL runs as before."""
    remembered_execute = remembered(execute)

    async def execute_schema_sql_once(sql, params=None, *args, **kwargs):
        if sql in SCHEMA_SQL and isinstance(params, (tuple, list, type(None))) and not args and not kwargs:
            return await remembered_execute(sql, tuple(params or ()))
        return await execute(sql, params, *args, **kwargs)
    return execute_schema_sql_once


def remember_schema(database):
    for name in SCHEMA_METHODS:
        setattr(database, name, remembered(getattr(database, name)))
    database.execute = schema_sql_remembered(database.execute)


def refresh_while_needed(datasette):
    """Datasette.refresh_schemas, skipped once every served database is immutable and refreshed.

    It copies each database's schema into the `_internal` database when its
    schema version changed; with immutable databases only, that happens once.
    A database added or served mutable makes it run again."""
    refresh = datasette.refresh_schemas
    refreshed_for = None

    async def refresh_schemas():
        nonlocal refreshed_for
        served = {name: db for name, db in datasette.databases.items() if name != "_internal"}
        if refreshed_for == tuple(served) and not any(db.is_mutable for db in served.values()):
            return
        await refresh()
        refreshed_for = tuple(served)
    datasette.refresh_schemas = refresh_schemas


@hookimpl
def startup(datasette):
    for name, database in datasette.databases.items():
        if name != "_internal" and not database.is_mutable:
            remember_schema(database)
    refresh_while_needed(datasette)
