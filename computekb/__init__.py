"""The `computekb` command: builds with the ETL (`etl/`), serves with `serving/`."""
