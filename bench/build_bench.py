"""Build benchmark: the build against its ceilings and against yaml-to-sqlite.

    python bench/build_bench.py                       # N = 1k, 10k, 100k records
    python bench/build_bench.py --sizes 1000,10000    # quicker

For each N it generates synthetic data (bench/generate.py) under --out and
times, each in its own process (so peak memory is that process's ru_maxrss,
its worker processes included), the best of --rounds runs. The rounds go
through every measurement in turn, so a slow spell of a shared machine hits
them all alike rather than one of them.

  parse ceiling   yaml.load(..., Loader=yaml.CSafeLoader) of every file, nothing else
  parse           our read stage alone (line tracking, duplicate keys)
  validate        our validate stage alone, on the parsed records, checks across files included
  transform+load  transform, load (staging, indexes, full-text search) and inspect file
  load ceiling    raw sqlite3 executemany of the rows of the built database into bare tables
  build, 1 / 2    `build_database` without the cache, on 1 and on 2 processes
  yaml-to-sqlite  its CLI loading the same records, one YAML list per table (one run)

Every measurement but `build, 2 processes` runs pinned to one core (sched
affinity), so "one core" holds even if a library used threads. Then a rebuild
after one file changed, on a data set of --rebuild-records records (about
10,000 files), with the parse cache warm.

    python bench/build_bench.py --breakdown 100000    # where one build's time goes, stage by stage
"""

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.generate import generate  # noqa: E402

KINDS = ("ceiling", "parse", "validate", "load", "load_ceiling", "build1", "build2", "yaml_to_sqlite")
LABELS = {"ceiling": "parse ceiling (C loader)", "parse": "parse (our read stage)", "validate": "validate",
          "load": "transform+load", "load_ceiling": "load ceiling (executemany)", "build1": "full build, 1 process",
          "build2": "full build, 2 processes", "yaml_to_sqlite": "yaml-to-sqlite", "rebuild": "rebuild, 1 file changed"}
BOTH_CORES = {"build2"}


def peak_mb():
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024  # Linux reports KiB


def cpu_seconds():
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def files_of(data):
    from etl.build import display_path
    from etl.read import data_files
    return [(display_path(p), p.read_bytes()) for p in data_files(data)]


def parsed(data):
    from etl.read import read_bytes
    return [read_bytes(raw, shown) for shown, raw in files_of(data)]


def validated(data):
    """Each file's validated rows and citations, checked across files."""
    from etl.validate import CrossCheck, file_keys, validate_records
    results, cross = [validate_records(records) for records, _ in parsed(data)], CrossCheck()
    for rows, partial, citations, problems in results:
        assert not problems, problems[:3]
        cross.add(*file_keys(rows, partial, citations))
    assert not cross.problems()
    return [(rows, citations) for rows, _, citations, _ in results]


def setup_and_run(kind, data, out):
    """Untimed setup, then the timed function."""
    import yaml

    from etl import build, load, transform, validate
    from serving.inspect_file import write_inspect
    if kind == "ceiling":
        paths = sorted(Path(data).rglob("*.yml"))
        return lambda: [yaml.load(p.read_bytes(), Loader=yaml.CSafeLoader) for p in paths]
    if kind == "parse":
        files = files_of(data)
        return lambda: [build.read_bytes(raw, shown) for shown, raw in files]
    if kind == "validate":
        per_file = [records for records, _ in parsed(data)]

        def run():
            cross = validate.CrossCheck()
            for records in per_file:
                rows, partial, citations, _ = validate.validate_records(records)
                cross.add(*validate.file_keys(rows, partial, citations))
            return cross.problems()
        return run
    if kind == "load":
        per_file = validated(data)

        def run():
            with load.StagingDatabase(out) as stage:
                for rows, citations in per_file:
                    stage.add(transform.file_tables(rows, citations))
                transform.cross_file_columns(stage)
                stage.finish({"data_release": "-", "data_hash": "-", "built_at": "-", "files": 0, "records": 0})
            write_inspect(out, out.with_suffix(".json"), out.stem)
        return run
    if kind == "load_ceiling":
        tables = built_rows(data, out)
        return lambda: raw_load(tables, out)
    if kind in ("build1", "build2"):
        return lambda: build.build_database(data, out, cache=False, workers=int(kind[-1]))
    if kind == "yaml_to_sqlite":
        folder = per_table_files(data, out.with_suffix(".yml.d"))
        return lambda: yaml_to_sqlite(folder, out)
    raise ValueError(kind)


