"""Load stage: create the schema explicitly from schema.py, stage the rows, copy them in order.

The schema is written in one script, in the words sqlite-utils uses for
tables, indexes and full-text search (the tests compare the two). The rows go in
through sqlite3's executemany (an order of magnitude faster than insert_all),
file by file into temporary tables that SQLite keeps on disk, then into the
final tables with one INSERT ... SELECT ... ORDER BY per table. Memory stays
flat whatever the size of the data, and every table gets its rows in primary
key order, whatever the order of the files.
"""

import sqlite3
from collections import defaultdict

import sqlite_utils
from sqlite_utils.db import quote_identifier

from domain.schema import COLUMNS, DENSE_COLUMNS, GENERATED, LINKS, STAGED, STAGED_ROWS, TABLES, TABLES_BY_NAME, TAG_COUNTS

SQL_TYPES = {"int": "INTEGER", "bool": "INTEGER", "number": "REAL", "quantity": "REAL"}  # other kinds: TEXT
FTS_TOKENIZER = "unicode61 remove_diacritics 2"  # "memoire" finds "mémoire"

# One row per accelerator, every accelerator (a row with no dense figure shows
# nulls rather than vanishing), one column per precision and engine: a column
# holds one measure only.
DENSE_THROUGHPUT_VIEW = """
CREATE VIEW dense_throughput AS
SELECT a.slug AS accelerator, a.name, a.vendor, a.device_class, a.scope,
{columns}
FROM accelerators a
ORDER BY a.vendor, a.name
"""


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


def table_sql(name, columns, pk=()):
    """CREATE TABLE of `columns` (column_sql lines), in the words sqlite-utils writes.

    Written from schema.py alone: sqlite-utils asks SQLite about every
    referenced table while it writes one (a tenth of a small build). The tests
    check that both write the same schema.
    """
    lines = columns + ([f"   PRIMARY KEY ({names(pk)})"] if pk else [])
    return f"CREATE TABLE {quote_identifier(name)} (\n" + ",\n".join(lines) + "\n)"


def column_sql(name, kind, pk=False, not_null=False, ref=None):
    return (f"   {quote_identifier(name)} {SQL_TYPES.get(kind, 'TEXT')}" + " PRIMARY KEY" * pk + " NOT NULL" * not_null
            + (f' REFERENCES {quote_identifier(ref)}("slug")' if ref else ""))


def schema_sql():
    """Every table: those of schema.py, then the link tables of their `refs` fields."""
    statements = []
    for table in TABLES + GENERATED:
        pk = primary_key(table)
        statements.append(table_sql(table.name, [
            column_sql(f.name, f.kind, pk=f.name == pk, not_null=f.required or f.name == pk,
                       ref=f.ref if f.kind == "ref" else None) for f in table.columns]))
    for link, (table, field) in LINKS.items():
        left, right = COLUMNS[link]
        ref = TABLES_BY_NAME[table].field(field).ref
        statements.append(table_sql(link, [column_sql(left, "text", not_null=True, ref=table),
                                           column_sql(right, "text", not_null=True, ref=ref)], pk=(left, right)))
    return statements


def index_sql(table, columns):
    return (f"CREATE INDEX {quote_identifier(f'idx_{table}_' + '_'.join(columns))}\n"
            f"    ON {quote_identifier(table)} ({names(columns)})")


def indexes_sql():
    """Every index, made once the rows are in: SQLite then builds each by one sort,
    not row by row (made first, they cost more and leave the file larger)."""
    statements = [index_sql(table.name, index_columns(table, f))
                  for table in TABLES + GENERATED for f in table.columns if is_indexed(table, f)]
    statements += [index_sql(link, COLUMNS[link][1:]) for link in LINKS]
    # Row pages and the compare page look up the citations of one row.
    return statements + [index_sql("citations", ["table_name", "row_slug"])]


