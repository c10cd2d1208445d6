"""`python -m computekb`: the `computekb` command where the project is not installed but
its package is on the path, as in the deployment image (serving/publish.py)."""

from .cli import cli

cli(prog_name="computekb")
