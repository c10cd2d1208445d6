"""Decode-speed SQL functions, through Datasette's documented `prepare_connection` hook:
the memory-bound ceiling, the experts a batch reads, and the measured efficiency of a case.

Formulas in docs/LLM_MATH.md; NULL in gives NULL out.
"""

import json
import sqlite3

from datasette import hookimpl

from domain import sizing
from domain.parameters import number, whole
from serving.sql_functions import nullable, register


@nullable
def decode_tokens_per_s(bandwidth_gbs, gb_read_per_token):
    """Memory-bound decode ceiling: every step reads its weights and KV cache once."""
    return number("bandwidth_gbs", bandwidth_gbs) / number("gb_read_per_token", gb_read_per_token, positive=True)


@nullable
def expected_experts(experts, experts_per_token, batch):
    """Distinct experts of one MoE layer a decode step of `batch` tokens reads (uniform routing)."""
    experts = whole("experts", experts)
    per_token = whole("experts_per_token", experts_per_token)
    if per_token > experts:
        raise ValueError(f"experts_per_token ({per_token}) cannot exceed experts ({experts})")
    return sizing.expected_distinct_experts(experts, per_token, whole("batch", batch))


FUNCTIONS = (decode_tokens_per_s, expected_experts)


def efficiency_of(conn):
    """`decode_efficiency_of(family, model_class, regime)`: the measured share of the
    ceiling as JSON {efficiency, basis, results}, NULL when the database holds no
    decode_efficiency table or no row for the case (then there is no expected
    figure). The table is read once, when the connection opens: the database is
    immutable, and a lookup must not run a query inside the query that calls it."""
    try:
        rows = conn.execute("select accelerator_family, model_class, batch_regime, efficiency, basis, results "
                            "from decode_efficiency").fetchall()
    except sqlite3.Error:  # no such table (before the results are built, or another database)
        rows = []
    table = {(family, model_class, regime): json.dumps({"efficiency": efficiency, "basis": basis, "results": results})
             for family, model_class, regime, efficiency, basis, results in rows}

    def lookup(family, model_class, regime):
        return table.get((family, model_class, regime))
    return lookup


@hookimpl
def prepare_connection(conn):
    register(conn, FUNCTIONS)
    conn.create_function("decode_efficiency_of", 3, efficiency_of(conn), deterministic=True)
