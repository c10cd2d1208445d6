"""One home per definition: the database's name is written once, as `serving.metadata.DATABASE`.

Code imports that constant; templates use the `kb_database` variable every
template is given (plugins/site.py). Spelled out anywhere else, a rename of the
database leaves a page linking to a database that is not there, and no other
test says which. Not checked: metadata.yml, where Datasette's configuration
format keys settings and dashboards by the database's name, and the file names
of Datasette's per-table template overrides (`row-computekb-accelerators.html`).
"""

import ast
import re
from pathlib import Path
from typing import NamedTuple

from serving.metadata import DATABASE
from serving.paths import ROOT

CODE_DIRS = ("computekb", "domain", "etl", "serving", "plugins")
TEMPLATE_DIRS = ("templates", "static")
HOME = ("serving/metadata.py", "DATABASE")
# Literals that spell the same word but name something else: the plugin's key in the
# metadata, the installed package, the command, and the module the image runs (`python -m`).
OTHER_NAMES = {("serving/site.py", "PLUGIN"), ("computekb/cli.py", "package_name"),
               ("computekb/__main__.py", "prog_name"), ("serving/publish.py", None)}
JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.DOTALL)


class Spelling(NamedTuple):
    path: str
    line: int
    holder: str | None   # the name assigned or the keyword given the literal, if any


def names_the_database(text: str) -> bool:
    """The database's name as a value (`"computekb"`), its file (`computekb.db`) or the first part of a path
    (`/computekb/...`, `/computekb.json`); not a name made of it (the logger `computekb.guard`)."""
    return text == DATABASE or re.search(rf"(^|/){DATABASE}(/|\?|$|\.(db|json|csv)\b)", text) is not None


def literal_holders(tree: ast.AST) -> dict[int, str]:
    """id() of each string literal assigned to a name or passed as a keyword -> that name."""
    holders = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            holders[id(node.value)] = node.targets[0].id
        elif isinstance(node, ast.keyword) and node.arg:
            holders[id(node.value)] = node.arg
    return holders


def docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def code_spellings(root: Path, relative: str) -> list[Spelling]:
    """String literals of one Python file that name the database (docstrings, which explain, aside)."""
    tree = ast.parse((root / relative).read_text(encoding="utf-8"))
    holders, skip = literal_holders(tree), docstrings(tree)
    return [Spelling(relative, node.lineno, holders.get(id(node))) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
            and names_the_database(node.value)]


def redefinitions(root: Path, relative: str) -> list[Spelling]:
    """Assignments to a name `DATABASE`, whatever the value."""
    tree = ast.parse((root / relative).read_text(encoding="utf-8"))
    return [Spelling(relative, node.lineno, "DATABASE") for node in ast.walk(tree)
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            and any(isinstance(t, ast.Name) and t.id == "DATABASE"
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]


def template_spellings(root: Path, relative: str) -> list[Spelling]:
    """Places a template or script spells the database's name, outside Jinja comments."""
    text = JINJA_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), (root / relative).read_text(encoding="utf-8"))
    return [Spelling(relative, number, None) for number, line in enumerate(text.splitlines(), 1)
            if re.search(rf"\b{DATABASE}\b", line)]


def files(root: Path, dirs, suffixes) -> list[str]:
    return sorted(str(p.relative_to(root)) for d in dirs if (root / d).is_dir()
                  for p in (root / d).rglob("*") if p.suffix in suffixes)


def misplaced(root: Path) -> list[Spelling]:
    """Every place under `root` that spells the database's name or defines DATABASE outside its home."""
    found = []
    for relative in files(root, CODE_DIRS, {".py"}):
        found += [s for s in code_spellings(root, relative) + redefinitions(root, relative)
                  if (s.path, s.holder) != HOME and (s.path, s.holder) not in OTHER_NAMES]
    for relative in files(root, TEMPLATE_DIRS, {".html", ".js"}):
        found += template_spellings(root, relative)
    return sorted(set(found))


def test_the_database_name_has_one_home():
    assert misplaced(ROOT) == []


def test_a_template_or_plugin_that_spells_the_name_is_found(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "page.html").write_text(
        "{# computekb in a comment is fine #}\n"
        "<a href=\"{{ urls.row(kb_database, 'accelerators', slug) }}\">ok</a>\n"
        "<a href=\"{{ urls.row('computekb', 'accelerators', slug) }}\">hard-coded</a>\n"
        '<a href="/computekb/articles">hard-coded path</a>\n')
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "p.py").write_text(
        '"""Pages of /computekb/accelerators (a docstring explains)."""\n'
        "from serving.metadata import DATABASE\n"
        'DATABASE = "computekb"\n'
        'URL = f"/computekb/{DATABASE}"\n'
        'OTHER = "computekb-accelerators.csv"\n')
    assert misplaced(tmp_path) == [
        Spelling("plugins/p.py", 3, "DATABASE"),
        Spelling("plugins/p.py", 4, None),
        Spelling("templates/page.html", 3, None),
        Spelling("templates/page.html", 4, None),
    ]
