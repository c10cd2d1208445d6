"""Coverage report: how many accelerators each vendor and device class has, and
how well their core values are sourced.

The core values are the ones a reader filters and sizes on: memory, memory
bandwidth, power, dense matrix throughput in 16-bit floating point, FP8 and FP4,
interconnect bandwidth and the launch price. For each, the report counts the rows
that have it and the authority tier of its citation, so the next gap (a missing value, or a value resting on a weak
source) is visible per vendor and class. It reads a built database only.
"""

import sqlite3
from dataclasses import dataclass
from typing import NamedTuple

from domain.schema import TIERS


@dataclass(frozen=True)
class CoreValue:
    """One core value: a column of accelerators, dense matrix throughput in a precision family, or the
    launch price (a column derived from the prices rows that carry its citation)."""

    name: str
    column: str | None = None     # accelerators column
    precisions: tuple = ()        # throughput precisions that count for it (dense, matrix)
    priced: bool = False          # the column is launch_price_usd, cited on the prices rows it comes from


CORE_VALUES = (
    CoreValue("memory", column="memory_gb"),
    CoreValue("bandwidth", column="memory_bandwidth_gbs"),
    CoreValue("power", column="tdp_w"),
    CoreValue("bf16/fp16", precisions=("bf16", "fp16")),
    CoreValue("fp8", precisions=("fp8", "fp8-e4m3", "fp8-e5m2", "mxfp8")),
    CoreValue("fp4", precisions=("fp4", "fp4-e2m1", "mxfp4", "nvfp4")),
    CoreValue("interconnect", column="interconnect_gbs"),
    CoreValue("launch price", column="launch_price_usd", priced=True),
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
    if value.priced:
        # launch_price_usd is a launch-list USD price per device; the rows stating that amount carry its citation
        sql = f"""select a.slug, c.tier from accelerators a
                  join prices p on p.accelerator = a.slug and p.kind = 'launch-list' and p.currency = 'USD'
                  and p.per_device_amount = a.{value.column}
                  join citations c on c.table_name = 'prices' and c.row_slug = p.slug and c.field = 'amount'"""
        rows = conn.execute(sql)
    elif value.column:
        sql = f"""select a.slug, c.tier from accelerators a
                 join citations c on c.table_name = 'accelerators' and c.row_slug = a.slug and c.field = ?
                 where a.{value.column} is not null"""
        rows = conn.execute(sql, (value.column,))
    else:
        marks = ", ".join("?" for _ in value.precisions)
        sql = f"""select t.accelerator, c.tier from throughput t
                  join citations c on c.table_name = 'throughput' and c.row_slug = t.slug and c.field = 'tflops'
                  where t.sparsity = 'dense' and t.engine = 'matrix' and t.accumulate = 'fp32'
                  and t.precision in ({marks})"""
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


TIER_ABBREVIATIONS = {"vendor-primary": "vp", "vendor-secondary": "vs", "vendor-quoted": "vq",
                      "independent-measurement": "im", "third-party": "tp", "reference-dataset": "rd",
                      "aggregator": "ag"}


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
            for row in [header, *lines]] + [legend, *tier_mix(total)]


# The tiers that are the maker's own figure, read directly or through a quote.
VENDOR_TIERS = ("vendor-primary", "vendor-secondary", "vendor-quoted")
REFERENCE_TIER = "reference-dataset"


def share(part, whole):
    return f"{part / whole:.0%}" if whole else "-"


def tier_mix(total):
    """Two lines: per core value the share on a vendor tier; then over all core values the values stated, how
    many rest on a vendor tier and how many on the reference dataset."""
    counts = {}
    per_value = []
    for value, by_tier in total.tiers.items():
        vendor = sum(by_tier.get(tier, 0) for tier in VENDOR_TIERS)
        per_value.append(f"{value} {share(vendor, sum(by_tier.values()))}")
        for tier, count in by_tier.items():
            counts[tier] = counts.get(tier, 0) + count
    stated = sum(counts.values())
    vendor = sum(counts.get(tier, 0) for tier in VENDOR_TIERS)
    reference = counts.get(REFERENCE_TIER, 0)
    return ["on a vendor tier, per core value: " + ", ".join(per_value),
            f"core values stated: {stated}; on a vendor tier (vp, vs, vq): {vendor} ({share(vendor, stated)}); "
            f"on the reference dataset (rd): {reference} ({share(reference, stated)})"]



@dataclass(frozen=True)
class PriceCoverage:
    """How much of the price measure the database holds."""

    launch_priced: int             # accelerators with a launch price
    list_priced: int               # accelerators with a launch-list or later list price, in any currency
    date_bases: dict               # price date basis -> prices
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
        list_priced=one("select count(distinct accelerator) from prices where kind in ('launch-list', 'list')"),
        date_bases=dict(conn.execute("select date_basis, count(*) from prices group by date_basis order by date_basis")),
        offered=one("select count(distinct accelerator) from cloud_offers where current"),
        providers=one("select count(distinct provider) from cloud_offers where current"),
        offers=offers, unmapped=unmapped, oldest_current=tuple(oldest) if oldest else None)