def built_rows(data, out):
    """{table: rows} of the database the build makes of `data`, full-text index tables left out."""
    from etl.build import build_database
    build_database(data, out, cache=False, workers=1)
    with sqlite3.connect(out) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE '%fts%' AND name NOT LIKE 'sqlite_%'")]
        return {name: conn.execute(f"SELECT * FROM [{name}]").fetchall() for name in names}


def raw_load(tables, out):
    """The same rows into bare tables: no types, keys or indexes."""
    conn = sqlite3.connect(out)
    for name, rows in tables.items():
        if rows:
            conn.execute(f"CREATE TABLE [{name}] ({', '.join(f'c{i}' for i in range(len(rows[0])))})")
            conn.executemany(f"INSERT INTO [{name}] VALUES ({', '.join('?' * len(rows[0]))})", rows)
    conn.commit()
    conn.close()


def per_table_files(data, folder):
    """The same records as yaml-to-sqlite wants them: one YAML list per table."""
    import yaml
    tables = {}
    for records, _ in parsed(data):
        for record in records:
            tables.setdefault(record.table, []).append(plain(record.data))
    folder.mkdir(parents=True, exist_ok=True)
    for table, records in tables.items():
        (folder / f"{table}.yml").write_text(yaml.dump(records, Dumper=yaml.CSafeDumper, allow_unicode=True, sort_keys=False))
    return folder


def plain(value):
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return [plain(v) for v in value] if isinstance(value, list) else value


def yaml_to_sqlite(folder, out):
    for path in sorted(folder.glob("*.yml")):
        pk = ["--pk", "slug"] if path.stem not in ("throughput", "format_support") else []
        subprocess.run([sys.executable, "-c", "from yaml_to_sqlite.cli import cli; cli()", str(out), path.stem, str(path)] + pk,
                       check=True)


def measure(kind, data, out):
    """Child process: set up, time the run, print one JSON line."""
    if kind not in BOTH_CORES:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    out = Path(out)
    run = setup_and_run(kind, data, out)
    for leftover in (out, out.with_suffix(".json")):
        leftover.unlink(missing_ok=True)
    cpu, started = cpu_seconds(), time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "cpu": cpu_seconds() - cpu, "peak_mb": peak_mb(),
                      "db_mb": out.stat().st_size / 1e6 if out.exists() else None}))


