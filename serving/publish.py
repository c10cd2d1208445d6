"""`computekb publish`: a deployment folder whose image runs `computekb serve`.

The folder holds the database and its inspect file, one release, and the files
the server reads, at the places they have in the project (metadata.yml, the
plugins, templates, static files, docs/DATA.md) beside the project's packages,
which are not on PyPI: copied in and put on PYTHONPATH, they find every one of them
from their own place (serving/paths.py), as they do in the project. Every runtime dependency
is installed with its pins, httptools included.

The Dockerfile is the one Datasette's `make_dockerfile` writes (base image,
dependencies, a secret shared by the image's replicas, the port in `$PORT`),
with its command replaced: the image runs `computekb serve --no-rebuild`, the
server of serving/serve.py, so it answers as `computekb serve` does, with the
security headers on uvicorn's own 400s too and the request head bounded.
An image built from the folder is stateless; run as many replicas as needed.
"""

import secrets
import shlex
import shutil
import tomllib
from pathlib import Path

from datasette.utils import make_dockerfile

from .inspect_file import inspect_path
from .metadata import DATABASE_FILE
from .paths import DATA_DOC, METADATA_YML, PLUGINS_DIR, ROOT, STATIC_DIR, TEMPLATES_DIR
from .serve import release_snapshot
from .site import DEFAULT_SITE_URL

MARKER = ".computekb-publish"       # marks a folder this command may replace
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGES = [ROOT / name for name in PYPROJECT["tool"]["setuptools"]["packages"]]
SHIPPED = [*PACKAGES, PLUGINS_DIR, TEMPLATES_DIR, STATIC_DIR, METADATA_YML, DATA_DOC]
NOT_COPIED = shutil.ignore_patterns("__pycache__", "*.pyc")
APP = "/app"                        # where make_dockerfile's image copies the folder, its working directory


def requirements():
    """The project's runtime dependencies, as pyproject.toml pins them."""
    return PYPROJECT["project"]["dependencies"]


def serve_command(cache_ttl, site_url):
    """The image's command: `computekb serve` of the folder's database, on every interface, at `$PORT`.

    `exec`, so that the server, not a shell, receives the container's stop signal."""
    options = ["--no-rebuild", "--db", DATABASE_FILE, "--host", "0.0.0.0", "--site-url", site_url, "--cache-ttl", str(cache_ttl),
               "--cors"]  # as `datasette package`'s images: web pages of other sites may read the JSON API
    return " ".join(["exec", "python", "-m", "computekb", "serve", *map(shlex.quote, options), "--port", "$PORT"])


def with_command(dockerfile, command):
    """`dockerfile` with its last line, its `CMD`, replaced by `CMD command` (shell form, so `$PORT` is read)."""
    head, _, last = dockerfile.rpartition("\n")
    if not last.startswith("CMD "):
        raise RuntimeError(f"make_dockerfile's last line is not its CMD: {last!r}")
    return f"{head}\nCMD {command}"


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


def ship(out):
    """Copy the files the server reads to their places in the project, relative to `out`."""
    for source in SHIPPED:
        target = out / source.relative_to(ROOT)
        if source.is_dir():
            shutil.copytree(source, target, ignore=NOT_COPIED)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def prepare(db_path, out, cache_ttl, site_url=DEFAULT_SITE_URL):
    """Write the deployment folder `out` for `db_path`; return the Dockerfile's path.

    The database and its inspect file are copied as one release (a build
    finishing meanwhile cannot pair one with the other)."""
    out = fresh_folder(out)
    with release_snapshot(db_path) as snapshot:
        shutil.copyfile(snapshot, out / DATABASE_FILE)
        shutil.copyfile(inspect_path(snapshot), inspect_path(out / DATABASE_FILE))
    ship(out)
    # Only what make_dockerfile writes outside its command is asked of it; its
    # `datasette inspect` step writes a file the server does not read.
    dockerfile = make_dockerfile(
        files=[DATABASE_FILE], metadata_file=None, extra_options=None, branch=None, template_dir=None,
        plugins_dir=None, static=None, install=[shlex.quote(r) for r in requirements()], spatialite=False,
        version_note=None,
        # As `datasette package` does: one random secret per image, shared by its replicas.
        secret=secrets.token_hex(32), environment_variables={"PYTHONPATH": APP},
    )
    path = out / "Dockerfile"
    path.write_text(with_command(dockerfile, serve_command(cache_ttl, site_url)) + "\n")
    return path
