"""The `computekb` command: validate, build and serve the knowledge base."""

import functools
import signal
import sqlite3
import sys
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import click
from tqdm import tqdm

from domain.release import built_hash
from etl.build import (
    DiskFullError,
    OutputError,
    ShrinkError,
    build_database,
    data_hash,
    display_path,
    validate_data,
)
from etl.crosscheck import crosscheck, format_crosscheck
from etl.problems import DataError, printable, report_lines
from etl.read import scan_data
from etl.release_diff import NotARelease, format_diff, release_diff
from etl.report import (
    coverage,
    format_measured,
    format_prices,
    format_report,
    measured_coverage,
    price_coverage,
)
from serving.metadata import DATABASE_FILE
from serving.paths import DEFAULT_DATA, DEFAULT_DB, ROOT
from serving.site import DEFAULT_SITE_URL, checked_site_url


@click.group()
@click.version_option(package_name="computekb")
def cli():
    """computekb: a cited knowledge base on AI compute, served by Datasette."""


def print_problems(problems):
    for line in report_lines(problems):
        click.echo(line, err=True)
    click.echo(f"{len(problems)} problem(s) found.", err=True)


@cli.command()
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files.")
def validate(data_dir):
    """Check every data file; print every problem as path:line: field: message."""
    records, citations, problems, _, files = validate_data(data_dir)
    if problems:
        print_problems(problems)
        sys.exit(1)
    click.echo(f"{files} files, {records} records, {citations} citations: no problems.")


@cli.command()
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
              show_default=DATABASE_FILE, help="Database to write (replaced only on success).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no table counts (for CI); problems are still printed.")
@click.option("--no-cache", is_flag=True, help="Re-read every file instead of reusing the results of unchanged ones.")
@click.option("--allow-shrink", is_flag=True,
              help="Replace the database even if a table would become empty or lose more than half of its rows.")
def build(data_dir, output, quiet, no_cache, allow_shrink=False):
    """Validate, then build the SQLite database atomically."""
    # tqdm draws the bar only when stderr is a terminal (disable=None).
    progress = None if quiet else functools.partial(tqdm, desc="Reading", unit=" files", leave=False, disable=None)
    try:
        result = build_database(data_dir, output, cache=not no_cache, progress=progress, allow_shrink=allow_shrink)
    except (DataError, ShrinkError, DiskFullError, OutputError) as error:
        if isinstance(error, DataError):
            print_problems(error.problems)
        else:
            click.echo(printable(str(error)), err=True)
        click.echo(f"Build failed; {printable(str(output))} was left as it was.", err=True)
        sys.exit(1)
    if quiet:
        return
    for path, what in scan_data(data_dir).unread:
        click.echo(f"Not read by the build: {display_path(path)} ({what})")
    for table, count in sorted(result["tables"].items()):
        click.echo(f"{table:24} {count:>8}")
    click.echo(f"Built {display_path(output)} (data release {result['release']}) in {result['seconds']:.2f}s.")


def is_stale(db_path, data_dir):
    """Whether `db_path` was built from other files than those of `data_dir` now.

    Compares the data hash (every path and byte), not modification times, so
    that a deleted or renamed file counts, and a file saved unchanged does not.
    """
    if not db_path.exists():
        return True
    current = data_hash(data_dir)  # None: no data folder here, serve the database as it is
    return current is not None and built_hash(db_path) != current


def site_url_option(context, parameter, value):
    """Click callback: a site URL that permalinks can be built on."""
    try:
        return value and checked_site_url(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def exit_on_signal(signum, frame):
    """End the process by an exception, so that every `with` block on the way out cleans up."""
    raise SystemExit(128 + signum)


def cache_ttl_option(**default):
    """The `--cache-ttl` option of `serve` and `publish` (the image passes its value to `serve`)."""
    return click.option("--cache-ttl", type=click.IntRange(0), **default,
                        help="Datasette's default_cache_ttl: seconds a cache or CDN may keep a page.")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8001, show_default=True, type=int)
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
              show_default=DATABASE_FILE, help="Database to serve.")
@click.option("--site-url", callback=site_url_option,
              help="The site's public URL, used in permalinks and feeds  [default: http://HOST:PORT]")
@click.option("--no-rebuild", is_flag=True,
              help="Serve the database as it is, never building it (the deployment image, which has no data folder).")
