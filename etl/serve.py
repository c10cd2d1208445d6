"""How the knowledge base is served: one set of Datasette options for the
`serve` command, the tests and `publish`."""

import json
import socket
import time
from pathlib import Path

import httpx
from datasette.app import Datasette

from .build import inspect_path
from .metadata import DATABASE_FILE, full_metadata

ROOT = Path(__file__).resolve().parents[1]
METADATA_YML = ROOT / "metadata.yml"
PLUGINS_DIR = ROOT / "plugins"
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"
STATIC_MOUNT = "assets"             # served at /assets/
DEFAULT_DB = ROOT / DATABASE_FILE

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


def metadata_path(db_path):
    """The merged metadata, written beside the database for `datasette` to read."""
    return Path(db_path).with_suffix(".metadata.json")


def write_metadata(db_path):
    path = metadata_path(db_path)
    path.write_text(json.dumps(full_metadata(METADATA_YML), indent=2, ensure_ascii=False))
    return path


def make_datasette(db_path):
    """A Datasette instance configured exactly as `computekb serve` runs it."""
    inspect_file = inspect_path(db_path)
    return Datasette(
        immutables=[str(db_path)],
        inspect_data=json.loads(inspect_file.read_text()) if inspect_file.exists() else None,
        metadata=full_metadata(METADATA_YML),
        plugins_dir=str(PLUGINS_DIR),
        template_dir=str(TEMPLATES_DIR),
        static_mounts=[(STATIC_MOUNT, str(STATIC_DIR))],
        settings=SETTINGS,
    )


def datasette_args(db_path, host, port):
    """Command-line arguments for `datasette serve` with the same configuration."""
    args = ["serve", "-i", str(db_path), "--inspect-file", str(inspect_path(db_path)),
            "-m", str(write_metadata(db_path)), "--plugins-dir", str(PLUGINS_DIR),
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
