"""Columns with a unit (plugins/units.py): shown with their unit, filtered with one, on the fixture database.

The expected values are written out here from the fixture's YAML (tests/fixture/data):
acme-x1 96 GB, 4.8 TB/s, 700 W; acme-x2 144 GB, 3.35 TB/s, 1.2 kW; beta-b1 24 GB, 900 GB/s, 350 W.
"""

import pytest

from domain.units import to_unit
from serving.metadata import full_metadata
from serving.paths import METADATA_YML

from conftest import assert_refused

TABLE = "/computekb/accelerators"


async def slugs(client, query):
    response = await client.get(f"{TABLE}.json?_shape=array&_col=slug&_size=max&{query}")
    assert response.status_code == 200, response.text
    return sorted(row["slug"] for row in response.json())


@pytest.mark.parametrize("query, expected", [
    ("memory_bandwidth_gbs__gt=3TB/s", ["acme-x1", "acme-x2"]),
    ("memory_bandwidth_gbs__gt=3 TB/s", ["acme-x1", "acme-x2"]),
    ("memory_bandwidth_gbs__gt=3000", ["acme-x1", "acme-x2"]),
    ("memory_bandwidth_gbs__gt=3.4 TB/s", ["acme-x1"]),
    ("memory_bandwidth_gbs__lt=1 TB/s", ["beta-b1"]),
    ("memory_bandwidth_gbs=4.8 TB/s", ["acme-x1"]),
    ("memory_bandwidth_gbs__not=4800 GB/s", ["acme-x2", "beta-b1"]),
    ("tdp_w__gte=1 kW", ["acme-x2"]),
    ("tdp_w__lte=0.7kW", ["acme-x1", "beta-b1"]),
    ("memory_gb__in=96,24", ["acme-x1", "beta-b1"]),
    ("memory_gb__in=0.096 TB,144 GB", ["acme-x1", "acme-x2"]),
    ("memory_gb__notin=24 GB", ["acme-x1", "acme-x2"]),
    ("memory_gb__gte=96 GB&memory_bandwidth_gbs__lt=4 TB/s", ["acme-x2"]),
    # a capacity filter reads GiB as the data stores it: the number printed
    ("memory_gb=24 GiB", ["beta-b1"]),
    ("memory_gb__in=96 GiB,144", ["acme-x1", "acme-x2"]),
])
async def test_unit_filters_convert_into_the_column_unit(fixture_client, query, expected):
    assert await slugs(fixture_client, query) == expected


@pytest.mark.parametrize("text, unit, capacity, expected", [
    # DRAM capacity: the number the vendor prints, GB or GiB alike
    ("24 GiB", "GB", True, 24.0),
    ("24 GB", "GB", True, 24.0),
    ("95 GiB", "GB", True, 95.0),
    ("1.5 TiB", "GB", True, 1536.0),
    ("1.5 TB", "GB", True, 1500.0),
    ("512 MiB", "GB", True, 0.5),
    # a size that is not a DRAM capacity (a checkpoint file) converts: 60.8 × 1.073741824 = 65.28
    ("60.8 GiB", "GB", False, 65.28),
    # bandwidth stays decimal GB/s: 820 × 1.073741824 = 880.468...
    ("820 GiB/s", "GB/s", False, 880.46829568),
    ("2.9 TB/s", "GB/s", False, 2900.0),
])
def test_capacities_are_as_printed_and_bandwidth_is_decimal(text, unit, capacity, expected):
    assert to_unit(text, unit, capacity) == expected