def format_prices(prices: PriceCoverage) -> list[str]:
    """The prices section of the report as text lines."""
    lines = ["", "prices",
             f"accelerators with a launch price: {prices.launch_priced}",
             f"accelerators with a launch or list price: {prices.list_priced}",
             "prices by date basis: " + ", ".join(f"{basis} {count}" for basis, count in prices.date_bases.items()),
             f"accelerators with a current offer: {prices.offered}",
             f"providers with a current offer: {prices.providers}",
             "offers per provider (current / all, snapshots):"]
    lines += [f"  {provider}: {current} / {total}, {snapshots}" for provider, (current, total, snapshots)
              in prices.offers.items()]
    if prices.oldest_current:
        observed, basis, provider, slug = prices.oldest_current
        lines.append(f"oldest observation shown as current: {observed} ({basis}), {provider}, {slug}")
    lines.append(f"catalog names that map to no accelerator: {len(prices.unmapped)}")
    lines += [f"  {dataset}: {name}" + (f" ({note})" if note else "") for dataset, name, note in prices.unmapped]
    return lines


# The measured section: benchmark results per round and how their accelerator names resolved.

MLPERF = "mlperf"


@dataclass(frozen=True)
class RoundCoverage:
    """The results of one round, by what their accelerator name resolved to."""

    round: str
    rows: int
    mapped: int        # a name with an alias to an accelerator
    means_none: int    # a name whose alias says it means none (a mixed system)
    unmapped: int      # a name with no alias row
    no_name: int       # the summary names no accelerator (a system without one)

    @property
    def mapped_share(self) -> float:
        named = self.rows - self.no_name
        return self.mapped / named if named else 0.0


class NameCount(NamedTuple):
    name: str
    rows: int
    note: str | None = None


@dataclass(frozen=True)
class MeasuredCoverage:
    rounds: list
    unmapped: list      # NameCount of names with no alias row
    means_none: list    # NameCount of names mapped to none, with the alias note
    measured: list      # accelerator slugs with a result or an achieved rate
    unmeasured: list    # accelerator slugs with neither


def measured_coverage(conn: sqlite3.Connection) -> MeasuredCoverage:
    rounds = [RoundCoverage(*row) for row in conn.execute("""
        select round, count(*),
          sum(accelerator is not null),
          sum(accelerator_name is not null and exists (select 1 from accelerator_aliases x where x.dataset = ?
              and x.name = r.accelerator_name and x.accelerator is null)),
          sum(accelerator_name is not null and not exists (select 1 from accelerator_aliases x where x.dataset = ?
              and x.name = r.accelerator_name)),
          sum(accelerator_name is null)
        from benchmark_results r group by round order by round""", (MLPERF, MLPERF))]
    unmapped = [NameCount(*row) for row in conn.execute("""
        select accelerator_name, count(*) from benchmark_results r where accelerator_name is not null
        and not exists (select 1 from accelerator_aliases x where x.dataset = ? and x.name = r.accelerator_name)
        group by accelerator_name order by accelerator_name""", (MLPERF,))]
    none = [NameCount(*row) for row in conn.execute("""
        select r.accelerator_name, count(*), x.note from benchmark_results r join accelerator_aliases x
        on x.dataset = ? and x.name = r.accelerator_name and x.accelerator is null
        group by r.accelerator_name order by r.accelerator_name""", (MLPERF,))]
    measured = [slug for (slug,) in conn.execute("""
        select slug from accelerators where slug in (select accelerator from benchmark_results
        union select accelerator from achieved_rates) order by slug""")]
    unmeasured = [slug for (slug,) in conn.execute("""
        select slug from accelerators where slug not in (select coalesce(accelerator, '') from benchmark_results
        union select accelerator from achieved_rates) order by slug""")]
    return MeasuredCoverage(rounds, unmapped, none, measured, unmeasured)


def format_measured(m: MeasuredCoverage) -> list[str]:
    lines = ["", "measured: benchmark results per round (accelerator names through accelerator_aliases, dataset mlperf)",
             "round  rows  mapped  means-none  unmapped  no-accelerator  mapped share (of named)"]
    for r in m.rounds:
        lines.append(f"{r.round:6} {r.rows:5} {r.mapped:7} {r.means_none:11} {r.unmapped:9} {r.no_name:15}  "
                     f"{r.mapped_share:.1%}")
    lines.append(f"unmapped names ({len(m.unmapped)}): add a row to data/aliases/mlperf.yml")
    lines += [f"  {n.name} ({n.rows} results)" for n in m.unmapped]
    lines.append(f"names meaning no accelerator ({len(m.means_none)}): mixed systems, boards of two GPUs")
    lines += [f"  {n.name} ({n.rows} results): {n.note}" for n in m.means_none]
    lines.append(f"accelerators with a measurement ({len(m.measured)}): {', '.join(m.measured)}")
    lines.append(f"accelerators without one ({len(m.unmeasured)}): {', '.join(m.unmeasured)}")
    return lines
