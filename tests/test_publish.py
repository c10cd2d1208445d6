"""`computekb publish`: the deployment folder and the Dockerfile written for it.

No container engine is available here, so the tests read the Dockerfile, check
that the folder holds what its command reads, and run that very command
(outside a container, from the folder, with the Dockerfile's environment), as
the image runs it.
"""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tomllib

import httpx
import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from datasette.inspect import inspect_hash

from computekb.cli import cli, serve
from domain.release import table_counts
from serving.inspect_file import inspect_path
from serving.paths import DATA_DOC, METADATA_YML, PLUGINS_DIR, ROOT, STATIC_DIR, TEMPLATES_DIR
from serving.publish import prepare
from serving.serve import SETTINGS, free_port, wait_until_up

from conftest import CLOSE, SERVERS_OWN, assert_security_headers_once, raw_request

SITE_URL = "https://kb.example.org"
CACHE_TTL = 600


@pytest.fixture(scope="module")
def dist(db_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("deploy") / "dist"
    prepare(db_path, out, cache_ttl=CACHE_TTL, site_url=SITE_URL)
    return out


def dockerfile_lines(dist):
    return (dist / "Dockerfile").read_text().splitlines()


def instruction(dist, name):
    """What follows `name` on each line of the Dockerfile that holds that instruction."""
    return [line.removeprefix(name + " ") for line in dockerfile_lines(dist) if line.startswith(name + " ")]


def image_command(dist):
    """The Dockerfile's CMD, as the shell that runs it reads it; Docker runs the last one."""
    return instruction(dist, "CMD")[-1]


def option_values(args, option):
    return [args[i + 1] for i, arg in enumerate(args) if arg == option]


def test_the_image_runs_computekb_serve_of_the_folders_database(dist):
    args = shlex.split(image_command(dist))
    assert args[:5] == ["exec", "python", "-m", "computekb", "serve"], args
    options = serve.make_context("serve", [a if a != "$PORT" else "8001" for a in args[5:]]).params
    assert options["no_rebuild"] is True
    assert (options["host"], option_values(args, "--port")) == ("0.0.0.0", ["$PORT"])
    assert (options["site_url"], options["cache_ttl"]) == (SITE_URL, CACHE_TTL)
    assert (dist / options["db_path"]).exists()
    assert len(instruction(dist, "CMD")) == 1, "one command: no `datasette serve` left behind"


def test_database_and_inspect_file_are_one_release(dist, db_path):
    assert (dist / db_path.name).read_bytes() == db_path.read_bytes()
    inspected = json.loads(inspect_path(dist / db_path.name).read_text())
    assert inspected["computekb"]["hash"] == inspect_hash(db_path)
    assert {name: table["count"] for name, table in inspected["computekb"]["tables"].items()} == table_counts(db_path)


@pytest.mark.parametrize("source", [PLUGINS_DIR, TEMPLATES_DIR, STATIC_DIR, METADATA_YML, DATA_DOC,
                                    *(ROOT / package for package in ("computekb", "domain", "etl", "serving"))],
                         ids=lambda p: p.name)
def test_the_files_the_server_reads_are_the_projects_at_their_places(dist, source):
    files = [source] if source.is_file() else [p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert files
    for path in files:
        assert (dist / path.relative_to(ROOT)).read_bytes() == path.read_bytes(), path


def test_every_dependency_is_installed_with_its_pins(dist):
    [install] = [line for line in instruction(dist, "RUN") if line.startswith("pip install")]
    installed = shlex.split(install)
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert [d for d in dependencies if d.startswith("datasette-")], "the project declares its Datasette plugins as dependencies"
    assert [d for d in dependencies if d.startswith("httptools")], "the server's parser is a dependency"
    for requirement in dependencies:
        assert requirement in installed, requirement


def test_refuses_to_replace_a_folder_it_did_not_make(db_path, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        prepare(db_path, tmp_path, cache_ttl=60)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_publish_command_replaces_its_own_folder(db_path, tmp_path):
    out = tmp_path / "dist"
    runner = CliRunner()
    for _ in range(2):
        result = runner.invoke(cli, ["publish", "--db", str(db_path), "--data", str(tmp_path / "no-data"), "--out", str(out)])
        assert result.exit_code == 0, result.output
    assert "docker build" in result.output
    assert (out / "Dockerfile").exists() and (out / "computekb.db").exists()


def test_serve_no_rebuild_never_builds(tmp_path):
    """Without a database, `--no-rebuild` is an error, not a build (of a data file
    that does not parse here, so that a build attempt ends at once)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "broken.yml").write_text("accelerators: [\n")
    db = tmp_path / "computekb.db"
    result = CliRunner().invoke(cli, ["serve", "--no-rebuild", "--db", str(db), "--data", str(tmp_path / "data"),
                                      "--port", str(free_port())])
    assert result.exit_code != 0 and "does not exist" in result.output, result.output
    assert "broken.yml" not in result.output and not db.exists()


def dockerfile_environment(dist):
    """The variables the Dockerfile sets, its working directory read as the folder."""
    [workdir] = instruction(dist, "WORKDIR")
    pairs = [shlex.split(line) for line in instruction(dist, "ENV")]
    return {name: value.replace(workdir, str(dist)) for name, value in pairs}


@pytest.fixture(scope="module")
def image(dist):
    """The image's command run as the container runs it: by a shell, from the folder,
    with the Dockerfile's environment and `$PORT` set to a free port; yields its URL."""
    port = free_port("0.0.0.0")
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])  # the `python` that has the dependencies
    env = {"PATH": path, **dockerfile_environment(dist), "PORT": str(port)}
    log = dist.with_name("image.log")
    with log.open("wb") as output:
        process = subprocess.Popen(["/bin/sh", "-c", image_command(dist)], cwd=dist, env=env,
                                   stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_up(url, process):
            pytest.fail("the image's command did not start: " + log.read_text(errors="replace"))
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)


def test_the_image_loads_every_plugin(image):
    names = {p["name"] for p in httpx.get(image + "/-/plugins.json", timeout=10).json()}
    for plugin in PLUGINS_DIR.glob("*.py"):
        if plugin.name != "__init__.py" and re.search(r"@hookimpl", plugin.read_text()):
            assert plugin.name in names


def test_the_image_answers_with_each_security_header_once_and_its_cache_ttl(image):
    head = raw_request(image, b"GET /computekb/accelerators HTTP/1.1\r\nHost: x\r\n" + CLOSE).partition("\r\n\r\n")[0]
    assert head.startswith("HTTP/1.1 200"), head
    assert_security_headers_once(head)
    response = httpx.get(image + "/computekb/accelerators.json?_shape=array", timeout=10)
    assert response.status_code == 200 and response.json()
    assert f"max-age={CACHE_TTL}" in response.headers["cache-control"]


@pytest.mark.parametrize("name", SERVERS_OWN)
def test_the_images_own_400s_carry_the_security_headers(image, name):
    head = raw_request(image, SERVERS_OWN[name]).partition("\r\n\r\n")[0]
    assert head.startswith("HTTP/1.1 400") and "text/plain" in head, head
    assert_security_headers_once(head)


def test_the_image_lets_web_pages_of_other_sites_read_its_json(image):
    """As `datasette package`'s images do: a notebook or a page elsewhere may fetch the data."""
    response = httpx.get(image + "/computekb/accelerators.json?_shape=array", headers={"origin": "https://other.example"},
                         timeout=10)
    assert response.headers.get("access-control-allow-origin") == "*"


def test_the_image_has_the_settings_of_computekb_serve_and_its_cache_ttl(image):
    settings = httpx.get(image + "/-/settings.json", timeout=10).json()
    assert {name: settings[name] for name in SETTINGS} == SETTINGS
    assert settings["default_cache_ttl"] == CACHE_TTL


def test_the_image_builds_links_on_the_site_url(image):
    feed = httpx.get(image + "/computekb/articles-feed.atom", headers={"host": "evil.example"}, timeout=10)
    assert f"{SITE_URL}/computekb/articles-feed.atom" in feed.text and "evil" not in feed.text


@pytest.mark.parametrize("path, shows", [("/assets/reader.css", "font"), ("/-/methodology", "Source tiers"),
                                         ("/-/accelerators", "H100")])
def test_the_image_serves_the_pages_that_read_the_projects_files(image, path, shows):
    response = httpx.get(image + path, timeout=10)
    assert response.status_code == 200 and shows in response.text


def test_the_images_replicas_share_its_secret(image, dist):
    """A cookie signed with the Dockerfile's secret is read: any replica accepts what another signed."""
    secret = dockerfile_environment(dist)["DATASETTE_SECRET"]
    cookie = Datasette(memory=True, secret=secret).sign({"a": {"id": "reader"}}, "actor")
    actor = httpx.get(image + "/-/actor.json", cookies={"ds_actor": cookie}, timeout=10).json()
    assert actor["actor"] == {"id": "reader"}  # 1.0 adds "ok": true
