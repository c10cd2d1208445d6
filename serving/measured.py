"""Measured beside promised: what the pages read of audited benchmark results and achieved rates.

The spec sheet's *Measured* section (plugins/reader_spec.py) and the compare
page's measured rows (plugins/compare.py) read here: for each accelerator, its
MLPerf results (closed division, per accelerator), best and median per
benchmark, accuracy target and scenario of the latest round that has them, the best's result ID linking to MLCommons' results and
its citation, and the share of the roofline (the calculator's ceiling) where one is
computable; then the achieved bandwidth and matmul rates with their
percentage of the datasheet peak (the `achieved_vs_peak` view).
"""

import math
import statistics
from dataclasses import dataclass

from domain.energy import electricity_usd_per_million_tokens, rental_usd_per_million_tokens
from domain.schema import KIND_LABELS

RESULTS_TABLE = "benchmark_results"
TOKENS = "Tokens/s"
# Rounds sort by their number (v4.1 < v5.1 < v6.0 < v10.0), not as text.
ROUND_ORDER = "cast(substr(round, 2) as real)"

RESULTS_SQL = f"""
    select b.slug, b.accelerator, b.round, {ROUND_ORDER} as round_number, b.result_id, b.benchmark,
           b.accuracy_target, b.scenario, b.units, b.result_per_accelerator, b.total_accelerators, b.submitter,
           b.system, b.details_url, b.roofline_share, b.roofline_per_accelerator, b.availability,
           c.slug as citation, c.tier
    from {RESULTS_TABLE} b
    left join citations c on c.table_name = '{RESULTS_TABLE}' and c.row_slug = b.slug and c.field = 'result'
    where b.division = 'closed' and b.result_per_accelerator is not null and b.accelerator in ({{picked}})
    order by b.benchmark, b.accuracy_target, b.scenario, b.result_per_accelerator desc, b.slug"""
# Results submitted with power (power_results): the whole system's average wall power over the run, that power
# shared over its accelerators, the result per joule, and the accelerator's cheapest current accelerator-hour.
ENERGY_SQL = f"""
    select p.slug, b.round, {ROUND_ORDER} as round_number, b.result_id, b.benchmark, b.accuracy_target, b.scenario,
           b.units, b.result, b.result_per_accelerator, p.average_w, p.watts_per_accelerator, p.result_per_joule,
           b.total_accelerators, b.submitter, b.system, b.details_url, a.cheapest_gpu_hour_usd,
           c.slug as citation, c.tier
    from power_results p
    join {RESULTS_TABLE} b on b.slug = p.result
    join accelerators a on a.slug = p.accelerator
    left join citations c on c.table_name = 'power_results' and c.row_slug = p.slug and c.field = 'average_w'
    where b.division = 'closed' and p.result_per_joule is not null and p.accelerator = :accelerator
    order by b.units != '{TOKENS}', b.benchmark, b.accuracy_target, b.scenario, round_number desc, b.slug"""
# The compare page's energy rows: the LLM power results of the picked accelerators.
COMPARE_ENERGY_SQL = f"""
    select p.accelerator, b.benchmark, b.accuracy_target, b.scenario, b.round, b.result_id, b.details_url,
           p.result_per_joule, p.watts_per_accelerator, c.slug as citation
    from power_results p
    join {RESULTS_TABLE} b on b.slug = p.result
    left join citations c on c.table_name = 'power_results' and c.row_slug = p.slug and c.field = 'average_w'
    where b.division = 'closed' and b.units = '{TOKENS}' and p.result_per_joule is not null
      and p.accelerator in ({{picked}})
    order by p.slug"""
# The datasheet power the measured wall power is set beside, and its citation.
DATASHEET_POWER_SQL = """
    select a.tdp_w, a.power_kind, c.slug as citation, c.tier
    from accelerators a
    left join citations c on c.table_name = 'accelerators' and c.row_slug = a.slug and c.field = 'tdp_w'
    where a.slug = :accelerator"""
