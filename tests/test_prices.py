"""Prices: the derived launch price, offers per GPU-hour, current snapshots, the SkyPilot importer,
the report's prices section and the price-aware pages, on the fixture data (values worked out by hand)."""

import os
import re
import sqlite3
import subprocess
from contextlib import closing

import pytest
import yaml

from etl import skypilot
from etl.report import format_prices, price_coverage


@pytest.fixture(scope="module")
def fx(fixture_db):
    with closing(sqlite3.connect(fixture_db)) as conn:
        conn.row_factory = sqlite3.Row
        yield conn


def test_launch_price_is_the_earliest_usd_launch_row_per_device(fx):
    rows = {r["slug"]: tuple(r) for r in fx.execute(
        "select slug, launch_price_usd, launch_price_derived from accelerators")}
    # acme-x1: 30,000 launch (the later 24,000 street price never replaces it); beta-b1: a kit of 2 at
    # 5,000 is 2,500 each, derived; acme-x2: only a reported price, which is never a list price.
    assert rows == {"acme-x1": ("acme-x1", 30000.0, 0), "beta-b1": ("beta-b1", 2500.0, 1),
                    "acme-x2": ("acme-x2", None, None)}
    shares = dict(fx.execute("select slug, per_device_amount from prices"))
    assert shares == {"acme-x1-launch": 30000.0, "acme-x1-street-2026": 24000.0, "acme-x2-reported": 40000.0,
                      "beta-b1-kit-launch": 2500.0}


def test_offers_per_gpu_hour_and_the_current_snapshot(fx):
    offers = {r[0]: tuple(r)[1:] for r in fx.execute(
        "select slug, current, price_per_gpu_hour, spot_price_per_gpu_hour from cloud_offers")}
    # 20.5 / 8, 12 / 4 (older snapshot: not current), 5 / 2 and spot 2 / 2, 2.7 EUR / 3
    assert offers == {"cloudco-x1-8": (1, 2.5625, None), "cloudco-x1-4-2026-01": (0, 3.0, None),
                      "cloudco-x1-2-2026-06": (1, 2.5, 1.0), "cloudco-b1-3-2026-06": (1, 0.9, None)}
    cheapest = dict(fx.execute("select slug, cheapest_gpu_hour_usd from accelerators"))
    # acme-x1: min(2.5625, 2.5) over current USD offers; beta-b1 has only a EUR offer
    assert cheapest == {"acme-x1": 2.5, "acme-x2": None, "beta-b1": None}


def test_report_prices_section(fx):
    lines = format_prices(price_coverage(fx))
    assert "accelerators with a launch price: 2" in lines
    assert "accelerators with a launch or list price: 2" in lines    # acme-x1 and beta-b1; acme-x2's is reported
    assert "prices by date basis: stated 4" in lines
    assert "accelerators with a current offer: 2" in lines
    assert "  cloudco: 3 / 4, 2" in lines
    assert "oldest observation shown as current: 2026-06-15 (read), cloudco, cloudco-b1-3-2026-06" in lines


