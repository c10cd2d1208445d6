"""Fuzzing the query strings of every page: no answer is a 5xx.

Every table and view of the built database (listed from the database itself),
every canned query and dashboard (listed from the metadata) and the custom pages
(those whose route answers) get random query strings drawn from Datasette's own parameters, each table's
columns and filter lookups, and values known to upset parsers. The counts are
fixed and the seed too (FUZZ_SEED overrides it for a deeper local run), so a
failure can be replayed. The canned queries' own parameters get a stricter
check: a bad value is a 400 with its message in every format, never a 200 with
an error row or an empty answer.
"""

import os
import random
import re
import sqlite3
import urllib.parse

import pytest
from datasette.filters import Filters

from serving.metadata import full_metadata
from serving.paths import METADATA_YML

from conftest import DASHBOARD_PAGES_FAIL_ON_1

# Datasette turns on sqlite callback tracebacks: each refused parameter is also
# reported to sys.unraisablehook (the server log), which pytest would warn about.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

SEED = int(os.environ.get("FUZZ_SEED", "6"))
PER_TABLE, PER_QUERY, PER_PAGE = 25, 25, 40

SPECIAL = ["_sort", "_sort_desc", "_col", "_nocol", "_facet", "_facet_array", "_facet_date", "_facet_size",
           "_through", "_size", "_next", "_search", "_searchmode", "_where", "_labels", "_label", "_shape",
           "_json", "_nl", "_timelimit", "_fts_table", "_fts_pk", "_nocount", "_nofacet", "_stream", "_dl",
           "_hash", "_ttl", "_trace", "_context", "_extra", "_filter_column", "_filter_op", "_filter_value",
           "_filter_column_1", "_filter_op_1", "_filter_value_1", "_json_infinity", "_header", "_nosuggest"]
LOOKUPS = [key for key, _, _ in Filters([]).lookups()] + ["nope", ""]
NASTY = ["", " ", "abc", "3TB/s", "4.8 GB", "80 GB", "1 PFLOPS", "9**9**9", "2**1000 GB", "1e999", "-1", "0",
         "1.5", "nan", "inf", "1,2", "[1,2]", '["a"]', "[", "{", "{}", '{"table": "x"}',
         '{"table": "article_accelerators", "column": "accelerator", "value": "x"}', "'", '"', "%", "*", "\\",
         "' OR 1=1 --", "1; drop table accelerators", "NULL", "<script>alert(1)</script>", "javascript:alert(1)",
         "ñé😀", "\x00", "a" * 3000, "9" * 40, "_", "__", "~", "max", "on", "1", "array", "objects", "object",
         "arrays", "arrayfirst", "raw", "escaped", "AND", "NEAR(", "title:", "2026-12-01", "x" * 200 + "__gt"]
RAW = ["%ff=1", "%00=%00", "&&", "=x", "a=%ZZ", "_sort", "x=1&x=2", "%E2%80%AE=1"]
FORMATS = ["", ".json", ".csv", ".json", ""]


def random_query(rng, keys, values):
    pairs = [(rng.choice(keys), rng.choice(values)) for _ in range(rng.randint(1, 4))]
    query = urllib.parse.urlencode(pairs)
    if rng.random() < 0.2:
        query += "&" + rng.choice(RAW)
    return query


def table_keys(columns):
    """Parameters for one table: Datasette's own, and filters on its columns."""
    filters = [f"{column}__{lookup}" if lookup else column for column in columns for lookup in LOOKUPS]
    return SPECIAL + filters + ["no_such_column__gt", "__", "_"]


def first_key(conn, table):
    """The primary key (or rowid) of the table's first row, for a row page; None without one."""
    pks = [row[1] for row in conn.execute(f"pragma table_info([{table}])") if row[5]]
    try:
        row = conn.execute(f"select {pks[0] if len(pks) == 1 else 'rowid'} from [{table}] limit 1").fetchone()
    except sqlite3.OperationalError:  # WITHOUT ROWID tables (full-text index internals)
        return None
    return row[0] if row else None


async def status_errors(client, urls):
    errors = []
    for url in urls:
        response = await client.get(url)
        if response.status_code >= 500:
            errors.append(f"{response.status_code} {url}")
    return errors


async def test_table_and_row_pages(client, conn):
    rng = random.Random(SEED)
    tables = conn.execute("select name, type from sqlite_master where type in ('table', 'view')").fetchall()
    assert "accelerators" in [name for name, _ in tables]
    urls = []
    for name, kind in tables:
        columns = [row[1] for row in conn.execute(f"pragma table_info([{name}])")]
        keys, values = table_keys(columns), NASTY + columns
        for _ in range(PER_TABLE):
            urls.append(f"/computekb/{name}{rng.choice(FORMATS)}?{random_query(rng, keys, values)}")
        first = first_key(conn, name) if kind == "table" else None
        for key in [first, urllib.parse.quote(rng.choice(NASTY + RAW), safe="")] if first is not None else []:
            urls.append(f"/computekb/{name}/{key}{rng.choice(FORMATS)}?{random_query(rng, keys, values)}")
    assert await status_errors(client, urls) == []


