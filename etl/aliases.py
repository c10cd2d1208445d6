"""Outside names of accelerators, resolved through the one alias table.

Importers of other datasets (Epoch AI, cloud catalogs, MLPerf) call `resolve`
with the names they meet: a name with an alias row gives its accelerator (or
None when the row says it means none), a name without one is `Unmapped` and
must be listed by the importer or the report, never dropped silently.
"""

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import yaml

ALIASES_DIR = "aliases"


class Alias(NamedTuple):
    dataset: str
    name: str
    accelerator: str | None


class Resolution(NamedTuple):
    mapped: dict      # {name: accelerator slug}
    none: list        # names whose alias row says they mean no accelerator
    unmapped: list    # names with no alias row


def aliases(data_dir: Path) -> list[Alias]:
    """Every alias row of the data folder's `aliases/` files."""
    rows = []
    for path in sorted((Path(data_dir) / ALIASES_DIR).glob("*.yml")):
        for record in yaml.safe_load(path.read_text(encoding="utf-8")).get("accelerator_aliases") or []:
            rows.append(Alias(record["dataset"], str(record["name"]), record.get("accelerator")))
    return rows


def resolve(data_dir: Path, dataset: str, names: Iterable[str]) -> Resolution:
    """Sort the names a dataset uses into mapped, meaning none, and unmapped."""
    table = {a.name: a.accelerator for a in aliases(data_dir) if a.dataset == dataset}
    mapped, none, unmapped = {}, [], []
    for name in sorted(set(names)):
        if name not in table:
            unmapped.append(name)
        elif table[name] is None:
            none.append(name)
        else:
            mapped[name] = table[name]
    return Resolution(mapped, none, unmapped)
