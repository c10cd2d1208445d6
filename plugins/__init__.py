"""Datasette plugins of computekb (loaded with --plugins-dir; importable for tests)."""
