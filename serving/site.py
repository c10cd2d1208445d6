"""The site's own URL: permalinks, feeds and `Link` headers name it, never the request's `Host`.

A request can carry any `Host` header (`127.0.0.1:8201@evil.example` made a
permalink to another host), and a cache shared between hosts would then serve
that page to everyone. The URL is configured instead: the `site_url` option of
`computekb serve` and `computekb publish`, kept in the metadata as the
`computekb` plugin's configuration.
"""

import functools
import importlib.metadata
import urllib.parse

import yaml

from .metadata import DATABASE
from .paths import METADATA_YML

PLUGIN = "computekb"                         # metadata: plugins: computekb: site_url: ...
DEFAULT_SITE_URL = "http://127.0.0.1:8001"   # where `computekb serve` listens by default
DATASETTE_MAJOR = int(importlib.metadata.version("datasette").split(".")[0])  # 0 or 1: the pages below differ


def query_path(fmt=None):
    """The path of the page that runs a query of the client's own (`?sql=`) in format `fmt` (json, csv...).

    Datasette 0.65 runs it on the database page (`/computekb.json?sql=`); 1.0 on
    `/computekb/-/query.json?sql=`, and its database page redirects there."""
    page = f"/{DATABASE}/-/query" if DATASETTE_MAJOR >= 1 else f"/{DATABASE}"
    return page + (f".{fmt}" if fmt else "")


def site_url(datasette):
    """The configured origin (`scheme://host[:port]`), without a trailing slash."""
    return ((datasette.plugin_config(PLUGIN) or {}).get("site_url") or DEFAULT_SITE_URL).rstrip("/")


@functools.cache
def site_metadata_keys():
    """The top-level keys of metadata.yml (title, license, source...), read from the project's metadata once.

    Not asked of Datasette: the server is always given this file, and Datasette
    1.0 has neither 0.65's `metadata()` lookup nor the `metadata` of its templates."""
    return yaml.safe_load(METADATA_YML.read_text(encoding="utf-8"))


def site_title():
    """The site's name in citations (`title` of metadata.yml)."""
    return site_metadata_keys().get("title") or DATABASE


def checked_site_url(url):
    """`url` if it is an http(s) origin with nothing after the host, else ValueError."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/") or parts.query \
            or parts.fragment or parts.username or parts.password:
        raise ValueError(f"{url!r}: expected a site URL such as https://example.org (scheme and host, nothing after)")
    return url.rstrip("/")


def site_metadata(metadata, url):
    """`metadata` with the site URL in the plugin configuration."""
    plugins = dict(metadata.get("plugins") or {})
    plugins[PLUGIN] = {**(plugins.get(PLUGIN) or {}), "site_url": checked_site_url(url)}
    return {**metadata, "plugins": plugins}
