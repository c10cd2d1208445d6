"""Hostile load: do 8 normal clients keep their p95 while 3 clients send the heaviest request each page accepts?

    python bench/hostile_load.py                   # data/ built, 8 normal + 3 hostile clients, 20 s per phase
    python bench/hostile_load.py --seconds 10
    python bench/hostile_load.py --kind chart      # only the hostile requests of one kind

Builds data/ into bench/out/hostile/computekb.db and runs `computekb serve` on it
on a free loopback port (the server as deployed: uvicorn with httptools, the SQL
cap of plugins/sql_cap.py, the bounds of plugins/limits.py). Phase one: the
normal clients alone, over load_test.py's mix of pages. Phase two: the same,
while each hostile client sends, one after the other, the heaviest request of
every page kind (`hostile_requests`): a table with `_size=max`, `_facet_size=max`
and a facet on every column (and within the bounds: five facets), table CSVs
streamed and whole, the database download, the search page and the search query at
their word limit and past it, what-fits for the largest model in FP32 at a
million tokens (it fits nowhere), a dashboard chart never drawn before (350 of them:
the longest charts at every width and filter state), the finder with a costly `_where`, compare of
eight accelerators, the largest spec sheet, the sizing canned queries at their
largest parameters, `?sql=` queries that used to hold an SQL thread for a minute
or more (`randomblob`, `printf` widths, `instr` and `replace` of long strings,
`llm_size` with 10^8 heads, an endless recursive CTE), and huge results (600
rows of 100 KB, the citations table streamed as CSV). Prints the normal
clients' p50, p95 and slowest answer in each phase, the p95 ratio, and per
hostile kind the statuses and the slowest answer. The goals: a p95 ratio of at
most 2, and no request, normal or hostile, slower than sql_time_limit_ms plus a
second (the capped requests' wait for their turn included in that second).
"""

import argparse
import asyncio
import collections
import contextlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load_test import timed_get, urls_by_kind, worker  # noqa: E402 (after the path is set)
from bench.serve_bench import percentile  # noqa: E402 (after the path is set)
from etl.build import build_database  # noqa: E402 (after the path is set)
from serving.charts import WIDTHS  # noqa: E402 (after the path is set)
from serving.serve import SETTINGS, free_port, wait_until_up  # noqa: E402 (after the path is set)

NORMAL, HOSTILE_CLIENTS = 8, 3
TWELVE_WORDS = "memoire memory vram cache cout cost quantification quantization interconnexion bande gpu kv"
LONG = "printf('%.*c', 99999, 'a') || 'b'"
HEADS = '{"layers": 80, "hidden_size": 8192, "attention_heads": 100000000, "kv_heads": 8, "head_dim": 128, ' \
        '"intermediate_size": 28672, "vocab_size": 128256, "attention": "gqa"}'
BITS = '{"embedding": 16, "output_head": 16, "attention": 16, "dense_ffn": 16, "experts": 16, "other": 16}'


def sql(query):
    return "/computekb.json?" + urllib.parse.urlencode({"sql": query})


