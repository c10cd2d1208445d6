"""How the knowledge base is served: one set of Datasette options for the
`serve` command, the tests and the deployment image of `publish`, whose
command is `computekb serve` too.

A server serves one data release: `computekb serve` copies the database (the
release is that one file) into a folder of its own, makes Datasette's inspect
file from the copy, and serves the copy. A build that replaces `computekb.db`
meanwhile changes nothing that the running server answers; the new release is
served from the next start.

`computekb serve` runs uvicorn itself on Datasette's ASGI application, as
`datasette serve` does, with the httptools parser and the security headers as
uvicorn's default headers: the answers uvicorn writes on its own (a request it
cannot parse, a request head over the bound) carry them too.
"""

import asyncio
import contextlib
import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

import httpx
import uvicorn
from datasette.app import Datasette
from datasette.database import Database
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from domain.release import built_hash

from .headers import SECURITY_HEADER_NAMES, SECURITY_HEADERS
from .hooked_metadata import without_hooked
from .inspect_file import inspect_path, write_inspect
from .metadata import DATABASE, full_metadata, split_configuration
from .paths import METADATA_YML, PLUGINS_DIR, STATIC_DIR, STATIC_MOUNT, TEMPLATES_DIR
from .site import DATASETTE_MAJOR, DEFAULT_SITE_URL, PLUGIN, site_metadata

SETTINGS = {
    "sql_time_limit_ms": 1000,      # a runaway query is stopped, not queued
    "max_returned_rows": 1000,
    "default_page_size": 50,
    "facet_time_limit_ms": 200,
    "default_facet_size": 15,
    "allow_download": True,         # the whole database is the citable artefact
    "num_sql_threads": 3,
    "suggest_facets": False,        # one query per column on every table page; the facets are curated in metadata
}


def served_settings(cache_ttl=None):
    """SETTINGS, with Datasette's `default_cache_ttl` when one is given (the image's, `computekb publish --cache-ttl`)."""
    return SETTINGS if cache_ttl is None else {**SETTINGS, "default_cache_ttl": cache_ttl}


def metadata_path(db_path):
    """The merged metadata, written beside the database for `datasette` to read."""
    return Path(db_path).with_suffix(".metadata.json")


def served_metadata(site_url, plugin_config=None):
    """metadata.yml with the schema's descriptions, the site URL and any other key
    of the `computekb` plugin's configuration given (the SQL cap's: plugins/sql_cap.py)."""
    metadata = site_metadata(full_metadata(METADATA_YML), site_url)
    metadata["plugins"][PLUGIN].update(plugin_config or {})
    return without_hooked(metadata)


def write_metadata(db_path, site_url=DEFAULT_SITE_URL):
    path = metadata_path(db_path)
    path.write_text(json.dumps(served_metadata(site_url), indent=2, ensure_ascii=False))
    return path


@contextlib.contextmanager
def release_snapshot(db_path):
    """A private copy of the release at `db_path`, with its inspect file; yields the copy's path.

    A server reading the published file itself would open new connections on a
    new file after a rebuild while old ones keep the old file: answers from two
    releases, counts of the old one, citations looked up in the wrong one. A
    build replaces the file in one rename and the copy reads the file it opened,
    so the copy is one release; its inspect file is made from the copy itself.
    The copy is named after the database the site serves, whatever the file's name.
    """
    with tempfile.TemporaryDirectory(prefix="computekb-release-") as folder:
        copy = Path(folder) / f"{DATABASE}.db"
        shutil.copyfile(db_path, copy)
        if built_hash(copy) is None:
            raise RuntimeError(f"{db_path} is not a database built by computekb build")
        write_inspect(copy, inspect_path(copy), DATABASE)
        yield copy


