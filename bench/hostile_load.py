"""Hostile load: do 8 normal clients keep their p95 while 3 clients send hostile queries?

    python bench/hostile_load.py                   # data/ built, 8 normal + 3 hostile clients, 20 s per phase
    python bench/hostile_load.py --seconds 10

Builds data/ into bench/out/hostile/computekb.db and runs `computekb serve` on it
on a free loopback port (the server as deployed: uvicorn with httptools, the SQL
cap of plugins/sql_cap.py). Phase one: the normal clients alone, over
load_test.py's mix of pages. Phase two: the same, while each hostile client
sends, one after the other, queries that each used to hold an SQL thread for a
minute or more (`randomblob(1000000000)` in SQL, in `_where`, in a streamed CSV;
a billion-character `printf`) and one that computes for the whole time limit (an
endless recursive CTE). Prints the normal clients' p50, p95 and slowest answer
in each phase, the p95 ratio, and what the hostile requests got: how many of
each status and the slowest answer. The goals: a p95 ratio of at most 2, and no
normal answer slower with the hostile clients than sql_time_limit_ms plus a
second beyond the slowest alone.
"""

import argparse
import asyncio
import collections
import contextlib
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load_test import urls_by_kind, worker  # noqa: E402 (after the path is set)
from bench.serve_bench import percentile  # noqa: E402 (after the path is set)
from etl.build import build_database  # noqa: E402 (after the path is set)
from etl.serve import SETTINGS, free_port, wait_until_up  # noqa: E402 (after the path is set)

NORMAL, HOSTILE_CLIENTS = 8, 3
HOSTILE = [
    "/computekb.json?sql=select count(randomblob(1000000000)) from accelerators",
    "/computekb/accelerators.json?_where=randomblob(1000000000) is not null",
    "/computekb/accelerators.csv?_where=randomblob(1000000000) is not null&_stream=on",
    "/computekb.json?sql=select printf('%.*c', 1000000000, 'x')",
    "/computekb.json?sql=with recursive c(x) as (select 1 union all select x %2B 1 from c) select count(*) from c",
]


async def hostile(client, base, index, stop, results):
    i = index
    while time.monotonic() < stop:
        path = HOSTILE[i % len(HOSTILE)]
        i += 1
        started = time.perf_counter()
        try:
            status = (await client.get(base + path)).status_code
        except httpx.HTTPError as error:
            status = type(error).__name__
        results.append((path, time.perf_counter() - started, status))


async def phase(base, kinds, seconds, with_hostile):
    normal, bad = [], []
    limits = httpx.Limits(max_connections=NORMAL + HOSTILE_CLIENTS)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        stop = time.monotonic() + seconds
        tasks = [worker(client, base, kinds, random.Random(i), stop, normal) for i in range(NORMAL)]
        if with_hostile:
            tasks += [hostile(client, base, i, stop, bad) for i in range(HOSTILE_CLIENTS)]
        await asyncio.gather(*tasks)
    return normal, bad


@contextlib.contextmanager
def computekb_serve(db):
    """`computekb serve` of `db` (built from data/, so not rebuilt) on a free loopback port; yields its URL."""
    command = shutil.which("computekb", path=os.path.dirname(sys.executable)) or shutil.which("computekb")
    if command is None:
        sys.exit("the `computekb` command is not installed: pip install -e .")
    port = free_port()
    process = subprocess.Popen([command, "serve", "--db", str(db), "--data", str(ROOT / "data"), "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=db.parent)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_up(url, process):
            raise RuntimeError("computekb serve did not start")
        yield url
    finally:
        process.terminate()
        process.wait(10)


def summary(name, results):
    """Print one phase's figures for the normal clients; return (p95, slowest) in seconds."""
    seconds = [r[1] for r in results]
    errors = sum(r[2] != 200 for r in results)
    p50, p95, slowest = percentile(seconds, 50), percentile(seconds, 95), max(seconds)
    print(f"{name:24} requests {len(results):5}  errors {errors:3}  p50 {p50 * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms"
          f"  slowest {slowest * 1000:7.1f} ms")
    return p95, slowest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20, help="Duration of each phase (at most 120).")
    args = parser.parse_args()
    if not 0 < args.seconds <= 120:
        parser.error("--seconds must be at most 120")
    db = ROOT / "bench" / "out" / "hostile" / "computekb.db"
    build_database(ROOT / "data", db, allow_shrink=True)
    limit_s = SETTINGS["sql_time_limit_ms"] / 1000
    with computekb_serve(db) as base:
        kinds = urls_by_kind(db, random.Random(1))
        print(f"{base}: {NORMAL} normal clients, then {NORMAL} + {HOSTILE_CLIENTS} hostile, {args.seconds:.0f} s each; "
              f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
        asyncio.run(phase(base, kinds, 2, False))  # warm-up
        alone, _ = asyncio.run(phase(base, kinds, args.seconds, False))
        together, bad = asyncio.run(phase(base, kinds, args.seconds, True))
    before, slowest_alone = summary("normal, alone", alone)
    after, slowest_together = summary("normal, with hostile", together)
    print(f"p95 ratio {after / before:.2f} (goal: at most 2)")
    print(f"slowest normal answer {slowest_together - slowest_alone:+.2f} s with the hostile clients "
          f"(goal: at most {limit_s + 1:.0f} s, sql_time_limit_ms plus a second)")
    statuses = collections.Counter(str(r[2]) for r in bad)
    print(f"hostile: {len(bad)} requests, statuses {', '.join(f'{s} x{n}' for s, n in sorted(statuses.items()))}, "
          f"slowest {max(r[1] for r in bad):.2f} s")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