@pytest.mark.parametrize("query, message", [
    ("memory_gb__gt=abc", "memory_gb__gt='abc': expected a number (in GB)"),
    ("memory_gb__gt=3TB/s", "cannot be converted to GB"),
    ("memory_bandwidth_gbs__lt=4.8 GB", "cannot be converted to GB/s"),
    ("memory_gb__gt=9**9**9", "memory_gb__gt='9**9**9'"),
    ("memory_gb__gt=80 zorks", "unknown unit"),
    ("memory_gb__in=80,lots", "memory_gb__in='80,lots'"),
    ("tdp_w__notin=700 GB", "cannot be converted to W"),
    # the grammar of data files: a number and one unit of the column's list, nothing else
    ("memory_gb__gt=80 GB GB", "unknown unit 'GB GB' in '80 GB GB': write one of B, kB, MB, GB, TB, PB"),
    ("tdp_w__gt=700 W B", "unknown unit 'W B'"),
    ("memory_bandwidth_gbs__gt=3.35 THz", "unknown unit 'THz'"),
    ("memory_gb__gt=8e13 percent", "unknown unit 'percent'"),
    ("tdp_w__gt=700 VA", "unknown unit 'VA' in '700 VA': write one of W, kW, MW"),
    ("memory_gb__gt=٨٠ GB", "write the number with the digits 0-9"),
    ("memory_gb__gt=８０", "write the number with the digits 0-9"),
    ("memory_gb__gt=nan", "memory_gb__gt='nan'"),
])
async def test_a_unit_filter_that_cannot_be_read_gets_400_with_the_reason(fixture_client, query, message):
    await assert_refused(fixture_client, TABLE, query, message, query.split("=")[0])


async def test_other_lookups_on_a_unit_column_are_left_to_datasette(fixture_client):
    assert await slugs(fixture_client, "memory_gb__isnull=1") == []
    assert await slugs(fixture_client, "memory_gb__notnull=1") == ["acme-x1", "acme-x2", "beta-b1"]


async def test_a_unit_filter_on_another_database_is_left_alone(fixture_client):
    # the same column name in a query string of a page that is not a table of the knowledge base
    response = await fixture_client.get("/-/versions.json?memory_gb__gt=abc")
    assert response.status_code == 200 and "datasette" in response.json()


@pytest.mark.parametrize("slug, shown", [
    # stored as REAL: pint shows 96.0 as "96.0 GB", as Datasette 0.65 did
    ("acme-x1", ["96.0&nbsp;GB", "4.8&nbsp;TB/s", "700.0&nbsp;W"]),
    ("acme-x2", ["144.0&nbsp;GB", "3.35&nbsp;TB/s", "1.2&nbsp;kW"]),
    ("beta-b1", ["24.0&nbsp;GB", "900.0&nbsp;GB/s", "350.0&nbsp;W"]),
])
async def test_values_are_shown_with_their_unit(fixture_client, slug, shown):
    row_page = (await fixture_client.get(f"{TABLE}/{slug}")).text
    # Datasette's own table (the compact one shows plain numbers under headers with units)
    table_page = (await fixture_client.get(f"{TABLE}?slug={slug}&_view=full")).text
    for text in shown:
        assert text in row_page and text in table_page, text


async def test_a_unit_column_keeps_its_plain_number_in_json(fixture_client):
    rows = (await fixture_client.get(f"{TABLE}.json?_shape=array&slug=acme-x2")).json()
    assert rows[0]["memory_bandwidth_gbs"] == 3350 and rows[0]["tdp_w"] == 1200


def test_no_table_declares_datasette_units():
    """Datasette 0.65 sends a filter on a column with metadata `units` through its
    vendored pint evaluator before any hook can refuse the value, and a crafted
    value (`9**9**9`) runs there without end: units come from the schema alone."""
    metadata = full_metadata(METADATA_YML)
    tables = {name: table for database in metadata["databases"].values()
              for name, table in database.get("tables", {}).items()}
    assert [name for name, table in tables.items() if "units" in table] == []
    assert "custom_units" not in metadata


def test_an_hourly_price_filter_reads_usd_per_hour_and_names_it_when_refused():
    from domain.units import UnitError, to_unit
    assert to_unit("2.5 USD/h", "USD/h") == 2.5
    with pytest.raises(UnitError, match=r"write one of USD/h"):
        to_unit("2 W", "USD/h")
