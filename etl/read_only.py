"""Read-only dicts and lists whose copies are themselves, for values shared by every request.

The served metadata (plugins/shared_metadata.py) and the remembered schema of
an immutable database (plugins/immutable_schema.py) are shared by all
requests: nothing may change them, so a copy of them can be the value itself.
Here rather than in plugins/, as Datasette loads each plugin file on its own
and `plugins` is not an installed package.
"""

ABSENT = object()


def read_only_error(*args, **kwargs):
    raise TypeError("a value shared by every request is read-only")


class ReadOnlyDict(dict):
    pop = popitem = clear = setdefault = __delitem__ = __ior__ = read_only_error

    def __setitem__(self, key, value):
        if self.get(key, ABSENT) != value:
            read_only_error()

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

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


def read_only(value, mutable_keys=frozenset()):
    """`value` with every dict and list in it made read-only, except the values of dict keys in `mutable_keys`."""
    if isinstance(value, dict):
        return ReadOnlyDict({key: item if key in mutable_keys else read_only(item, mutable_keys)
                             for key, item in value.items()})
    if isinstance(value, list):
        return ReadOnlyList(read_only(item, mutable_keys) for item in value)
    return value
