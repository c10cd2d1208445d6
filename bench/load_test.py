"""Load test: concurrent clients against `computekb serve` on loopback, bounded in time.

    python bench/load_test.py                         # data/ built, 8 clients, 30 s
    python bench/load_test.py --clients 4 --seconds 10
    python bench/load_test.py --url http://127.0.0.1:8001   # a server already running here

Without --url it builds data/ into bench/out/load/computekb.db and starts a
server with exactly the options of `computekb serve` (bench/serve_bench.py's
launcher) on a free loopback port, stopped at the end. --clients workers share
one HTTP connection pool and each sends its next request as soon as the last
one is answered, for --seconds, over a seeded mix of page kinds: row, table,
facet, search, unit filter, dashboard, chart and compare pages (URLs taken from the
database). Any answer other than 200 counts as an error. Prints throughput,
p50/p95/p99 latency (all pages and per kind) and the error count.
"""

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import time
import urllib.parse
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.serve_bench import ours, percentile, start  # noqa: E402
from etl.build import build_database  # noqa: E402
from serving.metadata import full_metadata  # noqa: E402
from serving.paths import METADATA_YML  # noqa: E402

MAX_CLIENTS, MAX_SECONDS = 32, 120
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def slugs(conn, table):
    return [slug for (slug,) in conn.execute(f"select slug from [{table}] order by slug")]


def search_words(conn):
    """Longer words of article titles: real searches that find something."""
    titles = conn.execute("select title from articles where title is not null")
    words = {w.strip(",.:;!?()'\"").lower() for (title,) in titles for w in title.split()}
    return sorted(w for w in words if len(w) >= 6 and w.isalpha())[:40]


def urls_by_kind(db, rng):
    """{kind: [paths]}, built from the database and the metadata."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        accelerators = slugs(conn, "accelerators")
        kinds = {
            "row": [f"/computekb/{table}/{slug}" for table in ("accelerators", "articles", "sources")
                    for slug in slugs(conn, table)],
            "table": ["/computekb/accelerators", "/computekb/articles", "/computekb/citations",
                      "/computekb/throughput", "/computekb/sources"],
            "facet": ["/computekb/accelerators?_facet=vendor&_facet=device_class",
                      "/computekb/articles?language=fr&_facet=category&_facet=site",
                      "/computekb/citations?_facet=table_name&_facet=kind"],
            "search": [f"/computekb/articles?_search={urllib.parse.quote(w)}" for w in search_words(conn)],
            "unit filter": [f"/computekb/accelerators?memory_bandwidth_gbs__gt={v}"
                            for v in ("1TB/s", "3 TB/s", "2000")],
            "compare": ["/-/compare?ids=" + ",".join(rng.sample(accelerators, min(3, len(accelerators))))
                        for _ in range(20)],
        }
    dashboards = full_metadata(METADATA_YML).get("plugins", {}).get("datasette-dashboards", {})
    kinds["dashboard"] = [f"/-/dashboards/{slug}" for slug in dashboards]
    # what a dashboard page then asks for: each chart's picture at a desktop's and a phone's width
    kinds["chart"] = [f"/-/charts/{slug}/{chart}.svg?width={width}" for slug, dashboard in dashboards.items()
                      for chart, config in dashboard["charts"].items() if config.get("library") == "vega-lite"
                      for width in (320, 640)]
    return {kind: paths for kind, paths in kinds.items() if paths}


async def timed_get(client, base, kind, path, results):
    """GET `path`; appends (kind, seconds, status or the error's name, path) to `results`."""
    started = time.perf_counter()
    try:
        status = (await client.get(base + path)).status_code
    except httpx.HTTPError as error:
        status = type(error).__name__
    results.append((kind, time.perf_counter() - started, status, path))


async def worker(client, base, kinds, rng, stop, results):
    while time.monotonic() < stop:
        kind = rng.choice(sorted(kinds))
        await timed_get(client, base, kind, rng.choice(kinds[kind]), results)


async def load(base, kinds, clients, seconds, seed):
    results = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        for path in (paths[0] for paths in kinds.values()):  # warm-up: one of each kind
            await client.get(base + path)
        stop = time.monotonic() + seconds
        started = time.perf_counter()
        await asyncio.gather(*(worker(client, base, kinds, random.Random(seed + i), stop, results)
                               for i in range(clients)))
        elapsed = time.perf_counter() - started
    return results, elapsed


def report(results, elapsed):
    errors = [r for r in results if r[2] != 200]
    print(f"requests {len(results)}, errors {len(errors)}, throughput {len(results) / elapsed:.1f} req/s "
          f"over {elapsed:.1f} s")
    print(f"{'pages':12} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    groups = {"all": results} | {kind: [r for r in results if r[0] == kind] for kind in sorted({r[0] for r in results})}
    for kind, rows in groups.items():
        seconds = [r[1] for r in rows]
        print(f"{kind:12} {len(rows):6} " + " ".join(f"{percentile(seconds, p) * 1000:8.1f}" for p in (50, 95, 99)))
    for kind, _, status, path in errors[:10]:
        print(f"error: {status} {kind} {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="A server already running on this machine (loopback only).")
    parser.add_argument("--db", type=Path, help="Database to serve (default: data/ built into bench/out/load).")
    parser.add_argument("--clients", type=int, default=8, help=f"Concurrent clients (at most {MAX_CLIENTS}).")
    parser.add_argument("--seconds", type=float, default=30, help=f"Duration (at most {MAX_SECONDS}).")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not (0 < args.clients <= MAX_CLIENTS and 0 < args.seconds <= MAX_SECONDS):
        parser.error(f"--clients must be 1..{MAX_CLIENTS} and --seconds at most {MAX_SECONDS}")
    if args.url and urllib.parse.urlsplit(args.url).hostname not in LOOPBACK:
        parser.error("--url must be a server on this machine (127.0.0.1, localhost or ::1)")
    db = args.db or ROOT / "bench" / "out" / "load" / "computekb.db"
    if not args.db:
        build_database(ROOT / "data", db)
    process, base = (None, args.url.rstrip("/")) if args.url else start(ours(db))
    try:
        kinds = urls_by_kind(db, random.Random(args.seed))
        print(f"{base}: {args.clients} clients for {args.seconds:.0f} s; {os.cpu_count()} cores; "
              f"load average {os.getloadavg()[0]:.2f}; pages: " + ", ".join(f"{k} {len(v)}" for k, v in kinds.items()))
        results, elapsed = asyncio.run(load(base, kinds, args.clients, args.seconds, args.seed))
        report(results, elapsed)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        if process:
            process.terminate()
            process.wait(10)


if __name__ == "__main__":
    main()
