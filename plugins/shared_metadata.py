"""Let Datasette share the metadata instead of deep-copying it on every check.

Datasette 0.65 deep-copies every metadata source each time it checks a table
permission (`Datasette._table_permission_allows`), several times per page: 60
copies on an accelerator row page, 800 on the database page. Our metadata is
large (a description for every column, the dashboards), so those copies cost
more than rendering some pages. At startup the metadata is turned into
read-only dicts and lists whose deep copy is themselves: nothing can change
them (a write raises TypeError), so sharing is safe.

Datasette itself writes into some levels of the metadata on every page: it
fills in the inherited source and license of the database and table dicts, and
adds a `name` key to each canned query. Those levels stay ordinary dicts; what
is below them (a table's column descriptions, units, facets, sortable columns,
and the plugins' configuration) is where the size is, and is shared.
"""

from datasette import hookimpl

def read_only_error(*args, **kwargs):
    raise TypeError("the served metadata is read-only")


class ReadOnlyDict(dict):
    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = read_only_error

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


class ReadOnlyList(list):
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = read_only_error
    __iadd__ = __imul__ = read_only_error

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


def read_only(value):
    """`value` with every dict and list in it made read-only."""
    if isinstance(value, dict):
        return ReadOnlyDict({key: read_only(item) for key, item in value.items()})
    if isinstance(value, list):
        return ReadOnlyList(read_only(item) for item in value)
    return value


def share_large_parts(metadata):
    """A copy of `metadata` with the parts Datasette never writes to made read-only."""
    shared = {**metadata, "plugins": read_only(metadata.get("plugins", {}))}
    shared["databases"] = {name: share_database(database) for name, database in metadata.get("databases", {}).items()}
    return shared


def share_database(database):
    tables = {name: {key: read_only(value) for key, value in table.items()}
              for name, table in database.get("tables", {}).items()}
    return {**database, "tables": tables, "plugins": read_only(database.get("plugins", {}))}


@hookimpl
def startup(datasette):
    # The metadata given with -m or Datasette(metadata=...); no public setter in 0.65.
    datasette._metadata_local = share_large_parts(datasette._metadata_local)
