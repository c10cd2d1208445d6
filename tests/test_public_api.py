"""Datasette is used through its public extension points only.

Every module of the project's packages and plugins/ is read as a syntax tree, and none may
- read or write a private attribute that Datasette defines (`datasette._metadata_local`),
- replace a method of a Datasette object (`database.execute = ...`, `setattr(database, name, ...)`),
- keep state of its own on an object Datasette hands it (`datasette._release = ...`: such a name may
  one day be Datasette's),
- import from `datasette.vendored`, or import a value that comes from it
  (`from datasette.views.base import ureg`, the vendored pint's registry).
Private and method names are read from the installed Datasette's own source,
so the check follows the Datasette it runs with.
"""

import ast
import importlib
from functools import cache
from pathlib import Path

import datasette
import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("computekb", "domain", "etl", "serving", "plugins")
MODULES = sorted(p.relative_to(ROOT).as_posix() for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))
# Modules rewritten elsewhere at this time; strict, so each must come off this list once it passes.
BEING_REWRITTEN = {}
OWN = {"self", "cls"}  # a class may keep private attributes of its own
VENDORED = "datasette.vendored"
# The Datasette objects a plugin is handed, whose methods it must not replace.
HANDED_CLASSES = {"Datasette", "Database", "Request", "Response", "DatasetteClient", "Urls", "Facet", "Filters"}
# The names plugin hooks give those objects (a hook's arguments are named by Datasette).
HANDED_NAMES = {"datasette", "database", "db", "request", "response"}


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


@cache
def datasette_names() -> tuple[frozenset, frozenset]:
    """(private attribute and function names, method names) defined in Datasette's source.

    Private names include its vendored libraries' (pint's registry fields);
    method names are those of the classes whose objects plugins are handed."""
    private, methods = set(), set()
    package = Path(datasette.__file__).parent
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        vendored = path.relative_to(package).parts[0] == "vendored"
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and is_private(node.name):
                private.add(node.name)
            elif isinstance(node, ast.Attribute) and is_private(node.attr):
                private.add(node.attr)
            if isinstance(node, ast.ClassDef) and not vendored and node.name in HANDED_CLASSES:
                methods.update(item.name for item in node.body
                               if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not is_private(item.name))
    return frozenset(private), frozenset(methods)


def receiver(node: ast.Attribute) -> str | None:
    return node.value.id if isinstance(node.value, ast.Name) else None


def comes_from_vendored(module: str, name: str) -> bool:
    """Whether `from module import name` gives a value defined in datasette.vendored."""
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    defined_in = getattr(value, "__module__", None) or type(value).__module__
    return str(defined_in).startswith(VENDORED) or type(value).__module__.startswith(VENDORED)


def violations(source: str) -> list[str]:
    """What in `source` goes past Datasette's public extension points, as `line: what` texts."""
    private, methods = datasette_names()
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr in private and receiver(node) not in OWN:
            found.append(f"{line}: private attribute {node.attr}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in methods and receiver(target) not in OWN:
                    found.append(f"{line}: replaces method {target.attr}")
                elif isinstance(target, ast.Attribute) and receiver(target) in HANDED_NAMES and target.attr not in private:
                    found.append(f"{line}: stores {target.attr} on {receiver(target)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            found.append(f"{line}: setattr")
        elif isinstance(node, ast.Import):
            found += [f"{line}: imports {a.name}" for a in node.names if a.name.startswith(VENDORED)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("datasette"):
            if node.module.startswith(VENDORED):
                found.append(f"{line}: imports from {node.module}")
            else:
                found += [f"{line}: imports {a.name}, from {VENDORED}" for a in node.names
                          if comes_from_vendored(node.module, a.name)]
    return found


@pytest.mark.parametrize("module", [
    pytest.param(m, marks=pytest.mark.xfail(strict=True, reason=BEING_REWRITTEN[m])) if m in BEING_REWRITTEN else m
    for m in MODULES])
def test_no_module_goes_past_datasettes_public_extension_points(module):
    assert violations((ROOT / module).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("source, what", [
    ("datasette._metadata_local = {}", "private attribute _metadata_local"),
    ("x = datasette._table_permission_allows", "private attribute _table_permission_allows"),
    ("prefixes = ureg._prefixes", "private attribute _prefixes"),
    ("datasette.metadata = remembered(datasette.metadata)", "replaces method metadata"),
    ("database.execute_fn = explained", "replaces method execute_fn"),
    ("datasette.refresh_schemas = refresh", "replaces method refresh_schemas"),
    ("setattr(database, name, remembered(getattr(database, name)))", "setattr"),
    ("datasette.kb_release = release", "stores kb_release on datasette"),
    ("from datasette.vendored.pint.util import infer_base_unit", "imports from datasette.vendored.pint.util"),
    ("import datasette.vendored.pint", "imports datasette.vendored.pint"),
    ("from datasette.views.base import ureg", "imports ureg, from datasette.vendored"),
])
def test_each_kind_of_reach_past_the_public_api_is_found(source, what):
    private, methods = datasette_names()
    name = what.split()[-1] if what.startswith(("private", "replaces")) else None
    if name and name not in private | methods or "import ureg" in source and not comes_from_vendored("datasette.views.base", "ureg"):
        pytest.skip(f"the installed Datasette does not define {name or 'ureg'}")
    assert [v.split(": ", 1)[1] for v in violations(source)] == [what]


@pytest.mark.parametrize("source", [
    "self._cache = {}",                                   # a class's own private attribute
    "from datasette.utils.asgi import BadRequest",
    "from datasette.filters import FilterArguments",
    "rows = await datasette.get_database(name).execute(sql)",
    "class Fast(ArrayFacet):\n    async def facet_results(self):\n        return [], []",  # a documented facet class
])
def test_public_uses_are_not_flagged(source):
    assert violations(source) == []
