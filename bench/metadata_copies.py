"""How much of a page's time Datasette spends copying and merging the metadata.

    python bench/metadata_copies.py                                   # the 100k-record serving database
    python bench/metadata_copies.py --db computekb.db --requests 50

Datasette 0.65's table permission check (`_table_permission_allows`) deep-copies
every metadata source, on every check, and a page makes several checks; and
every `datasette.metadata()` lookup (`plugin_config()` included, which some
render_cell plugins call for every cell) merges the metadata sources again.
Both costs grow with the size of the metadata, so plain `datasette -i` (no
metadata) does not pay them. This script serves the database in-process
exactly as `computekb serve` does (etl.serve.make_datasette), counts and times
those copies and lookups, per page of the serving benchmark (the times
overlap: a lookup can be inside a permission check). Only a patch of
Datasette's internals could avoid them (one was removed: docs/BENCHMARKS.md),
so this shows what they cost, and how the size of the metadata weighs on it.
To count them, this script (not the server) stands in for Datasette's `copy`
module and its `metadata` method while it runs.
"""

import argparse
import asyncio
import copy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import datasette.app  # noqa: E402

from bench.serve_bench import pages, path_at  # noqa: E402
from serving.serve import make_datasette  # noqa: E402


class Tally:
    """Calls and seconds spent in them."""

    def __init__(self):
        self.calls, self.seconds = 0, 0.0


class CountedCopies(Tally):
    """Stands in for the `copy` module inside datasette.app: counts and times top-level deep copies."""

    def __getattr__(self, name):  # anything else of the copy module, unchanged
        return getattr(copy, name)

    def deepcopy(self, value, memo=None):
        if memo is not None:
            return copy.deepcopy(value, memo)
        started = time.perf_counter()
        try:
            return copy.deepcopy(value)
        finally:
            self.calls += 1
            self.seconds += time.perf_counter() - started


def counted_lookups(lookups):
    """Datasette.metadata, counting and timing its calls into `lookups`."""
    original = datasette.app.Datasette.metadata

    def metadata(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            lookups.calls += 1
            lookups.seconds += time.perf_counter() - started
    return metadata


async def measure(db, requests):
    copies, lookups = CountedCopies(), Tally()
    datasette.app.copy = copies
    datasette.app.Datasette.metadata = counted_lookups(lookups)
    ds = make_datasette(db)
    await ds.invoke_startup()
    paths = {"database page": "/computekb", **pages(db)}
    print(f"{'page':30} {'copies':>8} {'copy ms':>8} {'lookups':>8} {'lookup ms':>10} {'page ms':>8}")
    for page, path in paths.items():
        await ds.client.get(path_at(path, 0))  # warm-up
        for counter in (copies, lookups):
            counter.calls, counter.seconds = 0, 0.0
        started = time.perf_counter()
        for i in range(requests):
            response = await ds.client.get(path_at(path, i))
        seconds = (time.perf_counter() - started) / requests
        if response.status_code == 200:
            print(f"{page:30} {copies.calls / requests:8.0f} {copies.seconds / requests * 1000:8.2f} "
                  f"{lookups.calls / requests:8.0f} {lookups.seconds / requests * 1000:10.2f} {seconds * 1000:8.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=ROOT / "bench" / "out" / "serve-100000" / "computekb.db")
    parser.add_argument("--requests", type=int, default=20, help="Requests per page.")
    args = parser.parse_args()
    asyncio.run(measure(args.db, args.requests))


if __name__ == "__main__":
    main()
