"""Serving benchmark: this project's Datasette against plain `datasette -i`, same database.

    python bench/serve_bench.py                  # synthetic 100k-record database
    python bench/serve_bench.py --records 10000 --requests 30

Three servers run on loopback ports of this machine, started here and stopped
at the end: `computekb` with exactly the options of `computekb serve`
(metadata, plugins, templates, settings, inspect file); `no extras`, the same
without what row pages add (plugins/cite.py and the row templates: the
citation block and the sources of every value); `plain`, `datasette -i DB`
alone. The database file is read through once first, then the same requests
go to all three in turn, each server first in turn, so that background load
and the system's file cache favour none: --requests per page per server after
--warmup, and never longer than
--deadline seconds in all. Prints p50 and p95 per page and server, and the
ratio of each p50 to plain's. Pages that only this project has (compare,
dashboard) have no ratio.
"""

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.generate import generate  # noqa: E402
from etl.build import build_database, display_path  # noqa: E402
from serving.serve import datasette_args, free_port, wait_until_up  # noqa: E402


def start(args):
    """Start `datasette` with `args` on a free loopback port; return (process, base URL)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "datasette"] + args + ["--host", "127.0.0.1", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    if wait_until_up(url, process):
        return process, url
    process.kill()
    raise RuntimeError(f"datasette {' '.join(args)} did not start")


def ours(db):
    args = datasette_args(db, "127.0.0.1", 0)
    return args[:args.index("--host")] + args[args.index("--port") + 2:]


ROW_EXTRAS = {"plugins": ["cite.py"], "templates": ["_cite.html", "row-computekb-accelerators.html", "row-computekb-articles.html"]}


def without_row_extras(db, work):
    """`ours`, with copies of the plugins and templates folders that leave out what row pages add."""
    args = ours(db)
    for option, folder in (("--plugins-dir", "plugins"), ("--template-dir", "templates")):
        copy = shutil.copytree(ROOT / folder, work / folder, ignore=shutil.ignore_patterns(*ROW_EXTRAS[folder], "__pycache__"))
        args[args.index(option) + 1] = str(copy)
    return args


def pages(db):
    """The same kinds of page on both servers, with values taken from the database.

    A page is one path, or a list of paths requested in turn (`path_at`)."""
    with sqlite3.connect(db) as conn:
        # Row pages go through different accelerators in turn, as visitors do: nothing
        # a server keeps from one request (SQLite's page cache, cached cell values)
        # can serve the same row twice in a row.
        every = [s for (s,) in conn.execute("select slug from accelerators order by slug")]
        accelerators = every[::max(1, len(every) // 200)]
        compared = [s for (s,) in conn.execute("select slug from accelerators order by slug limit 3")]
    word = search_word(db)
    with sqlite3.connect(db) as conn:
        currency = conn.execute("select currency from cloud_offers group by currency order by count(*) desc").fetchone()[0]
    return {
        "row page": [f"/computekb/accelerators/{slug}" for slug in accelerators],
        "table page": "/computekb/articles",
        "filtered + faceted": f"/computekb/cloud_offers?currency={currency}&_facet=provider&_facet=accelerator",
        "filtered + faceted (articles)": "/computekb/articles?language=fr&_facet=category&_facet=site",
        "search": f"/computekb/articles?_search={word}",
        "search page": f"/computekb/search-articles?q={word}",
        "reader search": f"/-/search?q={word}",
        "compare page": "/-/compare?ids=" + ",".join(compared),
        "dashboard": "/-/dashboards/accelerator-landscape",
    }


def search_word(db):
    """The word the search pages ask for: the second word of the first title."""
    with sqlite3.connect(db) as conn:
        return conn.execute("select title from articles where title is not null limit 1").fetchone()[0].split()[1]


def fts_alone(db, word, requests):
    """p50 and p95 in ms of FTS5 alone finding the matches of `word` (their rowids, in-process)."""
    times = []
    with sqlite3.connect(f"file:{db}?immutable=1", uri=True) as conn:
        for _ in range(requests):
            started = time.perf_counter()
            matches = conn.execute("select rowid from articles_fts where articles_fts match ?", (f'"{word}"',)).fetchall()
            times.append(time.perf_counter() - started)
    return len(matches), percentile(times, 50) * 1000, percentile(times, 95) * 1000


def path_at(path, i):
    return path if isinstance(path, str) else path[i % len(path)]


def timed_get(client, url):
    started = time.perf_counter()
    response = client.get(url)
    return time.perf_counter() - started, response.status_code


def percentile(values, p):
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if len(values) > 1 else values[0]


def first_in_turn(names, i):
    """`names`, the i-th first: the first server to ask for a page may read it from
    disk, the others then find it in the system's file cache."""
    k = i % len(names)
    return names[k:] + names[:k]