def hostile_requests(db):
    """{page kind: [the heaviest requests of that kind]}, with slugs from the database."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        columns = [name for _, name, *_ in conn.execute("pragma table_info(benchmark_results)")]
        model = conn.execute("select slug from models order by computed_params_b desc limit 1").fetchone()[0]
        fastest = [s for (s,) in conn.execute("select slug from accelerators order by memory_bandwidth_gbs desc limit 8")]
        sheet = conn.execute("select accelerator from throughput group by 1 order by count(*) desc limit 1").fetchone()[0]
    sizing = {"model": model, "weight_format": "fp32", "kv_format": "fp32"}
    return {
        "search": ["/-/search?" + urllib.parse.urlencode({"q": TWELVE_WORDS}),
                   "/-/search?" + urllib.parse.urlencode({"q": " ".join(["memory"] * 300)}),
                   "/computekb/search-articles.json?" + urllib.parse.urlencode({"q": TWELVE_WORDS})],
        "what-fits": ["/-/what-fits?" + urllib.parse.urlencode(
            {"model": model, "weights": "format:fp32", "kv_format": "fp32", "context": "1M", "batch": "999999999"})],
        "finder": ["/-/accelerators?" + urllib.parse.urlencode({"_where": f"instr({LONG}, {LONG}) > 0"}),
                   "/-/accelerators?" + urllib.parse.urlencode({"_where": "randomblob(1000000000) is not null"})],
        "compare": ["/-/compare?ids=" + ",".join(fastest)],
        "spec sheet": [f"/computekb/accelerators/{sheet}"],
        "canned query": [
            "/computekb/what-fits.json?" + urllib.parse.urlencode({**sizing, "context": "999999999", "batch": "999999999"}),
            "/computekb/longest-context.json?" + urllib.parse.urlencode(
                {**sizing, "batch": "999999999", "max_context": "999999999"}),
            "/computekb/largest-batch.json?" + urllib.parse.urlencode({**sizing, "context": "999999999"})],
        "?sql=": [
            sql("select count(randomblob(1000000000)) from accelerators"),
            sql("select printf('%.*c', 1000000000, 'x')"),
            sql(f"select instr({LONG}, {LONG}), instr({LONG}, {LONG}), instr({LONG}, {LONG})"),
            sql(f"select replace({LONG}, 'a', {LONG})"),
            sql(f"select llm_size('{HEADS}', '{BITS}', 80, 3350, 1024, 1, 16, null, null, 0.9)"),
            sql("with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"),
            "/computekb/accelerators.json?" + urllib.parse.urlencode({"_where": "randomblob(1000000000) is not null"})],
        "table facets": [
            "/computekb/benchmark_results?_size=max&_facet_size=max&" + "&".join(f"_facet={c}" for c in columns),
            "/computekb/benchmark_results.json?_size=max&_facet_size=max&" + "&".join(f"_facet={c}" for c in columns[:5]),
            "/computekb/benchmark_results?_size=100&_facet_size=max&" + "&".join(f"_facet={c}" for c in columns[:5])],
        "CSV stream": ["/computekb/benchmark_results.csv?_stream=on&_size=max", "/computekb/benchmark_results.csv?_size=max"],
        "download": ["/computekb.db"],
        # a chart not drawn before each time: the longest charts at every width and many row sets
        "chart": [f"/-/charts/accelerator-landscape/{chart}.svg?min_memory={gb}&width={width}"
                  for gb in range(0, 200, 8) for width in WIDTHS for chart in ("dense-fp8-fp4", "bandwidth-per-watt")],
        "huge result": [
            sql("with recursive c(x) as (select 1 union all select x + 1 from c limit 600) select zeroblob(99999) from c"),
            "/computekb/citations.csv?_stream=on&_size=max",
            "/computekb/accelerators.csv?" + urllib.parse.urlencode(
                {"_where": "randomblob(1000000000) is not null", "_stream": "on"})],
    }


async def hostile(client, base, requests, index, stop, results):
    """Send every hostile request in turn (starting at `index`) until `stop`."""
    i = index
    while time.monotonic() < stop:
        kind, path = requests[i % len(requests)]
        i += 1
        await timed_get(client, base, kind, path, results)


async def phase(base, kinds, seconds, requests=None):
    normal, bad = [], []
    limits = httpx.Limits(max_connections=NORMAL + HOSTILE_CLIENTS)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        stop = time.monotonic() + seconds
        tasks = [worker(client, base, kinds, random.Random(i), stop, normal) for i in range(NORMAL)]
        if requests:
            tasks += [hostile(client, base, requests, i * len(requests) // HOSTILE_CLIENTS, stop, bad)
                      for i in range(HOSTILE_CLIENTS)]
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


def hostile_summary(bad):
    """Print, per hostile kind, how many requests, their statuses and the slowest; return the slowest of all."""
    by_kind = collections.defaultdict(list)
    for kind, seconds, status, _ in bad:
        by_kind[kind].append((seconds, status))
    for kind, answers in by_kind.items():
        statuses = collections.Counter(str(status) for _, status in answers)
        print(f"  {kind:14} requests {len(answers):4}  statuses {', '.join(f'{s} x{n}' for s, n in sorted(statuses.items())):28}"
              f"  slowest {max(s for s, _ in answers):5.2f} s")
    return max(r[1] for r in bad)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20, help="Duration of each phase (at most 120).")
    parser.add_argument("--kind", action="append", help="Send only the hostile requests of this kind (repeatable).")
    args = parser.parse_args()
    if not 0 < args.seconds <= 120:
        parser.error("--seconds must be at most 120")
    db = ROOT / "bench" / "out" / "hostile" / "computekb.db"
    build_database(ROOT / "data", db, allow_shrink=True)
    limit_s = SETTINGS["sql_time_limit_ms"] / 1000
    # kind after kind, each kind's requests in turn: every kind is sent as often, and a chart is a new one each time
    by_kind = {kind: paths for kind, paths in hostile_requests(db).items() if not args.kind or kind in args.kind}
    if not by_kind:
        parser.error(f"no hostile requests of the kinds {args.kind}")
    longest = max(len(paths) for paths in by_kind.values())
    requests = [(kind, paths[i % len(paths)]) for i in range(longest) for kind, paths in by_kind.items()]
    with computekb_serve(db) as base:
        kinds = urls_by_kind(db, random.Random(1))
        print(f"{base}: {NORMAL} normal clients, then {NORMAL} + {HOSTILE_CLIENTS} hostile, {args.seconds:.0f} s each; "
              f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
        asyncio.run(phase(base, kinds, 2))  # warm-up
        alone, _ = asyncio.run(phase(base, kinds, args.seconds))
        together, bad = asyncio.run(phase(base, kinds, args.seconds, requests))
    before, _ = summary("normal, alone", alone)
    after, slowest_together = summary("normal, with hostile", together)
    print(f"p95 ratio {after / before:.2f} (goal: at most 2)")
    print(f"hostile: {len(bad)} requests of {len(set(requests))} kinds of request")
    slowest_hostile = hostile_summary(bad)
    print(f"slowest request {max(slowest_together, slowest_hostile):.2f} s: normal {slowest_together:.2f} s, "
          f"hostile {slowest_hostile:.2f} s (goal: at most {limit_s + 1:.0f} s, sql_time_limit_ms plus a second)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
