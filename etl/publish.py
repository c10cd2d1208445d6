"""`computekb publish`: a deployment folder built with Datasette's own tooling.

The folder holds what `datasette package` would put in its build context (the
database, its inspect file, the metadata, plugins, templates, static files)
and a Dockerfile written by Datasette's `make_dockerfile`, so the image runs
the database immutable (`-i`) with the same settings as `computekb serve`.
The plugins import `etl`, which is not on PyPI: the package is copied in and
put on PYTHONPATH, and every runtime dependency of the project is installed.
An image built from the folder is stateless; run as many replicas as needed.
"""

import re
import secrets
import shlex
import shutil
import tomllib
from pathlib import Path

from datasette.utils import make_dockerfile

from .build import inspect_path
from .metadata import DATABASE_FILE
from .paths import PLUGINS_DIR, ROOT, STATIC_DIR, STATIC_MOUNT, TEMPLATES_DIR
from .serve import SETTINGS, release_snapshot, write_metadata
from .site import DEFAULT_SITE_URL

INSPECT_FILE = "inspect-data.json"  # the name make_dockerfile's command reads
MARKER = ".computekb-publish"       # marks a folder this command may replace
COPIED = {"plugins": PLUGINS_DIR, "templates": TEMPLATES_DIR, STATIC_MOUNT: STATIC_DIR, "etl": ROOT / "etl"}
NOT_COPIED = shutil.ignore_patterns("__pycache__", "*.pyc")


# Needed by `computekb serve` only. The image runs `datasette serve`, whose uvicorn
# picks httptools whenever it is installed, and then reads a request header of any
# length: `computekb serve` bounds it (etl/serve.py), `datasette serve` cannot, so
# the image keeps h11, which bounds a request head at 16 KB.
SERVE_ONLY = {"httptools"}


def requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower()


def requirements():
    """The project's runtime dependencies, as pyproject.toml pins them, but those of `computekb serve` only."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [r for r in project["dependencies"] if requirement_name(r) not in SERVE_ONLY]


def setting_options(settings):
    options = []
    for name, value in settings.items():
        options += ["--setting", name, str(value).lower() if isinstance(value, bool) else str(value)]
    return " ".join(options)


def fresh_folder(out):
    """Empty `out`, refusing a folder that this command did not make."""
    out = Path(out)
    if out.exists():
        if any(out.iterdir()) and not (out / MARKER).exists():
            raise FileExistsError(f"{out} exists and was not made by `computekb publish`; choose another folder")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("Made by `computekb publish`; replaced by the next run.\n")
    return out


def prepare(db_path, out, cache_ttl, site_url=DEFAULT_SITE_URL):
    """Write the deployment folder `out` for `db_path`; return the Dockerfile's path.

    The database and its inspect file are copied as one release (a build
    finishing meanwhile cannot pair one with the other)."""
    out = fresh_folder(out)
    with release_snapshot(db_path) as snapshot:
        shutil.copyfile(snapshot, out / DATABASE_FILE)
        shutil.copyfile(inspect_path(snapshot), out / INSPECT_FILE)
    metadata = write_metadata(out / DATABASE_FILE, site_url)
    for name, source in COPIED.items():
        shutil.copytree(source, out / name, ignore=NOT_COPIED)
    dockerfile = make_dockerfile(
        files=[DATABASE_FILE], metadata_file=metadata.name,
        extra_options=setting_options({**SETTINGS, "default_cache_ttl": cache_ttl}),
        branch=None, template_dir="templates", plugins_dir="plugins", static=[(STATIC_MOUNT, STATIC_MOUNT)],
        install=[shlex.quote(r) for r in requirements()], spatialite=False, version_note=None,
        # As `datasette package` does: one random secret per image, shared by its replicas.
        secret=secrets.token_hex(32), environment_variables={"PYTHONPATH": "/app"},
    )
    path = out / "Dockerfile"
    path.write_text(dockerfile + "\n")
    return path
