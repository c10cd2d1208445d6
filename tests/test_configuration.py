"""The merged metadata split as Datasette 1.0 takes it: configuration and metadata apart.

Datasette 0.65 reads queries, table options and plugin settings from the
metadata; 1.0 from its configuration. Nothing may land in both, nor be lost.
"""

import copy

from serving.metadata import CONFIG_DATABASE_KEYS, CONFIG_KEYS, CONFIG_TABLE_KEYS, merge, split_configuration
from serving.serve import served_metadata
from serving.site import DEFAULT_SITE_URL


def leaves(mapping, path=()):
    """Every (path, value) of nested dicts, down to what is not a dict."""
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, (*path, key))
        else:
            yield (*path, key), value


def test_every_key_lands_in_one_part_and_nothing_is_lost():
    metadata = served_metadata(DEFAULT_SITE_URL)
    before = copy.deepcopy(metadata)
    config, rest = split_configuration(metadata)
    assert metadata == before, "the metadata given is left as it was"
    assert not {p for p, _ in leaves(config)} & {p for p, _ in leaves(rest)}
    assert merge(config, rest) == metadata


def test_each_key_is_where_datasette_1_reads_it():
    config, rest = split_configuration(served_metadata(DEFAULT_SITE_URL))
    assert {"plugins", "extra_css_urls"} <= set(config) <= CONFIG_KEYS | {"databases"}
    assert {"title", "license", "source"} <= set(rest) and not set(rest) & CONFIG_KEYS
    database_config, database_rest = config["databases"]["computekb"], rest["databases"]["computekb"]
    assert "what-fits" in database_config["queries"] and "queries" not in database_rest
    assert set(database_config) <= CONFIG_DATABASE_KEYS | {"tables"}
    accelerators_config, accelerators_rest = database_config["tables"]["accelerators"], database_rest["tables"]["accelerators"]
    assert "facets" in accelerators_config and set(accelerators_config) <= CONFIG_TABLE_KEYS
    assert "columns" in accelerators_rest and not set(accelerators_rest) & CONFIG_TABLE_KEYS
