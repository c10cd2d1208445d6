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
are returned as unmapped, for the caller to print; so is every provider skipped,
with why.

What is read is checked before anything is written (CatalogError names the
file, the row and the column): `read.yml` and the paths it lists (inside the
folder), the commit, the columns of each file, every row's number of fields and
its counts and prices, a file that ends inside a row (cut off), and each
provider's count of offers against its previous snapshot: fewer by more than
`max_drop` (a share, 0.25 by default) stops the import, as a truncated catalog
would look. What is written passes the build's own rules first (etl/imported.py).
"""

import csv
import io
import math
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import yaml

from .aliases import aliases
from .imported import COMMIT, DATE, ImportRefused, Output, record_lines, write_all

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
COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region")
MAX_DROP = 0.25  # the share of a provider's offers an import may lose against its previous snapshot


class CatalogError(ImportRefused):
    """A catalog that cannot be imported: names the file, the row and the column."""


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
    """What one catalog file gives: its offers, the names it uses that have no alias row, and the row
    each offer was first read from."""

    file: CatalogFile
    offers: list
    unmapped: list
    rows: dict = {}  # {(instance, count, region): row number}


def from_git(git_dir: Path, commit: str, version: str) -> list[CatalogFile]:
    """Every provider's vms.csv of catalog `version` (v8...) at `commit` of a git directory."""
    def git(*args):
        return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True,
                              text=True).stdout
    if commit.startswith("-") or not re.fullmatch(r"[A-Za-z0-9._/^~-]{1,100}", commit):
        raise CatalogError(f"--commit {commit!r}: expected a commit hash or a branch or tag name")
    try:
        full = git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}").strip()
    except subprocess.CalledProcessError:
        raise CatalogError(f"{git_dir}: no commit {commit!r} (is it a git directory of {CATALOG_REPOSITORY}?)") from None
    date = git("show", "-s", "--format=%cs", full).strip()
    paths = [p for p in git("ls-tree", "-r", "--name-only", full, f"catalogs/{version}/").splitlines()
             if p.endswith("/vms.csv")]
    return [CatalogFile(Path(p).parent.name, p, full, date, "observed", git("show", f"{full}:{p}")) for p in paths]