def make_datasette(db_path, site_url=DEFAULT_SITE_URL, plugin_config=None, cache_ttl=None, cors=False):
    """A Datasette instance configured exactly as `computekb serve` runs it (`plugin_config`: see served_metadata;
    `cors`: Datasette's CORS headers, as `datasette serve --cors` sends them).

    The secret that signs cookies and tokens is DATASETTE_SECRET's, as `datasette
    serve` reads it: the replicas of an image share the one its Dockerfile sets."""
    inspect_file = inspect_path(db_path)
    metadata = served_metadata(site_url, plugin_config)
    # Datasette 1.0 takes queries, table options and plugin settings as its configuration (its `config`
    # argument), 0.65 all of it as metadata; the same merged metadata serves both.
    configuration = {}
    if DATASETTE_MAJOR >= 1:
        configuration["config"], metadata = split_configuration(metadata)
    # The database is served under the one name the plugins and templates know, whatever its file's name
    # (Datasette would name it after the file: `kb.db` answered 500 on the home page and the finder).
    inspect_data = json.loads(inspect_file.read_text()) if inspect_file.exists() else None
    datasette = Datasette(
        inspect_data={DATABASE: next(iter(inspect_data.values()))} if inspect_data else None,
        metadata=metadata,
        **configuration,
        plugins_dir=str(PLUGINS_DIR),
        template_dir=str(TEMPLATES_DIR),
        static_mounts=[(STATIC_MOUNT, str(STATIC_DIR))],
        settings=served_settings(cache_ttl),
        secret=os.environ.get("DATASETTE_SECRET"),
        cors=cors,
    )
    datasette.add_database(Database(datasette, path=str(db_path), is_mutable=False), name=DATABASE)
    # Datasette adds an empty in-memory database when it is given no file: nothing of the knowledge base is
    # in it, and the home page would list it beside the one database a reader came for.
    if "_memory" in datasette.databases:
        datasette.remove_database("_memory")
    return datasette


def without_security_headers(app):
    """`app` with its own copies of the security headers dropped: the server sends them.

    uvicorn writes its configured headers before the application's; both would
    otherwise arrive twice (the guard adds them, Datasette sets `Referrer-Policy`)."""
    async def dropped(scope, receive, send):
        async def sending(event):
            if event["type"] == "http.response.start":
                event = dict(event, headers=[(name, value) for name, value in event.get("headers", [])
                                             if name.lower() not in SECURITY_HEADER_NAMES])
            await send(event)
        await app(scope, receive, sending)
    return dropped


MAX_HEAD_BYTES = 65_536  # request line and headers: a URL within the guard's bound and any browser's headers fit


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bound on each request's head (request line and headers).

    h11 refuses a head over 16 KB; httptools reads a header of any length
    (a 100 MB one was read whole, the server growing by as much). A head over
    MAX_HEAD_BYTES gets uvicorn's own 400, with the security headers, and the
    connection is closed. Bytes are counted from the end of the previous
    request, so pipelined requests sent in one packet count together."""

    head_bytes = 0
    in_head = True

    def data_received(self, data: bytes) -> None:
        if self.in_head:
            self.head_bytes += len(data)
            if self.head_bytes > MAX_HEAD_BYTES:
                self.logger.warning("Request head over %d bytes.", MAX_HEAD_BYTES)
                self.send_400_response("Request head too large.")
                return
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self.in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.head_bytes, self.in_head = 0, True
        super().on_message_complete()


def server_config(datasette, host, port):
    """uvicorn's configuration for `computekb serve`, as `datasette serve` runs it plus the security headers.

    With the httptools parser, the 400 that uvicorn writes itself to a request
    it cannot parse (before any application code) carries the configured
    headers too; h11's carries none. The request head is bounded as h11 bounds it."""
    return uvicorn.Config(without_security_headers(datasette.app()), host=host, port=port, log_level="info",
                          lifespan="on", workers=1, http=BoundedHttpToolsProtocol, headers=list(SECURITY_HEADERS.items()))


def run_server(db_path, host, port, site_url, cache_ttl=None, cors=False, plugin_config=None):
    """Serve `db_path` until stopped: Datasette's startup hooks first, as `datasette serve` runs them."""
    datasette = make_datasette(db_path, site_url, plugin_config, cache_ttl=cache_ttl, cors=cors)
    asyncio.run(datasette.invoke_startup())
    uvicorn.Server(server_config(datasette, host, port)).run()


def datasette_args(db_path, host, port, site_url=DEFAULT_SITE_URL):
    """Command-line arguments for `datasette serve` with the same configuration."""
    write_inspect(db_path, inspect_path(db_path), Path(db_path).stem)
    args = ["serve", "-i", str(db_path), "--inspect-file", str(inspect_path(db_path)),
            "-m", str(write_metadata(db_path, site_url)), "--plugins-dir", str(PLUGINS_DIR),
            "--template-dir", str(TEMPLATES_DIR), "--static", f"{STATIC_MOUNT}:{STATIC_DIR}", "--host", host, "--port", str(port)]
    for name, value in SETTINGS.items():
        args += ["--setting", name, str(value).lower() if isinstance(value, bool) else str(value)]
    return args


def free_port(host="127.0.0.1"):
    """A TCP port nothing listens on now, for a server started next (tests, benchmarks)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_until_up(url, process, seconds=60):
    """Wait until the Datasette started as `process` answers at `url`: False if it exits or `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(url + "/-/versions.json", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False
