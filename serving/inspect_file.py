"""Datasette's inspect file of a release (its hash and table counts), made by whoever serves it."""

import json
from pathlib import Path

from datasette.inspect import inspect_hash

from domain.release import table_counts


def inspect_path(db_path):
    return Path(db_path).with_suffix(".inspect.json")


def write_inspect(db_path, target, name):
    """Datasette's inspect file for the immutable database at `db_path`, served as `name`; return its counts."""
    db_path, counts = Path(db_path), table_counts(db_path)
    data = {name: {
        "hash": inspect_hash(db_path),
        "size": db_path.stat().st_size,
        "file": db_path.name,
        "tables": {table: {"count": count} for table, count in counts.items()},
    }}
    Path(target).write_text(json.dumps(data, indent=2))
    return counts
