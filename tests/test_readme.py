"""The README's first two commands, the ones a new user runs on a fresh Debian 12 machine,
read as CI reads them (`.ci/readme-command`, which `.ci/run` executes)."""

import subprocess
import tomllib

import pytest

from computekb.cli import cli
from serving.paths import ROOT


def readme_command(number):
    """The command of the README's numbered line, extracted as CI extracts it."""
    answer = subprocess.run([str(ROOT / ".ci" / "readme-command"), str(number)], capture_output=True, text=True,
                            check=True)
    return answer.stdout.strip()


def steps(command):
    return [step.strip() for step in command.split("&&")]


@pytest.mark.parametrize("number", [1, 2])
def test_a_virtual_environment_comes_before_pip(number):
    """Debian 12's Python refuses `pip install` outside a virtual environment (PEP 668)."""
    command = steps(readme_command(number))
    first_pip = next(i for i, step in enumerate(command) if step.startswith("pip install"))
    assert command[:first_pip][-2:] == ["python3 -m venv .venv", ". .venv/bin/activate"]
    assert any(step.startswith("apt-get install -y python3-venv") for step in command[:first_pip])
    assert command[0] == "apt-get update"  # a fresh machine's package lists are empty


def test_the_site_command_installs_the_project_and_serves():
    command = steps(readme_command(1))
    assert command[-2:] == ["pip install -e .", "computekb serve"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["computekb"] == "computekb.cli:cli"
    assert "serve" in cli.commands


def test_the_test_command_installs_chromium_and_the_test_extra_then_lints_and_tests():
    command = steps(readme_command(2))
    assert command[1] == "apt-get install -y python3-venv chromium"  # the browser tests drive /usr/bin/chromium
    assert command[-3:] == ["pip install -e '.[test]'", "ruff check .", "pytest"]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"pytest>=8", "ruff>=0.5", "playwright>=1.45"} <= set(extras["test"])


def test_ci_runs_the_readme_test_command():
    assert 'bash -euo pipefail -c "$(.ci/readme-command 2)"' in (ROOT / ".ci" / "run").read_text()


def test_a_missing_line_is_an_error_not_an_empty_command():
    answer = subprocess.run([str(ROOT / ".ci" / "readme-command"), "9"], capture_output=True, text=True)
    assert answer.returncode == 1 and "README.md has no line '9. '" in answer.stderr
