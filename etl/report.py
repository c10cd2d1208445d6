"""Coverage report: how many accelerators each vendor and device class has, and
how well their core values are sourced.

The core values are the ones a reader filters and sizes on: memory, memory
bandwidth, power, and dense matrix throughput in 16-bit floating point, FP8 and
FP4. For each, the report counts the rows that have it and the authority tier of
its citation, so the next gap (a missing value, or a value resting on a weak
source) is visible per vendor and class. It reads a built database only.
"""

import sqlite3
from dataclasses import dataclass

from .schema import TIERS


@dataclass(frozen=True)
class CoreValue:
    """One core value: a column of accelerators, or dense matrix throughput in a precision family."""

    name: str
    column: str | None = None     # accelerators column
    precisions: tuple = ()        # throughput precisions that count for it (dense, matrix)


CORE_VALUES = (
    CoreValue("memory", column="memory_gb"),
    CoreValue("bandwidth", column="memory_bandwidth_gbs"),
    CoreValue("power", column="tdp_w"),
    CoreValue("bf16/fp16", precisions=("bf16", "fp16")),
    CoreValue("fp8", precisions=("fp8", "fp8-e4m3", "fp8-e5m2", "mxfp8")),
    CoreValue("fp4", precisions=("fp4", "fp4-e2m1", "mxfp4", "nvfp4")),
)

# The strongest tier wins where several rows give one core value (FP8 stated per format, say).
TIER_RANK = {tier: rank for rank, tier in enumerate(TIERS)}


@dataclass
class GroupCoverage:
    """The rows of one vendor and device class, and per core value the tiers of its citations."""

    vendor: str
    device_class: str
    rows: int
    tiers: dict  # core value name -> {tier: count of rows}

    def filled(self, value):
        return sum(self.tiers[value].values())


def value_tiers(conn, value):
    """(accelerator slug, strongest tier) for every accelerator that has this core value."""
    if value.column:
        sql = f"""select a.slug, c.tier from accelerators a
                 join citations c on c.table_name = 'accelerators' and c.row_slug = a.slug and c.field = ?
                 where a.{value.column} is not null"""
        rows = conn.execute(sql, (value.column,))
    else:
        marks = ", ".join("?" for _ in value.precisions)
        sql = f"""select t.accelerator, c.tier from throughput t
                  join citations c on c.table_name = 'throughput' and c.row_slug = t.slug and c.field = 'tflops'
                  where t.sparsity = 'dense' and t.engine = 'matrix' and t.precision in ({marks})"""
        rows = conn.execute(sql, value.precisions)
    best = {}
    for slug, tier in rows:
        if slug not in best or TIER_RANK[tier] < TIER_RANK[best[slug]]:
            best[slug] = tier
    return best


def coverage(conn: sqlite3.Connection) -> list[GroupCoverage]:
    """Coverage per (vendor, device class), in that order."""
    groups, group_of = {}, {}
    members = conn.execute("select slug, vendor, device_class from accelerators order by vendor, device_class, slug")
    for slug, vendor, device_class in members:
        key = group_of[slug] = (vendor, device_class)
        group = groups.setdefault(key, GroupCoverage(vendor, device_class, 0, {v.name: {} for v in CORE_VALUES}))
        group.rows += 1
    for value in CORE_VALUES:
        for slug, tier in value_tiers(conn, value).items():
            counts = groups[group_of[slug]].tiers[value.name]
            counts[tier] = counts.get(tier, 0) + 1
    return list(groups.values())


TIER_ABBREVIATIONS = {"vendor-primary": "vp", "vendor-secondary": "vs", "independent-measurement": "im",
                      "third-party": "tp", "aggregator": "ag"}


def format_cell(group, value):
    """'filled/rows (vp 3, tp 1)': how many rows have the value, and their tiers, strongest first."""
    counts = group.tiers[value]
    tiers = ", ".join(f"{TIER_ABBREVIATIONS[t]} {counts[t]}" for t in TIERS if t in counts)
    return f"{group.filled(value)}/{group.rows}" + (f" ({tiers})" if tiers else "")


def format_report(groups):
    """The report as text lines: one line per group, then the totals per core value."""
    header = ["vendor", "class", "rows", *[v.name for v in CORE_VALUES]]
    lines = [[g.vendor, g.device_class, str(g.rows), *[format_cell(g, v.name) for v in CORE_VALUES]] for g in groups]
    total = GroupCoverage("all", "", sum(g.rows for g in groups), {v.name: {} for v in CORE_VALUES})
    for g in groups:
        for value, counts in g.tiers.items():
            for tier, count in counts.items():
                total.tiers[value][tier] = total.tiers[value].get(tier, 0) + count
    lines.append([total.vendor, "", str(total.rows), *[format_cell(total, v.name) for v in CORE_VALUES]])
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    legend = "tiers: " + ", ".join(f"{abbr} = {tier}" for tier, abbr in TIER_ABBREVIATIONS.items())
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in [header, *lines]] + [legend]


@dataclass(frozen=True)
class PriceCoverage:
    """How much of the price measure the database holds."""

    launch_priced: int             # accelerators with a launch price
    offered: int                   # accelerators with a current offer
    providers: int                 # providers with a current offer
    offers: dict                   # provider -> (current offers, every offer, snapshots)
    unmapped: list                 # (dataset, name, note) of catalog names that map to no accelerator
    oldest_current: tuple | None   # (observed, date basis, provider, offer slug) of the oldest current offer


def price_coverage(conn: sqlite3.Connection) -> PriceCoverage:
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    offers = {provider: (current, total, snapshots) for provider, current, total, snapshots in conn.execute(
        "select provider, sum(current), count(*), count(distinct snapshot) from cloud_offers group by provider order by provider")}
    unmapped = [tuple(r) for r in conn.execute(
        "select dataset, name, note from accelerator_aliases where accelerator is null and dataset <> 'epoch-ai' "
        "order by dataset, name")]
    oldest = conn.execute("select observed, date_basis, provider, slug from cloud_offers where current "
                          "order by observed, slug limit 1").fetchone()
    return PriceCoverage(
        launch_priced=one("select count(*) from accelerators where launch_price_usd is not null"),
        offered=one("select count(distinct accelerator) from cloud_offers where current"),
        providers=one("select count(distinct provider) from cloud_offers where current"),
        offers=offers, unmapped=unmapped, oldest_current=tuple(oldest) if oldest else None)


def format_prices(prices: PriceCoverage) -> list[str]:
    """The prices section of the report as text lines."""
    lines = ["", "prices",
             f"accelerators with a launch price: {prices.launch_priced}",
             f"accelerators with a current offer: {prices.offered}",
             f"providers with a current offer: {prices.providers}",
             "offers per provider (current / all, snapshots):"]
    lines += [f"  {provider}: {current} / {total}, {snapshots}" for provider, (current, total, snapshots)
              in prices.offers.items()]
    if prices.oldest_current:
        observed, basis, provider, slug = prices.oldest_current
        lines.append(f"oldest observation shown as current: {observed} ({basis or 'date basis not recorded'}), {provider}, {slug}")
    lines.append(f"catalog names that map to no accelerator: {len(prices.unmapped)}")
    lines += [f"  {dataset}: {name}" + (f" ({note})" if note else "") for dataset, name, note in prices.unmapped]
    return lines
