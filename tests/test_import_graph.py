"""The import graph between the project's packages (README, "Layout").

Every module is read as a syntax tree and each import it makes, at the top or
inside a function, is held against the rules below: the ETL and the domain know
nothing of Datasette or of the site, the site knows nothing of the ETL, and a
plugin imports only the domain and the serving package, never an ETL internal.
The command (`computekb/`) is the one place that joins the ETL and the site.
"""

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("computekb", "domain", "etl", "serving", "plugins")
# {package: the project's packages its modules may import}; the command may import every one.
MAY_IMPORT = {
    "domain": {"domain"},
    "etl": {"etl", "domain"},
    "serving": {"serving", "domain"},
    "plugins": {"domain", "serving"},
    "computekb": {"computekb", "domain", "etl", "serving"},
}
# Packages that serve: the ETL and the domain must build a database without any of them.
SERVING_LIBRARIES = ("datasette", "uvicorn")
NO_SERVING_LIBRARIES = ("domain", "etl")


class Import(NamedTuple):
    module: str  # the whole dotted name imported, relative imports resolved
    line: int


def package_of(path: Path) -> list[str]:
    """The package that holds the module at `path` (relative to ROOT), as its dotted parts."""
    return list(path.parts[:-1])


def imports(source: str, path: Path) -> list[Import]:
    """Every module that `source` (the module at `path`) imports, by its whole dotted name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            package = package_of(path)
            base = package[:len(package) - node.level + 1] if node.level else []
            if node.module:
                found.append(Import(".".join([*base, node.module]), node.lineno))
            else:  # `from . import name`: each name is a module of the package
                found += [Import(".".join([*base, alias.name]), node.lineno) for alias in node.names]
    return found


def violations(source: str, path: Path) -> list[str]:
    """What the module at `path` imports that the rules forbid, as `path:line: module`."""
    package = path.parts[0]
    wrong = []
    for imported in imports(source, path):
        top = imported.module.split(".")[0]
        if top in MAY_IMPORT and top not in MAY_IMPORT[package]:
            wrong.append(f"{path}:{imported.line}: {imported.module} ({package} may import {sorted(MAY_IMPORT[package])})")
        if package in NO_SERVING_LIBRARIES and top.split("_")[0] in SERVING_LIBRARIES:
            wrong.append(f"{path}:{imported.line}: {imported.module} (the {package} package serves nothing)")
    return wrong


MODULES = sorted(p.relative_to(ROOT) for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=str)
def test_each_module_imports_only_what_its_package_may(path):
    assert violations((ROOT / path).read_text(encoding="utf-8"), path) == []


def test_every_package_is_read():
    assert {path.parts[0] for path in MODULES} == set(PACKAGES)


@pytest.mark.parametrize(("path", "source", "expected"), [
    ("etl/read.py", "from serving.site import site_url", ["etl/read.py:1: serving.site"]),
    ("etl/read.py", "def f():\n    from datasette.inspect import inspect_hash", ["etl/read.py:2: datasette.inspect"]),
    ("domain/schema.py", "import datasette_dashboards", ["domain/schema.py:1: datasette_dashboards"]),
    ("plugins/cite.py", "from etl.load import DENSE_PRECISIONS", ["plugins/cite.py:1: etl.load"]),
    ("plugins/cite.py", "from etl import transform", ["plugins/cite.py:1: etl"]),
    ("serving/serve.py", "from ..etl import build", ["serving/serve.py:1: etl"]),
    ("serving/serve.py", "from .headers import SECURITY_HEADERS\nfrom domain.release import built_hash", []),
    ("etl/build.py", "from . import transform\nfrom domain import schema", []),
])
def test_a_forbidden_import_is_found(path, source, expected):
    found = [line.split(" (")[0] for line in violations(source, Path(path))]
    assert found == expected