def child(kind, data, out):
    result = subprocess.run([sys.executable, __file__, "--measure", kind, "--data", str(data), "--db", str(out)],
                            check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(result.stdout.strip().splitlines()[-1])


def best_of_rounds(kinds, data, work, n, rounds):
    """{kind: the fastest of `rounds` runs}, the rounds interleaved; yaml-to-sqlite runs once."""
    runs = {kind: [] for kind in kinds}
    for round_ in range(rounds):
        for kind in kinds:
            if kind != "yaml_to_sqlite" or round_ == 0:
                runs[kind].append(child(kind, data, work / f"{kind}-{n}.db"))
    return {kind: min(results, key=lambda r: r["seconds"]) for kind, results in runs.items()}


def rebuild(records, work, repeat):
    """Seconds to rebuild after one file changed, with the cache warm; and the file count."""
    from etl.build import build_database
    from etl.read import data_files
    data, db = generate(work / f"data-{records}", records), work / f"rebuild-{records}.db"
    build_database(data, db)
    changed = next(data.glob("articles/*.yml"))
    times = []
    for i in range(repeat):
        changed.write_text(changed.read_text().replace("reading_minutes: ", f"reading_minutes: 1{i}", 1))
        started = time.perf_counter()
        build_database(data, db)
        times.append(time.perf_counter() - started)
    return min(times), len(data_files(data))


BREAKDOWN = {  # where the time of one build goes: (module, attribute) of the stages timed
    "read (parse files)": ("etl.build", "read_bytes"), "validate": ("etl.build", "validate_records"),
    "transform (per file)": ("etl.build", "file_tables"), "slugs and references": ("etl.build", "file_keys"),
    "checks across files": ("etl.validate", "CrossCheck.add"), "stage rows": ("etl.load", "StagingDatabase.add"),
    "columns across files": ("etl.build", "cross_file_columns"), "copy, indexes, search": ("etl.load", "StagingDatabase.finish"),
}


def breakdown(n, work):
    """Seconds spent in each stage inside one build on one core (no cache); the rest is listing, reading, hashing."""
    import importlib

    from etl.build import build_database
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    spent = dict.fromkeys(BREAKDOWN, 0.0)

    def timed(label, function):
        def run(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - started
        return run
    for label, (module, name) in BREAKDOWN.items():
        owner = importlib.import_module(module)
        *classes, attribute = name.split(".")
        for cls in classes:
            owner = getattr(owner, cls)
        setattr(owner, attribute, timed(label, getattr(owner, attribute)))
    data = generate(work / f"data-{n}", n)
    started = time.perf_counter()
    build_database(data, work / f"breakdown-{n}.db", cache=False, workers=1)
    total = time.perf_counter() - started
    print(f"one build of N = {n:,} records on one core: {total * 1000:,.1f} ms")
    for label, seconds in spent.items():
        print(f"  {label:30} {seconds * 1000:9,.1f} ms")
    print(f"  {'the rest':30} {(total - sum(spent.values())) * 1000:9,.1f} ms  (listing, reading and hashing files, cache, pipeline)")


def report_size(n, results, files, yaml_mb):
    ceiling = results["ceiling"]["seconds"]
    print(f"\nN = {n:,} records: {files:,} files, {yaml_mb:.1f} MB of YAML, database {results['build1']['db_mb']:.1f} MB")
    print(f"  {'':30} {'seconds':>8} {'cpu s':>7} {'peak MB':>8} {'x ceiling':>9}")
    for kind in KINDS:
        r = results.get(kind)
        if r:
            print(f"  {LABELS[kind]:30} {r['seconds']:8.2f} {r['cpu']:7.2f} {r['peak_mb']:8.0f} {r['seconds'] / ceiling:9.2f}")
    one, two = results["build1"]["seconds"], results["build2"]["seconds"]
    print(f"  goal: build on 1 process / parse ceiling = {one / ceiling:.2f} (<= 1.3)")
    print(f"  goal: build on 2 processes / parse ceiling = {two / ceiling:.2f} (< 1)")
    if "yaml_to_sqlite" in results:
        print(f"  goal: yaml-to-sqlite / build = {results['yaml_to_sqlite']['seconds'] / min(one, two):.1f} (>= 5)")


def report_memory(by_size):
    """Peak memory of the 1-process build against N, beside the database's own size."""
    (small, first), (large, last) = by_size[0], by_size[-1]
    grown = (last["build1"]["peak_mb"] - first["build1"]["peak_mb"]) * 1e3 / (large - small)
    database = last["build1"]["db_mb"] * 1e3 / large
    print(f"\npeak memory of the build, 1 process: {first['build1']['peak_mb']:.0f} MB at N = {small:,}, "
          f"{last['build1']['peak_mb']:.0f} MB at N = {large:,}: {grown:.2f} KB per added record "
          f"(the database: {database:.2f} KB per record)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="Comma-separated record counts.")
    parser.add_argument("--rounds", type=int, default=3, help="Runs per measurement, interleaved; the best is kept.")
    parser.add_argument("--rebuild-records", type=int, default=25000, help="Records of the rebuild data set (about 10,000 files).")
    parser.add_argument("--no-yaml-to-sqlite", action="store_true", help="Skip yaml-to-sqlite (minutes at 100k records).")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out", help="Work folder (synthetic data, databases).")
    parser.add_argument("--breakdown", type=int, metavar="N", help="Only time the stages inside one build of N records.")
    parser.add_argument("--measure", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(args.measure, args.data, args.db)
    if args.breakdown:
        return breakdown(args.breakdown, args.out)
    work = args.out
    print(f"{os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.2f}")
    kinds = [k for k in KINDS if not (k == "yaml_to_sqlite" and args.no_yaml_to_sqlite)]
    by_size = []
    for n in (int(s) for s in args.sizes.split(",")):
        data = generate(work / f"data-{n}", n)
        files = list(data.rglob("*.yml"))
        results = best_of_rounds(kinds, data, work, n, args.rounds)
        report_size(n, results, len(files), sum(f.stat().st_size for f in files) / 1e6)
        by_size.append((n, results))
        shutil.rmtree(work / f"yaml_to_sqlite-{n}.yml.d", ignore_errors=True)
    if len(by_size) > 1:
        report_memory(by_size)
    seconds, files = rebuild(args.rebuild_records, work, args.rounds)
    print(f"\n{LABELS['rebuild']} among {files:,} files ({args.rebuild_records:,} records), cache warm: {seconds:.2f} s (goal < 2 s)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
