"""The ETL: data/*.yml read, validated, transformed and loaded into one SQLite file.

It knows the domain (`domain/`) and nothing of how the database is served.
"""