def index_columns(table, field):
    """The columns of `field`'s index.

    A facet column's index also holds the table's other facet columns, tag
    arrays last, so that counting a facet on a filtered page (`?language=fr`
    then a count per category, or per topic) reads an index alone: with one
    column per index SQLite reads every matching row for each facet.
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


def tag_counts_sql():
    """The tables of TAG_COUNTS, filled from the final rows of their table, and
    the one index a facet reads (all its columns: the table itself is never read)."""
    statements = []
    for name, counts in TAG_COUNTS.items():
        tag_column, tag, *dimensions, rows = COLUMNS[name]
        kinds = [TABLES_BY_NAME[counts.table].field(d).kind for d in dimensions]
        statements.append(table_sql(name, [column_sql(tag_column, "text", not_null=True), column_sql(tag, "text", not_null=True)]
                                    + [column_sql(d, kind) for d, kind in zip(dimensions, kinds)]
                                    + [column_sql(rows, "int", not_null=True)]))
        groups = names(dimensions, "t.")
        statements += [f"INSERT INTO {quote_identifier(name)} SELECT '{column}', j.value, {groups}, count(*) "
                       f"FROM {quote_identifier(counts.table)} t, json_each(t.{quote_identifier(column)}) j GROUP BY j.value, {groups}"
                       for column in counts.tags]
        statements.append(index_sql(name, COLUMNS[name]))
    return statements


def search_sql():
    """Full-text search tables as sqlite-utils' enable_fts writes them, and filled."""
    statements = []
    for table in TABLES:
        if table.search:
            name, fts, columns = quote_identifier(table.name), quote_identifier(table.name + "_fts"), names(table.search)
            statements += [f"CREATE VIRTUAL TABLE {fts} USING FTS5 (\n    {columns},\n"
                           f"    tokenize='{FTS_TOKENIZER}',\n    content={name}\n)",
                           f"INSERT INTO {fts} (rowid, {columns})\n    SELECT rowid, {columns} FROM {name}"]
    return statements


# Measured ÷ roofline per accelerator family, model class and batch regime, for the sizing calculator:
# the median over the best closed-division, available result of each accelerator, benchmark, accuracy
# target, scenario and round (one figure per tuned configuration, so the many submissions of one
# system do not outweigh the others), of results whose roofline is computable (domain/roofline.py).
DECODE_EFFICIENCY_VIEW = """
CREATE VIEW decode_efficiency AS
WITH best AS (
  SELECT r.*, row_number() OVER (PARTITION BY r.accelerator, r.benchmark, r.accuracy_target, r.scenario, r.round
                                 ORDER BY r.result_per_accelerator DESC, r.slug) AS place
  FROM benchmark_results r
  WHERE r.roofline_share IS NOT NULL AND r.division = 'closed' AND r.availability = 'available'
),
shares AS (
  SELECT a.family AS accelerator_family, m.model_class,
         iif(b.scenario = 'SingleStream', 'batch-1', 'large-batch') AS batch_regime, b.roofline_share AS share
  FROM best b JOIN accelerators a ON a.slug = b.accelerator JOIN models m ON m.slug = b.model
  WHERE b.place = 1 AND a.family IS NOT NULL
),
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY accelerator_family, model_class, batch_regime ORDER BY share) AS i,
         count(*) OVER (PARTITION BY accelerator_family, model_class, batch_regime) AS n
  FROM shares
)
SELECT accelerator_family, model_class, batch_regime, round(avg(share), 4) AS efficiency, max(n) AS results,
       'median of measured ÷ roofline over the best closed-division available result of each accelerator, '
       || 'benchmark, accuracy target, scenario and round (benchmark_results.roofline_share; ceiling: '
       || 'docs/DATA.md, Measured results)' AS basis
FROM ranked
WHERE i IN ((n + 1) / 2, (n + 2) / 2)
GROUP BY accelerator_family, model_class, batch_regime
ORDER BY accelerator_family, model_class, batch_regime
"""
# Each achieved rate beside the same accelerator's datasheet peak: bandwidth against memory_bandwidth_gbs,
# a matmul against the dense matrix-engine figure of the same precision.
ACHIEVED_VS_PEAK_VIEW = """
CREATE VIEW achieved_vs_peak AS
SELECT r.slug, r.accelerator, a.name, r.measure, r.kernel, r.precision,
       coalesce(r.bandwidth_gbs, r.tflops) AS achieved,
       iif(r.measure = 'memory-bandwidth', 'GB/s', 'TFLOPS') AS unit,
       iif(r.measure = 'memory-bandwidth', a.memory_bandwidth_gbs, t.tflops) AS peak,
       round(100.0 * coalesce(r.bandwidth_gbs, r.tflops)
             / iif(r.measure = 'memory-bandwidth', a.memory_bandwidth_gbs, t.tflops), 1) AS percent_of_peak,
       r.software, r.measured, r.source
FROM achieved_rates r
JOIN accelerators a ON a.slug = r.accelerator
LEFT JOIN throughput t ON t.accelerator = r.accelerator AND t.precision = r.precision
  AND t.sparsity = 'dense' AND t.engine = 'matrix' AND t.accumulate = 'fp32'
ORDER BY r.accelerator, r.measure, r.slug
"""


