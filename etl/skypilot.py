"""Import cloud offers from SkyPilot's catalog (skypilot-org/skypilot-catalog).

SkyPilot's maintainers fetch each provider's prices from the provider's own
pricing API into one `vms.csv` per provider and catalog version. This module
reads such files at a commit and writes one YAML data file per provider and
snapshot under data/: the offers with an accelerator, one per instance type and
region, and the source they cite (the provider's price list, read through the
catalog file at its commit).

Files come from one of two places:
- a git directory of the catalog (`from_git`): every provider's file at one
  commit, dated by the commit (`date_basis: observed`);
- a folder of files read one by one (`from_folder`), with a `read.yml` that
  gives each file's catalog path, the commit it was read at, the date it was
  read (`date_basis: read`: the only date known; never a guessed one) and, where
  the file was not read whole, a note saying which rows were.

Catalog accelerator names go through the alias table (dataset `skypilot`):
the most specific of `provider/instance type`, `provider/name` and `name` that
has an alias row decides. Rows whose name has no alias row are not imported and
are returned as unmapped, for the caller to print.
"""

import csv
import io
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import yaml

from .aliases import aliases

DATASET = "skypilot"
CATALOG_REPOSITORY = "skypilot-org/skypilot-catalog"
CATALOG_URL = f"https://github.com/{CATALOG_REPOSITORY}"
OFFERS_DIR = Path("specs") / "cloud_offers" / "skypilot"
MANIFEST = "read.yml"
# SkyPilot states every catalog price in US dollars per hour (its `sky show-gpus` prints them with "$").
CURRENCY = "USD"
# Google's TPU v5e (v5litepod) and v6e slice names count chips: tpu-v6e-8 is 8 chips.
TPU_CHIPS = re.compile(r"^tpu-(?:v5litepod|v6e)-([0-9]+)$")
SLUG_LENGTH = 120


class CatalogFile(NamedTuple):
    """One provider's `vms.csv` at one commit of the catalog."""

    provider: str     # the catalog's folder name, also the provider's slug
    path: str         # path in the catalog repository
    commit: str       # full commit hash
    date: str         # YYYY-MM-DD: the commit's date (observed) or the date read (read)
    date_basis: str   # observed or read
    text: str
    note: str | None = None  # how the file was read, when not whole (from read.yml)


class Offer(NamedTuple):
    """One instance type in one region, as the catalog prices it."""

    instance: str
    name: str         # the catalog's accelerator name
    accelerator: str
    gpu_count: int
    region: str | None
    price: float | None
    spot_price: float | None


class Import(NamedTuple):
    """What one catalog file gives: its offers, and the names it uses that have no alias row."""

    file: CatalogFile
    offers: list
    unmapped: list


def from_git(git_dir: Path, commit: str, version: str) -> list[CatalogFile]:
    """Every provider's vms.csv of catalog `version` (v8...) at `commit` of a git directory."""
    def git(*args):
        return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True,
                              text=True).stdout
    full = git("rev-parse", f"{commit}^{{commit}}").strip()
    date = git("show", "-s", "--format=%cs", full).strip()
    paths = [p for p in git("ls-tree", "-r", "--name-only", full, f"catalogs/{version}/").splitlines()
             if p.endswith("/vms.csv")]
    return [CatalogFile(Path(p).parent.name, p, full, date, "observed", git("show", f"{full}:{p}")) for p in paths]


def from_folder(folder: Path) -> list[CatalogFile]:
    """The files of a folder laid out as the catalog, each at the commit and read date its `read.yml` gives."""
    manifest = yaml.safe_load((folder / MANIFEST).read_text(encoding="utf-8"))
    files = []
    for entry in manifest["files"]:
        path = entry["path"]
        text = (folder / path).read_text(encoding="utf-8")
        files.append(CatalogFile(Path(path).parent.name, path, entry["commit"], str(entry["read"]), "read", text,
                                 entry.get("note")))
    return files


