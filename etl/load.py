"""Load stage: create the schema explicitly from schema.py, stage the rows, copy them in order.

sqlite-utils creates tables, indexes and full-text search. The rows go in
through sqlite3's executemany (an order of magnitude faster than insert_all),
file by file into temporary tables that SQLite keeps on disk, then into the
final tables with one INSERT ... SELECT ... ORDER BY per table. Memory stays
flat whatever the size of the data, and every table gets its rows in primary
key order, whatever the order of the files.
"""

from collections import defaultdict

import sqlite_utils

from .schema import GENERATED, TABLES, TABLES_BY_NAME
from .transform import COLUMNS, LINKS, STAGED, link_table_name, singular

COLUMN_TYPES = {"int": int, "bool": int, "number": float, "quantity": float}
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


def table_of(db, name):
    """sqlite-utils' Table for `name`, known to be a table: `db[name]` asks SQLite
    for the list of views first, hundreds of times in a build."""
    return sqlite_utils.db.Table(db, name)


def open_database(path):
    """sqlite-utils' Database for `path`, without sqlite-utils plugins: none is
    needed, and looking for them (every package's entry points) costs a few
    milliseconds in each build."""
    return sqlite_utils.Database(path, execute_plugins=False)


def primary_key(table):
    return "slug" if any(f.name == "slug" for f in table.columns) else "data_release"


def create_table(db, table):
    columns = {f.name: COLUMN_TYPES.get(f.kind, str) for f in table.columns}
    pk = primary_key(table)
    table_of(db, table.name).create(
        columns, pk=pk,
        not_null={f.name for f in table.columns if f.required or f.name == pk},
        foreign_keys=[(f.name, f.ref, "slug") for f in table.columns if f.kind == "ref"],
    )


def create_indexes(db):
    """Every index, once the rows are in: SQLite then builds each by one sort, not row by row."""
    for table in TABLES + GENERATED:
        for f in table.columns:
            if is_indexed(table, f):
                table_of(db, table.name).create_index(index_columns(table, f))
    for link, (table, field) in LINKS.items():
        table_of(db, link).create_index([singular(TABLES_BY_NAME[table].field(field).ref)])
    # Row pages and the compare page look up the citations of one row.
    table_of(db, "citations").create_index(["table_name", "row_slug"])


def index_columns(table, field):
    """The columns of `field`'s index.

    A facet column's index also holds the table's other facet columns, tag
    arrays last, so that counting a facet on a filtered page (`?language=fr`
    then a count per category, or per topic) reads an index alone: with one
    column per index SQLite reads every matching row, 50 to 60 ms per facet
    on 20,000 articles.
    """
    if not is_facet_column(field):
        return [field.name]
    others = [f for f in table.columns if f.facet and f is not field]
    return [field.name] + [f.name for f in sorted(others, key=lambda f: f.kind == "list")]


def is_indexed(table, field):
    """References (joins, and the links a row page counts), facets and the default sort.

    Other columns are filtered and sorted without an index: an index per
    column (a model's layer count, a site's announced word count) costs build
    time on every table and helps only the large ones.
    """
    if field.name == primary_key(table):
        return False
    return field.kind == "ref" or is_facet_column(field) or field.name in (table.sort, table.sort_desc)


def is_facet_column(field):
    """A facet on a column's values (a tag facet counts the items of JSON arrays)."""
    return field.facet and field.kind != "list"


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
                table_of(db, name).create({left: str, right: str}, pk=(left, right), not_null={left, right},
                                foreign_keys=[(left, table.name, "slug"), (right, field.ref, "slug")])


def create_search(db):
    for table in TABLES:
        if table.search:
            table_of(db, table.name).enable_fts(list(table.search), fts_version="FTS5", tokenize=FTS_TOKENIZER)


def create_views(db):
    columns = ",\n".join(
        f"  (SELECT tflops FROM throughput t WHERE t.accelerator = a.slug AND t.precision = '{p}' "
        f"AND t.sparsity = 'dense') AS {p}_tflops" for p in DENSE_PRECISIONS)
    db.execute(DENSE_THROUGHPUT_VIEW.format(columns=columns))


def create_schema(db):
    for table in creation_order(TABLES + GENERATED):
        create_table(db, table)
    create_link_tables(db)


STAGE_FLUSH_ROWS = 2000  # rows buffered per table before they go to SQLite
CACHE_KIB = 16 * 1024    # page cache of the new database, and of the staged rows: bounded, whatever the data


def staged(name):
    return f"stage_{name}"


def names(columns, prefix=""):
    return ", ".join(f"{prefix}[{c}]" for c in columns)


