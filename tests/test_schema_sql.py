"""The schema the build writes is the one sqlite-utils' own API makes of schema.py,
and the tables it derives hold what they derive from."""

import sqlite3

import sqlite_utils

from domain.schema import COLUMNS, GENERATED, LINKS, TABLES, TABLES_BY_NAME, TAG_COUNTS
from etl.load import FTS_TOKENIZER, index_columns, is_indexed, primary_key

COLUMN_TYPES = {"int": int, "bool": int, "number": float, "quantity": float}


def in_creation_order(tables):
    """Referenced tables first: sqlite-utils looks up a foreign key's target as it creates a table."""
    ordered, pending = [], list(tables)
    while pending:
        done = {t.name for t in ordered}
        ready = [t for t in pending if all(f.ref in done or f.ref == t.name for f in t.columns if f.kind == "ref")]
        assert ready, [t.name for t in pending]
        ordered += ready
        pending = [t for t in pending if t not in ready]
    return ordered


def reference_schema(path):
    """Tables, link tables, indexes and full-text search made by sqlite-utils' table methods."""
    db = sqlite_utils.Database(path)
    for table in in_creation_order(TABLES + GENERATED):
        pk = primary_key(table)
        db[table.name].create({f.name: COLUMN_TYPES.get(f.kind, str) for f in table.columns}, pk=pk,
                              not_null={f.name for f in table.columns if f.required or f.name == pk},
                              foreign_keys=[(f.name, f.ref, "slug") for f in table.columns if f.kind == "ref"])
    for link, (table, field) in LINKS.items():
        left, right = COLUMNS[link]
        db[link].create({left: str, right: str}, pk=(left, right), not_null={left, right},
                        foreign_keys=[(left, table, "slug"), (right, TABLES_BY_NAME[table].field(field).ref, "slug")])
        db[link].create_index([right])
    for table in TABLES + GENERATED:
        for f in table.columns:
            if is_indexed(table, f):
                db[table.name].create_index(index_columns(table, f))
        if table.search:
            db[table.name].enable_fts(list(table.search), fts_version="FTS5", tokenize=FTS_TOKENIZER)
    db["citations"].create_index(["table_name", "row_slug"])
    for name, counts in TAG_COUNTS.items():
        fields = [TABLES_BY_NAME[counts.table].field(d) for d in counts.dimensions]
        db[name].create({"tag_column": str, "tag": str, **{f.name: COLUMN_TYPES.get(f.kind, str) for f in fields}, "rows": int},
                        not_null={"tag_column", "tag", "rows"})
        db[name].create_index(COLUMNS[name])
    db.conn.close()


def schema_of(path):
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type != 'view' AND name NOT LIKE 'sqlite_%'"))


def test_tables_indexes_and_search_are_written_as_sqlite_utils_writes_them(db_path, tmp_path):
    reference_schema(tmp_path / "reference.db")
    reference, ours = schema_of(tmp_path / "reference.db"), schema_of(db_path)
    assert len(reference) > len(TABLES) * 2
    assert sorted(ours) == sorted(reference)
    for name, sql in reference.items():
        assert ours[name] == sql, name


def test_full_text_search_indexes_every_row(conn):
    searched = [t.name for t in TABLES if t.search]
    assert searched
    for name in searched:
        rows = conn.execute(f"SELECT count(*) FROM [{name}]").fetchone()[0]
        # One row per indexed document (the search table itself reads through to `name`).
        indexed = conn.execute(f"SELECT count(*) FROM [{name}_fts_docsize]").fetchone()[0]
        assert rows > 0 and indexed == rows, name


def test_tag_counts_hold_every_tag_of_every_row(conn):
    assert TAG_COUNTS
    for name, counts in TAG_COUNTS.items():
        for column in counts.tags:
            dimensions = ", ".join(f"t.[{d}]" for d in counts.dimensions)
            expected = conn.execute(f"select j.value, {dimensions}, count(*) from [{counts.table}] t, json_each(t.[{column}]) j "
                                    f"group by 1, {dimensions} order by 1, {dimensions}").fetchall()
            held = conn.execute(f"select tag, {', '.join(f'[{d}]' for d in counts.dimensions)}, rows from [{name}] "
                                f"where tag_column = ? order by 1, {', '.join(f'[{d}]' for d in counts.dimensions)}", [column]).fetchall()
            assert expected and [tuple(r) for r in held] == [tuple(r) for r in expected], (name, column)