CATALOG = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,Price,Region,AvailabilityZone,SpotPrice
cpu-small,,,4,0.1,r1,r1-a,
big-8x,H100,8,96,24.0,r1,r1-a,8.0
big-8x,H100,8,96,23.2,r1,r1-b,
pcie-1x,H100,1,8,2.0,r1,r1-a,
,tpu-v6e-8,1,,21.6,r2,r2-a,4.0
odd-1x,Z9,1,8,1.0,r1,r1-a,
none-1x,V100,1,8,0.5,r1,r1-a,
"""
ALIASES = {"accelerator_aliases": [
    {"slug": "skypilot-h100", "dataset": "skypilot", "name": "H100", "accelerator": None},
    {"slug": "skypilot-cloudco-big-8x", "dataset": "skypilot", "name": "cloudco/big-8x", "accelerator": "acme-x1"},
    {"slug": "skypilot-cloudco-h100", "dataset": "skypilot", "name": "cloudco/H100", "accelerator": "acme-x2"},
    {"slug": "skypilot-tpu-v6e-8", "dataset": "skypilot", "name": "tpu-v6e-8", "accelerator": "beta-b1"},
    {"slug": "skypilot-v100", "dataset": "skypilot", "name": "V100", "accelerator": None},
]}


@pytest.fixture
def data_dir(tmp_path):
    data = tmp_path / "data"
    (data / "aliases").mkdir(parents=True)
    (data / "aliases" / "skypilot.yml").write_text(yaml.safe_dump(ALIASES), encoding="utf-8")
    return data


def written(path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_import_from_files_read_one_by_one(tmp_path, data_dir):
    folder = tmp_path / "read"
    (folder / "catalogs/v8/cloudco").mkdir(parents=True)
    (folder / "catalogs/v8/cloudco/vms.csv").write_text(CATALOG, encoding="utf-8")
    (folder / "read.yml").write_text(
        "files:\n  - {path: catalogs/v8/cloudco/vms.csv, commit: " + "ab" * 20 + ", read: 2026-12-02, note: Whole file.}\n",
        encoding="utf-8")
    paths, unmapped, unknown, _ = skypilot.import_files(data_dir, skypilot.from_folder(folder), {"cloudco": "CloudCo"})
    assert unmapped == {"cloudco": ["Z9"]}, "a name with no alias row is reported, not imported"
    assert unknown == []
    assert [p.relative_to(data_dir).as_posix() for p in paths] == [
        "specs/cloud_offers/skypilot/cloudco-2026-12-02-abababab.yml".replace("abababab", "ab" * 5)]
    doc = written(paths[0])
    offers = {o["instance"]: o for o in doc["cloud_offers"]}
    # big-8x: the instance row wins over cloudco/H100; two zones of r1 merge to the lowest prices
    assert (offers["big-8x"]["accelerator"], offers["big-8x"]["gpu_count"], offers["big-8x"]["price_per_hour"],
            offers["big-8x"]["spot_price_per_hour"]) == ("acme-x1", 8, 23.2, 8.0)
    assert offers["pcie-1x"]["accelerator"] == "acme-x2", "provider/name before the plain name (mapped to none)"
    # a TPU v6e slice counts its chips: tpu-v6e-8 is 8 accelerators
    assert (offers["tpu-v6e-8"]["gpu_count"], offers["tpu-v6e-8"]["region"]) == (8, "r2")
    assert set(offers) == {"big-8x", "pcie-1x", "tpu-v6e-8"}, "CPU rows and names meaning none left out"
    assert {(o["observed"], o["date_basis"], o["currency"]) for o in offers.values()} == {("2026-12-02", "read", "USD")}
    (source,) = doc["sources"]
    assert source["url"] == "https://github.com/skypilot-org/skypilot-catalog/blob/" + "ab" * 20 + \
        "/catalogs/v8/cloudco/vms.csv"
    assert source["retrieved"] == "2026-12-02" and "published" not in source and source["note"].endswith("Whole file.")
    assert {o["source"] for o in offers.values()} == {source["slug"]}


def test_import_from_git_is_dated_by_the_commit(tmp_path, data_dir):
    repo = tmp_path / "catalog"
    (repo / "catalogs/v8/cloudco").mkdir(parents=True)
    (repo / "catalogs/v8/cloudco/vms.csv").write_text(CATALOG, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_DATE": "2025-04-03T12:00:00Z", "GIT_COMMITTER_DATE": "2025-04-03T12:00:00Z",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "catalog"]):
        subprocess.run(["git", *command], cwd=repo, env=env, check=True)
    files = skypilot.from_git(repo / ".git", "HEAD", "v8")
    assert [(f.provider, f.date, f.date_basis) for f in files] == [("cloudco", "2025-04-03", "observed")]
    paths, _, unknown, skipped = skypilot.import_files(data_dir, files, {"other": "Other"})
    assert (paths, unknown, skipped) == ([], ["cloudco"], {"cloudco": "no providers row"}), \
        "a provider with no providers row is not imported, and said"
    paths, _, _, _ = skypilot.import_files(data_dir, files, {"cloudco": "CloudCo"})
    doc = written(paths[0])
    assert doc["sources"][0]["published"] == "2025-04-03"
    assert {(o["observed"], o["date_basis"]) for o in doc["cloud_offers"]} == {("2025-04-03", "observed")}


async def test_finder_sorts_by_cloud_price_with_unpriced_rows_last(fixture_client):
    page = (await fixture_client.get("/-/accelerators?_sort_by=cheapest_gpu_hour_usd")).text
    assert re.findall(r'<tr data-slug="([^"]+)"', page)[0] == "acme-x1"
    assert "2 accelerators without a cloud price per GPU-hour are listed last." in page


async def test_finder_sorts_by_list_price_lowest_first(fixture_client):
    page = (await fixture_client.get("/-/accelerators?_sort_by=launch_price_usd")).text
    assert re.findall(r'<tr data-slug="([^"]+)"', page) == ["beta-b1", "acme-x1", "acme-x2"]
    assert "1 accelerator without a list price is listed last." in page


async def test_finder_filters_on_price_and_refuses_an_unknown_sort(fixture_client):
    page = (await fixture_client.get("/-/accelerators?launch_price_usd__lte=3000")).text
    assert re.findall(r'<tr data-slug="([^"]+)"', page) == ["beta-b1"]
    response = await fixture_client.get("/-/accelerators?_sort_by=colour")
    assert response.status_code == 400 and "cannot sort by" in response.text


async def test_compare_marks_the_lowest_prices_best(fixture_client):
    page = (await fixture_client.get("/-/compare?ids=acme-x1,beta-b1")).text
    row = re.search(r'<tr data-field="launch_price_usd">(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r'<td data-accelerator="([^"]+)" class="best"', row) == ["beta-b1"]


async def test_spec_sheet_shows_prices_and_the_cheapest_offer_per_provider(fixture_client):
    page = (await fixture_client.get("/computekb/accelerators/acme-x1")).text
    assert "launch list price" in page and "street price" in page
    rows = re.findall(r'<tr data-provider="([^"]+)">(.*?)</tr>', page, re.S)
    assert [provider for provider, _ in rows] == ["cloudco"]
    assert "2.5 USD" in rows[0][1] and "2026-06-15" in rows[0][1] and "(read)" in rows[0][1]