class Stage:
    """A new SQLite file being built: rows staged file by file, then copied in order.

    `add` takes what `transform.file_tables` makes of each file; `select` and
    `set_column` let `transform.cross_file_columns` fill the columns that
    depend on other files; `finish` writes the final tables, views, full-text
    search and statistics. Used as a context manager, which closes the file.
    """

    def __init__(self, path):
        self.db = db = open_database(path)
        # A new file, renamed into place by build.py only once complete and synced:
        # no rollback journal and no sync per statement. Staged rows live in a
        # temporary file (temp_store), not in memory.
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "temp_store = FILE",
                       f"cache_size = -{CACHE_KIB}", f"temp.cache_size = -{CACHE_KIB}"):
            db.execute(f"PRAGMA {pragma}")
        create_schema(db)
        for name, columns in STAGED.items():
            assert list(table_of(db, name).columns_dict) == COLUMNS[name], name  # file_tables writes tuples in this order
            db.execute(f"CREATE TEMP TABLE [{staged(name)}] ({names(columns)})")
        self.buffers = defaultdict(list)
        self.derived = defaultdict(list)  # table: [(column, key column, only where null, temp table of values)]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.db.conn.close()

    def add(self, tables):
        for name, rows in tables.items():
            buffer = self.buffers[name]
            buffer += rows
            if len(buffer) >= STAGE_FLUSH_ROWS:
                self.flush(name)

    def flush(self, name):
        placeholders = ", ".join("?" * len(STAGED[name]))
        self.db.conn.executemany(f"INSERT INTO temp.[{staged(name)}] VALUES ({placeholders})", self.buffers.pop(name, []))

    def flush_all(self):
        for name in list(self.buffers):
            self.flush(name)

    def select(self, table, columns, order_by=()):
        """The staged rows of `table`, as tuples of `columns`."""
        self.flush_all()
        order = f" ORDER BY {names(order_by)}" if order_by else ""
        yield from self.db.conn.execute(f"SELECT {names(columns)} FROM temp.[{staged(table)}]{order}")

    def set_column(self, table, column, pairs, key="slug", only_null=False):
        """In the final table, `column` of the rows whose `key` is the first item of
        one of `pairs` is its second (with `only_null`: where the row has none)."""
        self.flush_all()  # before `pairs` are read: they may come from `select`
        values = f"derived_{table}_{column}"
        self.db.execute(f"CREATE TEMP TABLE [{values}] (key TEXT PRIMARY KEY, value)")
        self.db.conn.executemany(f"INSERT INTO temp.[{values}] VALUES (?, ?)", pairs)
        self.derived[table].append((column, key, only_null, values))

    def copy(self, name):
        """INSERT ... SELECT of one table: its staged rows in primary-key order, derived columns joined in."""
        columns, joins = {c: f"s.[{c}]" for c in COLUMNS[name]}, ""
        for i, (column, key, only_null, values) in enumerate(self.derived[name]):
            joins += f" LEFT JOIN temp.[{values}] d{i} ON d{i}.key = s.[{key}]"
            columns[column] = (f"coalesce(s.[{column}], d{i}.value)" if only_null
                               else f"iif(d{i}.key IS NULL, s.[{column}], d{i}.value)")
        self.db.execute(f"INSERT INTO main.[{name}] ({names(columns)}) SELECT {', '.join(columns.values())} "
                        f"FROM temp.[{staged(name)}] s{joins} ORDER BY {names(table_of(self.db, name).pks, 's.')}")

    def copy_links(self, link):
        """A link table, from the JSON array of slugs staged with each row of its table."""
        table, field = LINKS[link]
        self.db.execute(f"INSERT INTO main.[{link}] ({names(COLUMNS[link])}) SELECT s.slug, j.value "
                        f"FROM temp.[{staged(table)}] s, json_each(s.[{field}]) j ORDER BY 1, 2")

    def finish(self, release):
        """Copy every staged table in primary-key order, add the `release` row, views, search and statistics."""
        db, conn = self.db, self.db.conn
        self.flush_all()
        # Foreign keys are checked once, after every row is in (PRAGMA foreign_key_check
        # below): rows reference each other in no particular order.
        with conn:
            for name in [t.name for t in TABLES]:
                self.copy(name)
            for link in LINKS:
                self.copy_links(link)
            self.copy("citations")
            conn.execute(f"INSERT INTO release ({names(release)}) VALUES ({', '.join('?' * len(release))})",
                         list(release.values()))
            create_views(db)
        create_indexes(db)
        create_search(db)
        # `main.`: the staged rows stay in the temporary file until it is closed (dropping them costs time).
        violations = db.execute("PRAGMA main.foreign_key_check").fetchall()
        if violations:
            raise RuntimeError(f"foreign key violations after load: {violations[:5]}")
        db.execute("ANALYZE main")


def table_counts(path):
    """Rows per table, full-text index tables left out."""
    db = open_database(path)
    try:
        return {name: table_of(db, name).count for name in db.table_names() if "_fts" not in name and not name.startswith("sqlite_")}
    finally:
        db.conn.close()