def number(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def chips(name: str, count: float) -> int:
    """Accelerators in one catalog row: TPU slices count their chips, other rows their AcceleratorCount."""
    match = TPU_CHIPS.match(name)
    return int(match.group(1)) if match else int(count)


def alias_table(data_dir: Path) -> dict:
    """{alias name: accelerator slug or None} of the dataset."""
    return {a.name: a.accelerator for a in aliases(data_dir) if a.dataset == DATASET}


def lookup(table: dict, provider: str, instance: str, name: str) -> tuple[bool, str | None]:
    """(found, accelerator) for a catalog row: the most specific alias row decides."""
    for key in (f"{provider}/{instance}", f"{provider}/{name}", name):
        if key in table:
            return True, table[key]
    return False, None


def cheaper(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def read_offers(file: CatalogFile, table: dict) -> Import:
    """The offers of one catalog file, one per (instance type, accelerator count, region): rows that
    differ only by zone or memory size keep their lowest prices."""
    merged, unmapped = {}, set()
    for row in csv.DictReader(io.StringIO(file.text)):
        name = (row.get("AcceleratorName") or "").strip()
        if not name:
            continue
        instance = (row.get("InstanceType") or "").strip() or name  # TPU rows name the slice only
        found, accelerator = lookup(table, file.provider, instance, name)
        if not found:
            unmapped.add(name)
            continue
        price, spot = number(row.get("Price")), number(row.get("SpotPrice"))
        if accelerator is None or (price is None and spot is None):
            continue
        region = (row.get("Region") or "").strip() or None
        count = chips(name, float(row.get("AcceleratorCount") or 1))
        key = (instance, count, region)
        old = merged.get(key)
        merged[key] = Offer(instance, name, accelerator, count, region,
                            cheaper(old and old.price, price), cheaper(old and old.spot_price, spot))
    return Import(file, list(merged.values()), sorted(unmapped))


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def source_slug(file: CatalogFile) -> str:
    return f"skypilot-catalog-{file.provider}-{file.commit[:10]}"


def source_record(file: CatalogFile, provider_name: str) -> dict:
    dated = "dated by the commit" if file.date_basis == "observed" else f"read on {file.date}; the commit's date was not available"
    record = {
        "slug": source_slug(file),
        "url": f"{CATALOG_URL}/blob/{file.commit}/{file.path}",
        "title": None,
        "publisher": provider_name,
        "kind": "listing",
        "tier": "third-party",
        "retrieved": file.date,
        "note": (f"{provider_name}'s prices as SkyPilot's catalog ({CATALOG_REPOSITORY}, {file.path} at commit "
                 f"{file.commit}) holds them, fetched by SkyPilot's maintained fetcher from the provider's pricing "
                 f"API; read through that catalog ({dated}). The file is a CSV with no page title. Prices in US "
                 "dollars per instance-hour as SkyPilot states them; VAT and billing granularity not stated."
                 + (f" {file.note}" if file.note else "")),
    }
    if file.date_basis == "observed":
        record["published"] = file.date
    return {k: v for k, v in record.items() if v is not None}


def offer_record(offer: Offer, file: CatalogFile, slug: str) -> dict:
    record = {
        "slug": slug, "provider": file.provider, "instance": offer.instance, "accelerator": offer.accelerator,
        "gpu_count": offer.gpu_count, "price_per_hour": offer.price, "spot_price_per_hour": offer.spot_price,
        "currency": CURRENCY, "region": offer.region, "observed": file.date, "date_basis": file.date_basis,
        "snapshot": f"{CATALOG_REPOSITORY}@{file.commit[:10]}", "source": source_slug(file),
    }
    if offer.name != offer.instance:
        record["note"] = f"Catalog accelerator name: {offer.name}."
    return {k: v for k, v in record.items() if v is not None}


def offer_records(result: Import) -> list[dict]:
    """The cloud_offers records of one file, with slugs unique within it."""
    records, used = [], set()
    base = f"sky-{result.file.provider}-{result.file.commit[:7]}"
    for offer in sorted(result.offers, key=lambda o: (o.instance, o.gpu_count, o.region or "")):
        slug = "-".join(part for part in (base, slugify(offer.instance), slugify(offer.region or "")) if part)
        slug = slug[:SLUG_LENGTH - 4].rstrip("-")
        candidate, n = slug, 2
        while candidate in used:
            candidate, n = f"{slug}-{n}", n + 1
        used.add(candidate)
        records.append(offer_record(offer, result.file, candidate))
    return records


def output_path(data_dir: Path, file: CatalogFile) -> Path:
    return data_dir / OFFERS_DIR / f"{file.provider}-{file.date}-{file.commit[:10]}.yml"


def write_snapshot(data_dir: Path, result: Import, provider_name: str) -> Path | None:
    """Write the YAML file of one provider and snapshot; None when it has no offer."""
    records = offer_records(result)
    if not records:
        return None
    path = output_path(data_dir, result.file)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Generated by `computekb import skypilot` from {CATALOG_REPOSITORY} {result.file.path} at commit "
              f"{result.file.commit}\n# ({result.file.date_basis} {result.file.date}). Do not edit by hand: "
              "re-run the importer.\n")
    body = yaml.safe_dump({"sources": [source_record(result.file, provider_name)], "cloud_offers": records},
                          sort_keys=False, allow_unicode=True, width=110)
    path.write_text(header + body, encoding="utf-8")
    return path


class Imported(NamedTuple):
    """What an import wrote, and what it left out."""

    written: list            # paths of the snapshot files written
    unmapped: dict           # {provider: catalog names with no alias row}
    unknown_providers: list  # catalog providers with no providers row


def import_files(data_dir: Path, files: Iterable[CatalogFile], provider_names: dict) -> Imported:
    """Write a snapshot file per catalog file whose provider has a providers row."""
    table, written, unmapped, unknown = alias_table(data_dir), [], {}, []
    for file in files:
        if file.provider not in provider_names:
            unknown.append(file.provider)
            continue
        result = read_offers(file, table)
        if result.unmapped:
            unmapped[file.provider] = result.unmapped
        path = write_snapshot(data_dir, result, provider_names[file.provider])
        if path:
            written.append(path)
    return Imported(written, unmapped, unknown)


def provider_names(data_dir: Path) -> dict:
    """{provider slug: name} from the data folder's providers records."""
    names = {}
    for path in sorted(Path(data_dir).rglob("*.yml")):
        text = path.read_text(encoding="utf-8")
        if "providers:" not in text:
            continue
        for record in (yaml.safe_load(text) or {}).get("providers") or []:
            names[record["slug"]] = record["name"]
    return names