def read_through(path):
    """Read the whole file once, so that it starts in the system's file cache for every server."""
    with open(path, "rb") as file:
        while file.read(1 << 24):
            pass


def run(servers, paths, requests, warmup, deadline):
    """{page: {server: [seconds]}}, each request sent to every server, the first in turn."""
    times = {page: {name: [] for name in servers} for page in paths}
    statuses = {page: {} for page in paths}
    stop = time.monotonic() + deadline
    with httpx.Client(timeout=30) as client:
        for page, path in paths.items():
            for i in range(warmup + requests):
                if time.monotonic() > stop:
                    break
                for name in first_in_turn(list(servers), i):
                    seconds, status = timed_get(client, servers[name] + path_at(path, i))
                    statuses[page][name] = status
                    if i >= warmup:
                        times[page][name].append(seconds)
    return times, statuses


def report(times, statuses, servers):
    """One line per page: p50 and p95 of each server, then each p50 over plain's (the last server)."""
    names = list(servers)
    print(f"{'page':30} " + " ".join(f"{n + ' p50':>15} {n + ' p95':>15}" for n in names)
          + " " + " ".join(f"{n + '/' + names[-1]:>20}" for n in names[:-1]))
    for page, by_server in times.items():
        cells, p50 = [], {}
        for name in names:
            values = by_server[name]
            if statuses[page].get(name) != 200 or not values:
                cells.append(f"{'HTTP ' + str(statuses[page].get(name)):>15} {'':>15}")
                continue
            p50[name] = percentile(values, 50) * 1000
            cells.append(f"{p50[name]:13.1f}ms {percentile(values, 95) * 1000:13.1f}ms")
        ratios = [f"{p50[n] / p50[names[-1]]:20.2f}" if n in p50 and names[-1] in p50 else f"{'-':>20}" for n in names[:-1]]
        print(f"{page:30} " + " ".join(cells) + " " + " ".join(ratios))


def database(records, work):
    # Named computekb.db: the database name is the file's stem, and the metadata is for `computekb`.
    data, db = work / f"data-{records}", work / f"serve-{records}" / "computekb.db"
    if not db.exists():
        build_database(generate(data, records), db)
    return db


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100000, help="Synthetic records in the database.")
    parser.add_argument("--db", type=Path, help="Use this database instead of a synthetic one.")
    parser.add_argument("--requests", type=int, default=50, help="Timed requests per page and server.")
    parser.add_argument("--warmup", type=int, default=5, help="Untimed requests per page and server first.")
    parser.add_argument("--deadline", type=float, default=600, help="Stop sending requests after this many seconds.")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out", help="Work folder.")
    args = parser.parse_args()
    db = args.db or database(args.records, args.out)
    with tempfile.TemporaryDirectory() as work:  # the `no extras` plugins and templates, read while serving
        configurations = {"computekb": ours(db), "no extras": without_row_extras(db, Path(work)),
                          "plain": ["serve", "-i", str(db)]}
        processes = []
        try:
            for name, args_ in configurations.items():
                processes.append((name, *start(args_)))
            servers = {name: url for name, _, url in processes}
            read_through(db)
            print(f"{display_path(db)}: {db.stat().st_size / 1e6:.0f} MB; {os.cpu_count()} cores; "
                  f"load average {os.getloadavg()[0]:.2f}")
            times, statuses = run(servers, pages(db), args.requests, args.warmup, args.deadline)
            report(times, statuses, servers)
            word = search_word(db)
            matches, p50, p95 = fts_alone(db, word, args.requests)
            print(f"FTS5 alone, the {matches} matches of {word!r}: p50 {p50:.1f}ms, p95 {p95:.1f}ms")
        finally:
            for _, process, _ in processes:
                process.terminate()
                process.wait(10)

if __name__ == "__main__":
    main()