def manifest_entries(folder: Path) -> list[dict]:
    """The entries of the folder's read.yml, each checked: a path inside the folder to a vms.csv, a full
    commit hash, the date it was read."""
    manifest_path = folder / MANIFEST
    try:
        manifest = yaml.safe_load(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(f"{manifest_path}: no such file (it lists each file read: path, commit, read date)") from None
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise CatalogError(f"{manifest_path}: not YAML text ({str(error).splitlines()[0]})") from None
    entries = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(entries, list) or not entries:
        raise CatalogError(f"{manifest_path}: expected `files:`, a list of {{path, commit, read, note}}")
    root = folder.resolve()
    for number, entry in enumerate(entries, 1):
        where = f"{manifest_path} file {number}"
        if not isinstance(entry, dict):
            raise CatalogError(f"{where}: expected a mapping of path, commit, read and note")
        path, commit, read = entry.get("path"), entry.get("commit"), str(entry.get("read"))
        if not (isinstance(path, str) and path.endswith("/vms.csv") and not Path(path).is_absolute()
                and (folder / path).resolve().is_relative_to(root)):
            raise CatalogError(f"{where}: path: {path!r} is not a catalog vms.csv inside {folder}")
        if not (isinstance(commit, str) and COMMIT.fullmatch(commit)):
            raise CatalogError(f"{where}: commit: {commit!r} is not a full 40-hex-digit commit hash")
        if not DATE.fullmatch(read):
            raise CatalogError(f"{where}: read: {read!r} is not a date (YYYY-MM-DD)")
        if entry.get("note") is not None and not isinstance(entry["note"], str):
            raise CatalogError(f"{where}: note: expected text")
    return entries


def from_folder(folder: Path) -> list[CatalogFile]:
    """The files of a folder laid out as the catalog, each at the commit and read date its `read.yml` gives."""
    files = []
    for entry in manifest_entries(folder):
        path = entry["path"]
        try:
            text = (folder / path).read_bytes().decode("utf-8")
        except OSError as error:
            raise CatalogError(f"{folder / path}: cannot be read ({error.strerror})") from None
        except UnicodeDecodeError as error:
            raise CatalogError(f"{folder / path}: not UTF-8 text (byte {error.start})") from None
        files.append(CatalogFile(Path(path).parent.name, path, entry["commit"], str(entry["read"]), "read", text,
                                 entry.get("note")))
    return files


def number(text: str | None) -> float | None:
    """A price as the catalog writes it: a number above 0 that a float holds, or empty; ValueError otherwise."""
    if text in (None, ""):
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{text!r} is not a price (a number above 0)")
    return value


def chips(name: str, count: float) -> int | None:
    """Accelerators in one catalog row: TPU slices count their chips, other rows their AcceleratorCount;
    None for a fraction of a device (a share of one GPU is no offer of that GPU)."""
    match = TPU_CHIPS.match(name)
    if match:
        return int(match.group(1))
    return int(count) if count.is_integer() and count >= 1 else None


def catalog_rows(file: CatalogFile):
    """(row number, row) of a catalog file whose header has every column read and whose every row has the
    header's fields; CatalogError naming the file, row and column otherwise."""
    text = file.text.removeprefix("\ufeff")  # a byte-order mark is no part of the first column's name
    if not text.strip():
        raise CatalogError(f"{file.path}: empty file")
    if not text.endswith(("\n", "\r")):
        raise CatalogError(f"{file.path}: ends inside a row (no line end after the last one): a file cut off?")
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    missing = [name for name in COLUMNS if name not in header]
    if missing:
        raise CatalogError(f"{file.path}: no column {', '.join(missing)} (its header: {', '.join(header)[:200]})")
    for row in reader:
        if len(row) != len(header):
            raise CatalogError(f"{file.path} row {reader.line_num}: {len(row)} fields, the header has {len(header)}")
        yield reader.line_num, dict(zip(header, row))


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


def count_of(text: str) -> float:
    """AcceleratorCount as written (empty: one)."""
    try:
        return float(text or 1)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None


def checked(file: CatalogFile, number_of_row: int, column: str, read, text: str):
    """`read(text)`, its ValueError as a CatalogError naming the file, the row and the column."""
    try:
        return read(text)
    except ValueError as error:
        raise CatalogError(f"{file.path} row {number_of_row}: {column}: {error}") from None


def read_offers(file: CatalogFile, table: dict) -> Import:
    """The offers of one catalog file, one per (instance type, accelerator count, region): rows that
    differ only by zone or memory size keep their lowest prices."""
    merged, unmapped, rows = {}, set(), {}
    for line, row in catalog_rows(file):
        name = row["AcceleratorName"].strip()
        if not name:
            continue
        instance = row["InstanceType"].strip() or name  # TPU rows name the slice only
        price = checked(file, line, "Price", number, row["Price"])
        spot = checked(file, line, "SpotPrice", number, row["SpotPrice"])
        count = chips(name, checked(file, line, "AcceleratorCount", count_of, row["AcceleratorCount"]))
        found, accelerator = lookup(table, file.provider, instance, name)
        if not found:
            unmapped.add(name)
            continue
        if accelerator is None or count is None or (price is None and spot is None):
            continue
        region = row["Region"].strip() or None
        key = (instance, count, region)
        old = merged.get(key)
        rows.setdefault(key, line)
        merged[key] = Offer(instance, name, accelerator, count, region,
                            cheaper(old and old.price, price), cheaper(old and old.spot_price, spot))
    return Import(file, list(merged.values()), sorted(unmapped), rows)


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


def snapshot_output(data_dir: Path, result: Import, provider_name: str) -> Output | None:
    """The YAML file of one provider and snapshot, each offer traced to its catalog row; None without an offer."""
    records = offer_records(result)
    if not records:
        return None
    header = (f"# Generated by `computekb import skypilot` from {CATALOG_REPOSITORY} {result.file.path} at commit "
              f"{result.file.commit}\n# ({result.file.date_basis} {result.file.date}). Do not edit by hand: "
              "re-run the importer.\n")
    body = yaml.safe_dump({"sources": [source_record(result.file, provider_name)], "cloud_offers": records},
                          sort_keys=False, allow_unicode=True, width=110)
    text = header + body
    origin = {r["slug"]: f"{result.file.path} row {result.rows.get((r['instance'], r['gpu_count'], r.get('region')), '?')}"
              for r in records}
    starts = record_lines(text, [r["slug"] for r in records])
    return Output(output_path(data_dir, result.file), text, {line: origin[slug] for line, slug in starts.items()})


def previous_snapshot(data_dir: Path, file: CatalogFile) -> tuple[Path, int] | None:
    """The provider's latest snapshot file other than the one `file` writes, and its count of offers."""
    name = re.compile(rf"{re.escape(file.provider)}-[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}-[0-9a-f]{{10}}\.yml")
    folder, target = data_dir / OFFERS_DIR, output_path(data_dir, file)
    earlier = sorted(p for p in folder.glob(f"{file.provider}-*.yml") if name.fullmatch(p.name) and p != target) \
        if folder.is_dir() else []
    if not earlier:
        return None
    document = yaml.safe_load(earlier[-1].read_text(encoding="utf-8")) or {}
    return earlier[-1], len(document.get("cloud_offers") or [])


def shrink_problem(data_dir: Path, result: Import, max_drop: float) -> str | None:
    """Why a provider's offers are too few against its previous snapshot (a cut-off catalog), or None."""
    previous = previous_snapshot(data_dir, result.file)
    if previous is None or not previous[1]:
        return None
    path, before = previous
    after = len(result.offers)
    if after >= before * (1 - max_drop):
        return None
    return (f"{result.file.path}: {after} offers, {1 - after / before:.0%} fewer than the {before} of {path.name}: "
            f"a catalog cut off? (--max-drop {max_drop:g} is the share an import may lose; raise it if the "
            "provider really dropped them)")


class Imported(NamedTuple):
    """What an import wrote, and what it left out."""

    written: list            # paths of the snapshot files written
    unmapped: dict           # {provider: catalog names with no alias row}
    unknown_providers: list  # catalog providers with no providers row
    skipped: dict = {}       # {provider: why no file was written for it}


def import_files(data_dir: Path, files: Iterable[CatalogFile], provider_names: dict, max_drop: float = MAX_DROP) -> Imported:
    """Write a snapshot file per catalog file whose provider has a providers row; every file read and
    checked, and every output passing the build's rules, before the first is written."""
    table, outputs, unmapped, unknown, skipped = alias_table(data_dir), [], {}, [], {}
    for file in files:
        if file.provider not in provider_names:
            unknown.append(file.provider)
            skipped[file.provider] = "no providers row"
            continue
        result = read_offers(file, table)
        if result.unmapped:
            unmapped[file.provider] = result.unmapped
        if problem := shrink_problem(data_dir, result, max_drop):
            raise CatalogError(problem)
        output = snapshot_output(data_dir, result, provider_names[file.provider])
        if output:
            outputs.append(output)
        else:
            skipped[file.provider] = ("no offer: no row names an accelerator of the knowledge base with a price"
                                      + (" (names without an alias row: " + ", ".join(result.unmapped) + ")"
                                         if result.unmapped else ""))
    return Imported(write_all(outputs), unmapped, unknown, skipped)


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
