"""Where the project's files are: one home for the paths every command and the server use.

Kept apart from `serve.py` so that `validate` and `build` know their defaults
without importing Datasette's application and uvicorn, which would slow every
command down.
"""

from pathlib import Path

from .metadata import DATABASE_FILE

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "data"
DEFAULT_DB = ROOT / DATABASE_FILE
METADATA_YML = ROOT / "metadata.yml"
PLUGINS_DIR = ROOT / "plugins"
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"
STATIC_MOUNT = "assets"             # served at /assets/
DATA_DOC = ROOT / "docs" / "DATA.md"  # its methodology section is also a page (plugins/methodology.py)
SIZING_DOC = ROOT / "docs" / "LLM_MATH.md"  # the sizing formulas, also a page (plugins/methodology.py)
