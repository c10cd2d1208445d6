"""The `computekb` command: validate, build and serve the knowledge base."""

import functools
import sys
from pathlib import Path

import click
from tqdm import tqdm

from .build import (
    ShrinkError,
    build_database,
    built_hash,
    check,
    data_hash,
    display_path,
)
from .problems import DataError, printable, report_lines
from .serve import DEFAULT_DB, ROOT, datasette_args

DEFAULT_DATA = ROOT / "data"


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
    records, citations, problems, _, files = check(data_dir)
    if problems:
        print_problems(problems)
        sys.exit(1)
    click.echo(f"{files} files, {records} records, {citations} citations: no problems.")


@cli.command()
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
              show_default="computekb.db", help="Database to write (replaced only on success).")
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
    except (DataError, ShrinkError) as error:
        if isinstance(error, DataError):
            print_problems(error.problems)
        else:
            click.echo(printable(str(error)), err=True)
        click.echo(f"Build failed; {printable(str(output))} was left as it was.", err=True)
        sys.exit(1)
    if quiet:
        return
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


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8001, show_default=True, type=int)
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
              show_default="computekb.db", help="Database to serve.")
def serve(host, port, data_dir, db_path):
    """Rebuild if the data changed, then serve with Datasette."""
    if is_stale(db_path, data_dir):
        click.echo(f"Building {db_path} from {data_dir}...")
        click.get_current_context().invoke(build, data_dir=data_dir, output=db_path)
    from datasette.cli import cli as datasette_cli
    datasette_cli.main(args=datasette_args(db_path, host, port), prog_name="datasette")


@cli.command()
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
              show_default="data/", help="Folder of YAML data files.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
              show_default="computekb.db", help="Database to deploy (rebuilt first if the data changed).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=ROOT / "dist",
              show_default="dist/", help="Deployment folder to (re)create.")
@click.option("--cache-ttl", type=click.IntRange(0), default=3600, show_default=True,
              help="Datasette's default_cache_ttl: seconds a cache or CDN may keep a page.")
def publish(data_dir, db_path, out, cache_ttl):
    """Prepare a Docker deployment folder with Datasette's own Dockerfile."""
    from .publish import prepare
    if is_stale(db_path, data_dir):
        click.get_current_context().invoke(build, data_dir=data_dir, output=db_path, quiet=True)
    try:
        dockerfile = prepare(db_path, out, cache_ttl)
    except FileExistsError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"Wrote {display_path(dockerfile)}. Build and run the image with:")
    click.echo(f"  docker build -t computekb {display_path(out)}")
    click.echo("  docker run -p 8001:8001 computekb")
