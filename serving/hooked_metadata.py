"""The dashboards' configuration handed to Datasette 0.65 by a hook rather than in the metadata (a speed-up).

Datasette 0.65 deep-copies the whole metadata in each table permission check,
13 of them on a spec sheet; the configuration of datasette-dashboards is more
than half of it and no permission check reads it. With the speed-ups on
(serving/speedups.py), the served metadata leaves it out and the
`get_metadata` hook of plugins/speed.py adds it back to the lookups of plugin
settings, the only ones that read it. Datasette 1.0 reads plugin settings from
its configuration, not the metadata: there the metadata keeps it.
"""

import functools

from . import speedups
from .metadata import full_metadata
from .paths import METADATA_YML
from .site import DATASETTE_MAJOR

HOOKED_PLUGIN = "datasette-dashboards"


def by_hook() -> bool:
    """Whether the dashboards' configuration goes by the hook: the speed-ups on, on Datasette 0.65."""
    return speedups.enabled() and DATASETTE_MAJOR < 1


def without_hooked(metadata: dict) -> dict:
    """The served metadata: without the dashboards' configuration when it goes by the hook."""
    if not by_hook():
        return metadata
    return {**metadata, "plugins": {k: v for k, v in metadata.get("plugins", {}).items() if k != HOOKED_PLUGIN}}


@functools.cache
def hooked_configuration() -> dict:
    """The dashboards' configuration, as metadata.yml writes it (the same for every server)."""
    return full_metadata(METADATA_YML)["plugins"][HOOKED_PLUGIN]


def hooked_metadata(key: str | None) -> dict:
    """What the hook adds to a metadata lookup of `key`: plugin settings (`plugins`, or all: None) only."""
    if key not in (None, "plugins") or not by_hook():
        return {}
    return {"plugins": {HOOKED_PLUGIN: hooked_configuration()}}