METADATA = full_metadata(METADATA_YML)
QUERIES = METADATA["databases"]["computekb"].get("queries", {})
DASHBOARDS = METADATA.get("plugins", {}).get("datasette-dashboards", {})


async def test_canned_queries(client):
    rng = random.Random(SEED)
    urls = []
    for name, query in QUERIES.items():
        params = set(query.get("params") or []) | set(re.findall(r":(\w+)", query["sql"]))
        keys = sorted(params) * 3 + SPECIAL
        for _ in range(PER_QUERY):
            urls.append(f"/computekb/{name}{rng.choice(FORMATS)}?{random_query(rng, keys, NASTY)}")
    assert await status_errors(client, urls) == []


def parameter_values(conn):
    """Values that pass some checks: slugs and classes the queries accept, and small numbers."""
    known = [value for table, column in (("models", "slug"), ("number_formats", "slug"), ("accelerators", "slug"),
                                         ("accelerators", "device_class"))
             for (value,) in conn.execute(f"select distinct {column} from {table}")]
    return known + ["1", "2", "131072", "0.9", "kv", "cache", "kv cache"]


async def parameter_problems(client, name, pairs):
    """What is wrong with the answers to one set of parameters, in JSON, HTML and CSV."""
    url = f"/computekb/{name}?{urllib.parse.urlencode(pairs)}"
    path, query = url.split("?", 1)
    # 1.0 lists the columns in JSON only when asked (`_extra=columns`); 0.65 ignores the argument
    json, html, csv = [await client.get(f"{path}{ext}?{query}{extra}")
                       for ext, extra in ((".json", "&_extra=columns"), ("", ""), (".csv", ""))]
    statuses = [r.status_code for r in (json, html, csv)]
    if statuses not in ([200] * 3, [400] * 3):
        return [f"{statuses} {url}"]
    body = json.json()
    if json.status_code == 400:
        answered = body["error"] and 'class="message-error"' in html.text and csv.text == body["error"] + "\n"
        return [] if answered else [f"400 without its message: {url}"]
    if "error" in body["columns"]:
        return [f"200 with an error column: {url}"]
    blank = not any(pairs.values())
    if not (body["rows"] or blank or (QUERIES[name].get("no_rows") and "no-rows" in html.text)):
        return [f"200 with no rows and no message: {url}"]
    return []


async def test_canned_query_parameters(client, conn):
    rng = random.Random(SEED)
    values = NASTY + parameter_values(conn)
    problems = []
    for name, query in QUERIES.items():
        params = query.get("params") or []
        for _ in range(PER_QUERY if params else 0):
            pairs = {param: rng.choice(values) for param in rng.sample(params, rng.randint(1, len(params)))}
            problems += await parameter_problems(client, name, pairs)
    assert problems == []


def page_values(conn, rng):
    """Nasty strings, accelerator slugs and lists of them: the values a page's parameters are fuzzed with."""
    slugs = [slug for (slug,) in conn.execute("select slug from accelerators")]
    return NASTY + slugs + [",".join(rng.sample(slugs, min(3, len(slugs)))), ",".join(slugs), "nope," + slugs[0]]


async def fuzzed_page_errors(client, conn, pages):
    """The 5xx answers of PER_PAGE random queries of each page of `pages` (path: parameter names) that exists."""
    rng = random.Random(SEED)
    values = page_values(conn, rng)
    present = {path: keys for path, keys in pages.items() if (await client.get(path)).status_code != 404}
    assert present, "no page to fuzz"
    urls = [f"{path}?{random_query(rng, keys, values)}" for path, keys in present.items() for _ in range(PER_PAGE)]
    return await status_errors(client, urls)


async def test_compare_page(client, conn):
    assert await fuzzed_page_errors(client, conn, {"/-/compare": ["ids", "ids", "format", "sort", "_size"]}) == []


@DASHBOARD_PAGES_FAIL_ON_1
async def test_dashboards(client, conn):
    pages = {}
    for slug, dashboard in DASHBOARDS.items():
        pages[f"/-/dashboards/{slug}"] = list(dashboard.get("filters", {})) + ["_size"]
        for chart in dashboard.get("charts", {}):
            pages[f"/-/dashboards/{slug}/{chart}"] = list(dashboard.get("filters", {}))
    assert await fuzzed_page_errors(client, conn, pages) == []