# The default price of electricity (the reader sets another with ?kwh_usd=).
DEFAULT_ELECTRICITY_PRICE = "virginia-commercial-2023"
PRICE_SQL = """
    select e.*, c.slug as citation, c.tier
    from electricity_prices e
    left join citations c on c.table_name = 'electricity_prices' and c.row_slug = e.slug and c.field = 'usd_per_kwh'
    where e.slug = :slug"""
ACHIEVED_SQL = """
    select v.*, c.slug as citation, c.tier
    from achieved_vs_peak v
    left join citations c on c.table_name = 'achieved_rates' and c.row_slug = v.slug
      and c.field in ('bandwidth_gbs', 'tflops')
    where v.accelerator in ({picked})
    order by v.accelerator, v.measure desc, v.precision, v.slug"""


@dataclass(frozen=True)
class Benchmark:
    """What makes two results comparable: the same benchmark, accuracy target, scenario and round."""

    benchmark: str
    accuracy_target: str | None
    scenario: str
    round: str

    @property
    def label(self) -> str:
        target = f" ({self.accuracy_target}%)" if self.accuracy_target else ""
        return f"{self.benchmark}{target} {self.scenario}, {self.round}"


@dataclass
class ResultRow:
    """One benchmark of one accelerator in one round: the best result and the median of all."""

    key: Benchmark
    unit: str                 # per accelerator
    best: dict                # the best result's row
    median: float
    results: int

    @property
    def best_shown(self) -> str:
        return shown(self.best["result_per_accelerator"])

    @property
    def median_shown(self) -> str:
        return shown(self.median)

    @property
    def share_shown(self) -> str | None:
        """The best's share of the roofline as a percentage: one decimal below 10% (0.4%, not 0%)."""
        return share_text(self.best["roofline_share"])


    @property
    def median_words(self) -> str:
        """The median in words: "the only result", or "1,234, median of 7 results"."""
        return "the only result" if self.results == 1 else f"{self.median_shown}, median of {self.results} results"

    @property
    def ceiling_shown(self) -> str | None:
        """The ceiling to 3 significant digits: it is computed from figures that give no more (14,400, not 14,360)."""
        ceiling = self.best["roofline_per_accelerator"]
        if ceiling is None:
            return None
        return f"{float(f'{ceiling:.3g}'):,.0f}" if ceiling >= 100 else shown(ceiling)


@dataclass
class Round:
    """The results of one benchmark round, most telling first."""

    name: str
    rows: list


def relevance(row: ResultRow):
    """LLM (tokens/s) results first, then the highest share of the roofline, then the most results."""
    share = row.best["roofline_share"]
    return (row.best["units"] != TOKENS, share is None, -(share or 0), -row.results, row.key.benchmark,
            row.key.scenario)


def by_round(rows: list) -> list:
    """A spec sheet's results a round each (a heading never mixes two rounds), the round of the most telling
    result first, then the newest."""
    rounds = {}
    for row in rows:
        rounds.setdefault((row.best["round_number"], row.key.round), []).append(row)
    ordered = sorted(rounds.items(), key=lambda item: (min(map(relevance, item[1])), -item[0][0]))
    return [Round(name, sorted(members, key=relevance)) for (_, name), members in ordered]


def share_text(share: float | None) -> str | None:
    """A share of the roofline as a percentage: one decimal below 10% (0.4%, not 0%)."""
    if share is None:
        return None
    return f"{share:.1%}" if share < 0.1 else f"{share:.0%}"


@dataclass(frozen=True)
class ElectricityPrice:
    """The price per kWh the costs are computed at: the reader's, or the default with its citation."""

    usd_per_kwh: float | None  # None: no price set and none in the database
    default: dict | None  # the electricity_prices row of the default, with its citation
    set_by_reader: bool