@cache_ttl_option(show_default="Datasette's")
@click.option("--cors", is_flag=True,
              help="Let web pages of any site read the JSON API (Datasette's CORS headers); the deployment image sets it.")
def serve(host, port, data_dir, db_path, site_url, no_rebuild, cache_ttl, cors):
    """Rebuild if the data changed, then serve one release with Datasette.

    The server answers from a copy of the database taken at start: a later
    build is served from the next start. When the rebuild fails, the last good
    release is served, and the console and `/-/release` say so.
    """
    rebuild_failed = None
    if no_rebuild:
        if not db_path.exists():
            raise click.ClickException(f"{printable(str(db_path))} does not exist (--no-rebuild: it is not built here)")
    elif is_stale(db_path, data_dir):
        click.echo(f"Building {db_path} from {data_dir}...")
        try:
            click.get_current_context().invoke(build, data_dir=data_dir, output=db_path)
        except SystemExit as failed:
            if built_hash(db_path) is None:  # no good release to fall back on
                raise
            rebuild_failed = f"the rebuild from {printable(str(data_dir))} failed (exit status {failed.code})"
            click.echo(f"Serving the last good release of {printable(str(db_path))}: {rebuild_failed}; "
                       "fix the problems above and restart.", err=True)
    from serving.serve import release_snapshot, run_server  # Datasette's app and uvicorn: only this command needs them

    # uvicorn stops gracefully on SIGTERM, then raises the signal again under the handler it found:
    # with the default one the process ends there, before the snapshot's folder is removed.
    signal.signal(signal.SIGTERM, exit_on_signal)
    with release_snapshot(db_path) as snapshot:
        run_server(snapshot, host, port, site_url or f"http://{host}:{port}", cache_ttl, cors,
                   {"rebuild_failed": rebuild_failed})


@cli.command()
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
              show_default=DATABASE_FILE, help="Database to deploy (rebuilt first if the data changed).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=ROOT / "dist",
              show_default="dist/", help="Deployment folder to (re)create.")
@cache_ttl_option(default=3600, show_default=True)
@click.option("--site-url", callback=site_url_option, default=DEFAULT_SITE_URL, show_default=True,
              help="The site's public URL, used in permalinks and feeds.")
def publish(data_dir, db_path, out, cache_ttl, site_url):
    """Prepare a Docker deployment folder whose image runs `computekb serve` on the database."""
    from serving.publish import prepare
    if is_stale(db_path, data_dir):
        click.get_current_context().invoke(build, data_dir=data_dir, output=db_path, quiet=True)
    try:
        dockerfile = prepare(db_path, out, cache_ttl, site_url)
    except FileExistsError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"Wrote {display_path(dockerfile)}. Build and run the image with:")
    click.echo(f"  docker build -t computekb {display_path(out)}")
    click.echo("  docker run -p 8001:8001 computekb")


@cli.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=DEFAULT_DB,
              show_default=DATABASE_FILE, help="Database to report on.")
@click.option("--crosscheck", "cross", is_flag=True,
              help="Compare with Epoch AI's hardware dataset instead: both values of every matched accelerator "
                   "and field, whether they agree within 3%, and the names not matched.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files (the aliases and the dataset's copy).")
def report(db_path, cross, data_dir):
    """Rows per vendor and device class, the source tier of each core value, prices and measured results."""
    with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as conn:
        lines = (format_crosscheck(crosscheck(conn, data_dir)) if cross
                 else format_report(coverage(conn)) + format_prices(price_coverage(conn))
                 + format_measured(measured_coverage(conn)))
    for line in lines:
        click.echo(line)


@cli.group("import")
def import_():
    """Write data files from an outside dataset."""


