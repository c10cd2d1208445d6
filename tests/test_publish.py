"""`computekb publish`: the deployment folder and the Dockerfile Datasette writes for it.

No container engine is available here, so the tests read the Dockerfile, check
that everything its command names is in the folder, and run that very command
(outside a container) against the folder.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib

import httpx
import pytest
from click.testing import CliRunner

from etl.cli import cli
from etl.metadata import full_metadata
from etl.paths import METADATA_YML, PLUGINS_DIR, ROOT, TEMPLATES_DIR
from etl.publish import prepare
from etl.serve import SETTINGS, datasette_args, free_port, wait_until_up
from etl.site import DEFAULT_SITE_URL, site_metadata


@pytest.fixture(scope="module")
def dist(db_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("deploy") / "dist"
    prepare(db_path, out, cache_ttl=600)
    return out


def dockerfile_lines(dist):
    return (dist / "Dockerfile").read_text().splitlines()


def serve_command(dist):
    """The arguments of the Dockerfile's CMD."""
    [cmd] = [line for line in dockerfile_lines(dist) if line.startswith("CMD ")]
    return shlex.split(cmd.removeprefix("CMD "))


def option_values(args, option):
    return [args[i + 1] for i, arg in enumerate(args) if arg == option]


def test_database_is_served_immutable_with_its_inspect_file(dist, db_path):
    args = serve_command(dist)
    assert option_values(args, "-i") == ["computekb.db"]
    assert (dist / "computekb.db").read_bytes() == db_path.read_bytes()
    [inspect_file] = option_values(args, "--inspect-file")
    inspected = json.loads((dist / inspect_file).read_text())
    assert inspected == json.loads(db_path.with_suffix(".inspect.json").read_text())
    assert "computekb" in inspected


def test_every_path_the_command_names_is_in_the_folder(dist):
    args = serve_command(dist)
    paths = [option_values(args, o)[0] for o in ("--metadata", "--template-dir", "--plugins-dir")]
    paths += [mount.split(":")[1] for mount in option_values(args, "--static")]
    for path in paths:
        assert (dist / path).exists(), path


def test_metadata_plugins_and_templates_are_the_projects(dist):
    args = serve_command(dist)
    [metadata] = option_values(args, "--metadata")
    assert json.loads((dist / metadata).read_text()) == site_metadata(full_metadata(METADATA_YML), DEFAULT_SITE_URL)
    for source, name in ((PLUGINS_DIR, "plugins"), (TEMPLATES_DIR, "templates")):
        for path in source.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                assert (dist / name / path.relative_to(source)).read_bytes() == path.read_bytes(), path


def test_every_dependency_is_installed_with_its_pins(dist):
    [install] = [line for line in dockerfile_lines(dist) if line.startswith("RUN pip install")]
    installed = shlex.split(install)
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    plugins = [d for d in dependencies if d.startswith("datasette-")]
    assert plugins, "the project declares its Datasette plugins as dependencies"
    for requirement in dependencies:
        if not requirement.startswith("httptools"):
            assert requirement in installed, requirement


def test_the_image_keeps_h11(dist):
    """`datasette serve` would pick httptools if installed and read a header of any length (etl/publish.py)."""
    [install] = [line for line in dockerfile_lines(dist) if line.startswith("RUN pip install")]
    assert "httptools" not in install


def test_settings_are_those_of_computekb_serve_plus_the_cache_ttl(dist):
    args = serve_command(dist)
    pairs = {args[i + 1]: args[i + 2] for i, arg in enumerate(args) if arg == "--setting"}
    assert pairs.pop("default_cache_ttl") == "600"
    assert pairs == {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in SETTINGS.items()}


def test_the_image_runs_every_option_that_serve_uses(dist, db_path):
    """If `computekb serve` gains an option, the deployment must follow."""
    long_names = {"-m": "--metadata"}
    served = {long_names.get(a, a) for a in datasette_args(db_path, "127.0.0.1", 8001) if a.startswith("-")}
    assert served - {"--host", "--port"} <= set(serve_command(dist))


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


def test_the_dockerfile_command_serves_the_folder(dist):
    """Run the CMD as the container would (from the folder, PYTHONPATH=/app), on loopback."""
    port = free_port()
    args = [a for a in serve_command(dist) if a != "$PORT"]
    args[args.index("0.0.0.0")] = "127.0.0.1"
    env = {**os.environ, "PYTHONPATH": str(dist), "DATASETTE_SECRET": "test"}
    datasette = [sys.executable, "-m", "datasette"] + args[1:] + [str(port)]
    process = subprocess.Popen(datasette, cwd=dist, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        if not wait_until_up(url, process):
            pytest.fail("datasette did not start: " + process.stdout.read().decode())
        plugins = httpx.get(url + "/-/plugins.json", timeout=10).json()
        names = {p["name"] for p in plugins}
        for plugin in PLUGINS_DIR.glob("*.py"):
            if plugin.name != "__init__.py" and re.search(r"@hookimpl", plugin.read_text()):
                assert plugin.name in names
        response = httpx.get(url + "/computekb/accelerators.json?_shape=array", timeout=10)
        assert response.status_code == 200 and response.json()
        assert "max-age=600" in response.headers["cache-control"]
    finally:
        process.terminate()
        process.wait(10)