def views_sql():
    columns = ",\n".join(
        f"  (SELECT tflops FROM throughput t WHERE t.accelerator = a.slug AND t.precision = '{c.precision}' "
        f"AND t.engine = '{c.engine}' AND t.sparsity = 'dense' AND t.accumulate = 'fp32') AS {c.name}" for c in DENSE_COLUMNS)
    return [DENSE_THROUGHPUT_VIEW.format(columns=columns), DECODE_EFFICIENCY_VIEW, ACHIEVED_VS_PEAK_VIEW]


def run_script(db, statements):
    """`statements` in one transaction and one call: a schema written statement by
    statement costs a call and a schema change each."""
    db.conn.executescript("BEGIN;\n" + ";\n".join(statements) + ";\nCOMMIT;")


STAGE_FLUSH_ROWS = 2000  # rows buffered per table before they go to SQLite
CACHE_KIB = 16 * 1024    # page cache of the new database, and of the staged rows: bounded, whatever the data


def staged(name):
    return f"stage_{name}"


def names(columns, prefix=""):
    return ", ".join(prefix + quote_identifier(c) for c in columns)


class StagingDatabase:
    """A new SQLite file being built: rows staged file by file, then copied in order.

    `add` takes what `transform.file_tables` makes of each file; `select` and
    `set_column` let `transform.cross_file_columns` fill the columns that
    depend on other files; `finish` writes the final tables, views, full-text
    search and statistics (the schema and views exist from the start). Used as a context manager, which closes the file.
    """

    def __init__(self, path):
        self.db = db = open_database(path)
        # A new file, renamed into place by build.py only once complete and synced:
        # no rollback journal and no sync per statement. Staged rows live in a
        # temporary file (temp_store), not in memory.
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "temp_store = FILE",
                       f"cache_size = -{CACHE_KIB}", f"temp.cache_size = -{CACHE_KIB}"):
            db.conn.execute(f"PRAGMA {pragma}")
        run_script(db, schema_sql() + views_sql() + [f"CREATE TEMP TABLE {staged(name)} ({names(columns)})"
                                       for name, columns in STAGED.items()])
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
        """Write the buffered records of `name` (STAGED_ROWS records: tuples whose fields name the columns)."""
        columns = STAGED_ROWS[name]._fields
        self.db.conn.executemany(f"INSERT INTO temp.[{staged(name)}] ({names(columns)}) VALUES ({', '.join('?' * len(columns))})",
                                 self.buffers.pop(name, []))

    def flush_all(self):
        for name in list(self.buffers):
            self.flush(name)

    def select(self, table, columns, order_by=()):
        """The staged rows of `table`, as sqlite3.Row records of `columns` (by name or in order)."""
        self.flush_all()
        order = f" ORDER BY {names(order_by)}" if order_by else ""
        cursor = self.db.conn.cursor()
        cursor.row_factory = sqlite3.Row
        yield from cursor.execute(f"SELECT {names(columns)} FROM temp.[{staged(table)}]{order}")

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
                        f"FROM temp.[{staged(name)}] s{joins} ORDER BY {names([primary_key(TABLES_BY_NAME[name])], 's.')}")

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
        run_script(db, indexes_sql() + tag_counts_sql() + search_sql() + ["ANALYZE main"])
        # `main.`: the staged rows stay in the temporary file until it is closed (dropping them costs time).
        violations = db.execute("PRAGMA main.foreign_key_check").fetchall()
        if violations:
            raise RuntimeError(f"foreign key violations after load: {violations[:5]}")