@import_.command("skypilot")
@click.argument("catalog", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--commit", help="Commit to read, when CATALOG is a git directory of skypilot-org/skypilot-catalog.")
@click.option("--version", "version", default="v8", show_default=True, help="Catalog version folder (catalogs/VERSION).")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files to write into.")
@click.option("--max-drop", type=click.FloatRange(0, 1), default=0.25, show_default=True,
              help="The share of a provider's offers an import may lose against its previous snapshot; more "
                   "stops the import (a catalog cut off looks like that).")
def import_skypilot(catalog, commit, version, data_dir, max_drop):
    """Cloud offers from SkyPilot's catalog: a git directory at --commit (dated by the commit), or a folder
    of files read one by one with a read.yml giving each file's commit and read date."""
    from etl import skypilot
    from etl.imported import ImportRefused
    try:
        files = skypilot.from_git(catalog, commit, version) if commit else skypilot.from_folder(catalog)
        result = skypilot.import_files(data_dir, files, skypilot.provider_names(data_dir), max_drop)
    except ImportRefused as error:
        raise click.ClickException(str(error)) from None
    for path in result.written:
        click.echo(f"wrote {display_path(path)}")
    for provider, names in sorted(result.unmapped.items()):
        click.echo(f"{provider}: no alias row for {', '.join(names)} (rows not imported)", err=True)
    for provider, why in sorted(result.skipped.items()):
        click.echo(f"{provider}: skipped: {why}", err=True)


@import_.command(name="mlperf")
@click.option("--summary", "summary_path", required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="The round's summary_results.json (or summary.json), read from the repository at COMMIT.")
@click.option("--round", "round_", required=True, help="Round, as the summary's `version` column writes it (v5.1).")
@click.option("--repository", required=True, help="owner/name of the repository publishing the summary (MLCommons').")
@click.option("--commit", required=True, help="The commit the summary was read at (cited).")
@click.option("--path", "repo_path", default="summary_results.json", show_default=True,
              help="Path of the summary in the repository.")
@click.option("--read-via", help="owner/name of the copy read, when not the publishing repository itself.")
@click.option("--retrieved", required=True, help="Date the summary was read (YYYY-MM-DD).")
@click.option("--model", "models", multiple=True, metavar="BENCHMARK=SLUG",
              help="A benchmark's model in the models table, besides those the importer knows (repeatable).")
@click.option("--results", "results_dir", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="A copy of the round's results repository at COMMIT (at least the performance/run_1 folders of "
                   "the results with power): writes data/benchmarks/mlperf-power-<round>.yml too.")
@click.option("--results-retrieved", help="Date the power files were read (YYYY-MM-DD), when not --retrieved.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files.")
def import_mlperf(summary_path, round_, repository, commit, repo_path, read_via, retrieved, models, results_dir,
                  results_retrieved, data_dir):
    """MLPerf Inference results: data/benchmarks/mlperf-inference-<round>.yml from a round's summary."""
    from etl.imported import ImportRefused
    from etl.mlperf import Summary, read_summary, write
    pairs = tuple(tuple(pair.split("=", 1)) for pair in models)
    if any(len(pair) != 2 for pair in pairs):
        raise click.BadParameter("give BENCHMARK=SLUG", param_hint="--model")
    summary = Summary(round_, repository, commit, repo_path, retrieved, read_via, pairs)
    try:
        imported = write(summary, read_summary(summary_path), data_dir)
    except ImportRefused as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"Wrote {display_path(imported.path)}: {imported.rows} results.")
    names = imported.names
    click.echo(f"Accelerator names: {len(names.mapped)} mapped, {len(names.none)} meaning none, "
               f"{len(names.unmapped)} without an alias in data/aliases/mlperf.yml.")
    for name in names.unmapped:
        click.echo(f"  unmapped: {name}")
    if results_dir:
        report_power(replace(summary, retrieved=results_retrieved or retrieved), read_summary(summary_path),
                     results_dir, data_dir)


def report_power(summary, rows, results_dir, data_dir):
    """Write the round's power results and list every result with power not loaded, with the reason."""
    from etl.mlperf_power import write_power
    power = write_power(summary, rows, results_dir, data_dir)
    if power.path is None:
        click.echo("No result of the summary was submitted with power (has_power): no power file written.")
        return
    click.echo(f"Wrote {display_path(power.path)}: {power.loaded} power results, {len(power.skipped)} not loaded.")
    for skipped in power.skipped:
        click.echo(f"  not loaded: {skipped.result}: {skipped.reason}", err=True)


@cli.command()
@click.argument("old_db", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.argument("new_db", type=click.Path(dir_okay=False, exists=True, path_type=Path))
def diff(old_db, new_db):
    """Values added, changed and removed from OLD_DB's data release to NEW_DB's."""
    try:
        click.echo(format_diff(release_diff(old_db, new_db)), nl=False)
    except NotARelease as error:
        raise click.ClickException(str(error)) from None