@dataclass
class EnergyRow:
    """One result submitted with power: whole-system wall power, the result per joule of it, and what a million
    tokens cost in electricity and in rental at that result."""

    row: dict
    price: ElectricityPrice

    @property
    def per_joule_unit(self) -> str:
        """"tokens per joule" from Tokens/s (the result's unit without its /s)."""
        return f"{self.row['units'].removesuffix('/s').lower()} per joule"

    @property
    def watts_shown(self) -> str:
        return f"{self.row['average_w']:,.0f}"

    @property
    def watts_per_accelerator_shown(self) -> str | None:
        watts = self.row["watts_per_accelerator"]
        return f"{watts:,.0f}" if watts is not None else None

    @property
    def per_joule_shown(self) -> str:
        return shown(self.row["result_per_joule"])

    @property
    def electricity_shown(self) -> str | None:
        """USD of electricity per million tokens at the price (LLM results only)."""
        if self.row["units"] != TOKENS or self.price.usd_per_kwh is None:
            return None
        return usd(electricity_usd_per_million_tokens(self.row["result_per_joule"], self.price.usd_per_kwh))

    @property
    def rental_shown(self) -> str | None:
        """USD of rental per million tokens at the accelerator's cheapest current accelerator-hour."""
        hour, per_accelerator = self.row["cheapest_gpu_hour_usd"], self.row["result_per_accelerator"]
        if self.row["units"] != TOKENS or not hour or not per_accelerator:
            return None
        return usd(rental_usd_per_million_tokens(per_accelerator, hour))


@dataclass
class Energy:
    """The spec sheet's energy table: the power results, the datasheet power beside them, the price used."""

    rows: list[EnergyRow]
    datasheet: dict | None
    price: ElectricityPrice


async def electricity_price(db, usd_per_kwh: float | None) -> ElectricityPrice:
    """The reader's price, or the default row's (a database may hold none: then no electricity cost is shown)."""
    found = (await db.execute(PRICE_SQL, {"slug": DEFAULT_ELECTRICITY_PRICE})).first()
    default = dict(found) if found else None
    if usd_per_kwh is None:
        return ElectricityPrice(default["usd_per_kwh"] if default else None, default, False)
    return ElectricityPrice(usd_per_kwh, default, True)


async def read_energy(db, slug, price: ElectricityPrice) -> Energy:
    """The power results of one accelerator, newest round first in each benchmark and scenario."""
    rows = [EnergyRow(dict(r), price) for r in (await db.execute(ENERGY_SQL, {"accelerator": slug})).rows]
    found = (await db.execute(DATASHEET_POWER_SQL, {"accelerator": slug})).first()
    datasheet = dict(found, kind_label=KIND_LABELS.get(found["power_kind"])) if found and found["tdp_w"] else None
    return Energy(rows, datasheet, price)


@dataclass
class EnergyCompareRow:
    """A compare row: per accelerator, its most efficient LLM power result of one benchmark, accuracy target and
    scenario (of whichever round has it: the cell names the round)."""

    label: str
    cells: list  # a power result row per column, or None


def energy_compare_rows(slugs, found) -> list[EnergyCompareRow]:
    by_key = {}
    for row in found:
        target = f" ({row['accuracy_target']}%)" if row["accuracy_target"] else ""
        cells = by_key.setdefault(f"{row['benchmark']}{target} {row['scenario']}", {})
        best = cells.get(row["accelerator"])
        if best is None or row["result_per_joule"] > best["result_per_joule"]:
            cells[row["accelerator"]] = dict(row, per_joule_shown=shown(row["result_per_joule"]))
    return [EnergyCompareRow(label, [cells.get(slug) for slug in slugs]) for label, cells in sorted(by_key.items())]


async def read_compare_energy(db, slugs) -> list[EnergyCompareRow]:
    """The compare page's energy rows of the picked accelerators."""
    found = (await db.execute(COMPARE_ENERGY_SQL.format(picked=picked_sql(slugs)), picked_params(slugs))).rows
    return energy_compare_rows(slugs, [dict(r) for r in found])


def usd(value: float) -> str:
    """A cost in USD: cents above a dollar ($6.64), else two significant digits however small ($0.0025, $0.11)."""
    if value >= 1 or value <= 0:
        return f"${value:,.2f}"
    return f"${value:.{1 - math.floor(math.log10(value))}f}"


