"""Load stage: create the schema explicitly from schema.py, then insert the rows.

sqlite-utils creates tables, indexes and full-text search; the rows themselves
go in through sqlite3's executemany, an order of magnitude faster than
insert_all for the same rows.
"""

import sqlite_utils

from .schema import GENERATED, TABLES
from .transform import link_table_name, singular

COLUMN_TYPES = {"int": int, "bool": int, "number": float, "quantity": float}
INDEXED_KINDS = {"ref", "enum", "date", "int", "number", "quantity", "bool"}
FTS_TOKENIZER = "unicode61 remove_diacritics 2"  # "memoire" finds "mémoire"

DENSE_THROUGHPUT_VIEW = """
CREATE VIEW dense_throughput AS
SELECT a.slug AS accelerator, a.name, a.vendor, a.device_class,
{columns}
FROM accelerators a
WHERE a.slug IN (SELECT accelerator FROM throughput WHERE sparsity = 'dense')
ORDER BY a.vendor, a.name
"""
DENSE_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "int4")


def create_table(db, table):
    columns = {f.name: COLUMN_TYPES.get(f.kind, str) for f in table.columns}
    pk = "slug" if "slug" in columns else "data_release"
    db[table.name].create(
        columns, pk=pk,
        not_null={f.name for f in table.columns if f.required or f.name == pk},
        foreign_keys=[(f.name, f.ref, "slug") for f in table.columns if f.kind == "ref"],
    )
    for f in table.columns:
        if f.kind in INDEXED_KINDS and f.name != pk:
            db[table.name].create_index([f.name])


def creation_order(tables):
    """Referenced tables first: sqlite-utils checks that a foreign key's target exists."""
    ordered, pending = [], list(tables)
    while pending:
        done = {t.name for t in ordered}
        ready = [t for t in pending
                 if all(f.ref in done or f.ref == t.name for f in t.columns if f.kind == "ref")]
        assert ready, f"circular references between {[t.name for t in pending]}"
        ordered += ready
        pending = [t for t in pending if t not in ready]
    return ordered


def create_link_tables(db):
    for table in TABLES:
        for field in table.fields:
            if field.kind == "refs":
                left, right = singular(table.name), singular(field.ref)
                name = link_table_name(table, field)
                db[name].create({left: str, right: str}, pk=(left, right), not_null={left, right},
                                foreign_keys=[(left, table.name, "slug"), (right, field.ref, "slug")])
                db[name].create_index([right])


def insert_rows(db, name, rows):
    if not rows:
        return
    columns = list(db[name].columns_dict)
    sql = f"INSERT INTO [{name}] ({', '.join(f'[{c}]' for c in columns)}) VALUES ({', '.join('?' * len(columns))})"
    db.conn.executemany(sql, [tuple(map(row.get, columns)) for row in rows])


def create_search(db):
    for table in TABLES:
        if table.search:
            db[table.name].enable_fts(list(table.search), fts_version="FTS5", tokenize=FTS_TOKENIZER)


def create_views(db):
    columns = ",\n".join(
        f"  (SELECT tflops FROM throughput t WHERE t.accelerator = a.slug AND t.precision = '{p}' "
        f"AND t.sparsity = 'dense') AS {p}_tflops" for p in DENSE_PRECISIONS)
    db.execute(DENSE_THROUGHPUT_VIEW.format(columns=columns))


def load(tables, path):
    """Write every table into a new SQLite file at `path`."""
    db = sqlite_utils.Database(path)
    # A new file, renamed into place by build.py only once complete and synced:
    # no rollback journal and no sync per statement.
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    # Foreign keys are checked once, after every row is in (PRAGMA foreign_key_check
    # below): rows reference each other in no particular order.
    with db.conn:
        for table in creation_order(TABLES + GENERATED):
            create_table(db, table)
        create_link_tables(db)
        # Row pages and the compare page look up the citations of one row.
        db["citations"].create_index(["table_name", "row_slug"])
        for name, rows in tables.items():
            insert_rows(db, name, rows)
        create_views(db)
    create_search(db)
    violations = db.execute("PRAGMA foreign_key_check").fetchall()
    if violations:
        raise RuntimeError(f"foreign key violations after load: {violations[:5]}")
    db.execute("ANALYZE")
    db.conn.close()


def table_counts(path):
    """Rows per table, full-text index tables left out."""
    db = sqlite_utils.Database(path)
    try:
        return {name: db[name].count for name in db.table_names() if "_fts" not in name and not name.startswith("sqlite_")}
    finally:
        db.conn.close()