def shown(value: float) -> str:
    """Thousands apart and no false precision: 3 significant digits below 100 (7.24 samples/s), whole above."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def per_accelerator_unit(units: str) -> str:
    return f"{units} per accelerator"


def picked_sql(slugs):
    return ", ".join(f":p{i}" for i in range(len(slugs)))


def picked_params(slugs):
    return {f"p{i}": slug for i, slug in enumerate(slugs)}


def result_rows(rows, latest_only=True):
    """{accelerator: [ResultRow]} from RESULTS_SQL rows (best first in each group); with `latest_only`,
    only the latest round of each accelerator, benchmark, accuracy target and scenario."""
    latest = {}
    for r in rows:
        series = (r["accelerator"], r["benchmark"], r["accuracy_target"], r["scenario"])
        latest[series] = max(latest.get(series, r["round_number"]), r["round_number"])
    groups = {}
    for r in rows:
        if latest_only and r["round_number"] != latest[(r["accelerator"], r["benchmark"], r["accuracy_target"], r["scenario"])]:
            continue
        key = Benchmark(r["benchmark"], r["accuracy_target"], r["scenario"], r["round"])
        groups.setdefault((r["accelerator"], key), []).append(r)
    out = {}
    # tokens/s benchmarks (the LLMs) first, then by benchmark, target, scenario and round
    for (accelerator, key), members in sorted(groups.items(), key=lambda item: (
            item[1][0]["units"] != TOKENS, item[0][1].benchmark, item[0][1].accuracy_target or "",
            item[0][1].scenario, item[1][0]["round_number"])):
        values = [m["result_per_accelerator"] for m in members]
        out.setdefault(accelerator, []).append(ResultRow(key, per_accelerator_unit(members[0]["units"]), members[0],
                                                         statistics.median(values), len(values)))
    return out


async def read(db, slugs, latest_only=True):
    """(result rows by accelerator, achieved rows by accelerator) of the accelerators `slugs`."""
    picked, params = picked_sql(slugs), picked_params(slugs)
    results = await db.execute(RESULTS_SQL.format(picked=picked), params)
    achieved = await db.execute(ACHIEVED_SQL.format(picked=picked), params)
    rates = {}
    for r in achieved.rows:
        rates.setdefault(r["accelerator"], []).append(dict(r))
    return result_rows([dict(r) for r in results.rows], latest_only), rates


@dataclass
class CompareRow:
    """One comparable measure across the compared accelerators: a cell per column, None where it has none."""

    label: str
    unit: str
    cells: list

    @property
    def single(self) -> bool:
        """Whether only one of several accelerators has this row (the page folds such rows, never drops them)."""
        return len(self.cells) > 1 and sum(cell is not None for cell in self.cells) == 1


def compare_rows(slugs, results, rates):
    """Like with like: a row per benchmark, accuracy target, scenario and round (the best result of each
    accelerator), then a row per achieved measure, precision and source (its percentage of peak). A row one
    accelerator lacks stays, its cell saying so: a missing result is an answer too."""
    by_key = {}
    for slug in slugs:
        for row in results.get(slug, []):
            by_key.setdefault((row.key.label, row.unit), {})[slug] = row
    rows = [CompareRow(label, unit, [cells.get(slug) for slug in slugs]) for (label, unit), cells in sorted(by_key.items())]
    by_rate = {}
    for slug in slugs:
        for rate in rates.get(slug, []):
            label = f"{rate['measure']} {rate['precision'] or ''} ({rate['source']})".replace("  ", " ")
            best = by_rate.setdefault((label, "% of peak"), {})
            if slug not in best or (rate["percent_of_peak"] or 0) > (best[slug]["percent_of_peak"] or 0):
                best[slug] = rate
    return rows + [CompareRow(label, unit, [cells.get(slug) for slug in slugs])
                   for (label, unit), cells in sorted(by_rate.items())]
