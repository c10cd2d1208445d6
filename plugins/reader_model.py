"""The model page: the row page of `models` as a reader reads it.

Datasette's row page shows one wide row of configuration fields. A reader who found a model wants what it
is (its layers, heads, context window), what it needs (its weights at 16, 8 and 4 bits and its KV cache per
sequence, from the sizing functions of domain/sizing.py), where it fits (the what-fits page, asked for this
model) and how it measured (its MLPerf results). Parameters are shown twice when they differ: as the maker
states them and as counted from the configuration, the count the sizing uses.
"""

from dataclasses import dataclass

from datasette import hookimpl

from domain import parameters, sizing
from serving.measured import share_text, shown
from serving.metadata import DATABASE
from serving.row_pages import is_row_page, row_page_vars

# The weights a reader compares first: every linear layer in one format, block scales counted (its effective
# bits); routers and norms stay 16-bit.
WEIGHT_FORMATS = ("bf16", "fp8", "mxfp4", "nvfp4")
KV_BITS = 16
# The contexts the page sizes the cache at and asks what fits for, up to the model's window (the window itself
# when it is shorter); 8-bit weights and cache, one sequence.
CONTEXTS = (8192, 32768, 131072)
MEASURED_ROWS = 8

SQL = {
    "model": "select * from models where slug = :slug",
    "formats": f"""select slug, name, coalesce(effective_bits, bits) as bits from number_formats
                   where slug in ({", ".join(repr(f) for f in WEIGHT_FORMATS)}) order by bits desc, slug""",
    "checkpoints": """select slug, name, quantization, stated_size_gb, size_gb from checkpoints
                      where model = :slug order by size_gb desc""",
    # The best result per benchmark, scenario, round and accelerator: the model's measured record.
    "measured": """select b.round, b.benchmark, b.scenario, b.units, b.accelerator, a.name as accelerator_name,
                          max(b.result_per_accelerator) as best, b.roofline_share, count(*) as results
                   from benchmark_results b join accelerators a on a.slug = b.accelerator
                   where b.model = :slug and b.division = 'closed' and b.result_per_accelerator is not null
                   group by b.round, b.benchmark, b.scenario, b.accelerator
                   order by b.units <> 'Tokens/s', b.roofline_share is null, b.roofline_share desc, best desc""",
}


@dataclass(frozen=True)
class Figure:
    """One line of the model's make-up."""
    label: str
    text: str


@dataclass(frozen=True)
class Need:
    """Memory a choice of weights or cache takes, in decimal GB."""
    label: str
    gb: str
    href: str | None = None


@dataclass
class ModelPage:
    slug: str
    name: str
    figures: list
    stated_params: str | None     # as the maker states them, in billions
    counted_params: str | None    # counted from the configuration (the sizing's count)
    weights: list                 # [Need]
    kv: list                      # [Need]
    checkpoints: list
    fits: list                    # [Need]: what-fits links, one per context
    measured: list
    problem: str | None = None    # why the configuration cannot be sized
    eight_bit_gb: str | None = None  # the weights at one byte each: the figure beside the stated parameters


def gb(value_bytes: float) -> str:
    """Bytes as decimal GB to 3 significant digits: the configuration's counts give no more."""
    return shown(value_bytes / sizing.GB)


def billions(value) -> str | None:
    return None if value is None else f"{value:,.10g}"


def figures(row) -> list:
    """What the model is made of, in words, from the fields its configuration states."""
    named = (("Organization", row["organization"]), ("Layers", row["layers"]), ("Hidden size", row["hidden_size"]),
             ("Attention", row["attention"] and (row["attention"].upper() if len(row["attention"]) == 3 else row["attention"])),
             ("Query heads", row["attention_heads"]), ("Key/value heads", row["kv_heads"]),
             ("Head dimension", row["head_dim"]), ("Experts", row["experts"]),
             ("Experts per token", row["experts_per_token"]), ("Vocabulary", row["vocab_size"]),
             ("Context window", row["max_context"] and f"{row['max_context']:,} tokens"))
    return [Figure(label, f"{value:,}" if isinstance(value, int) else str(value))
            for label, value in named if value is not None]


def contexts(window: int | None) -> list[int]:
    """CONTEXTS up to the model's window, then the window when it falls short of the last."""
    if window is None:
        return list(CONTEXTS)
    return [t for t in CONTEXTS if t < window] + [window] if window <= CONTEXTS[-1] else list(CONTEXTS)


def tokens_text(tokens: int) -> str:
    """8192 -> 8k (k = 1,024 tokens, as the what-fits page reads it)."""
    return f"{tokens // 1024}k" if tokens % 1024 == 0 else str(tokens)


def needs(row, formats) -> tuple[list, list, str | None]:
    """The weights in each format and one sequence's cache at each context, or why they cannot be sized."""
    try:
        arch = parameters.architecture(row["architecture"])
        counts = sizing.parameters(arch)
    except (ValueError, TypeError) as error:
        return [], [], str(error)
    weights = [Need(f"{f['name']}: {f['bits']:g} bits a weight",
                    gb(sizing.checkpoint_bytes(counts, sizing.Checkpoint.uniform(f["bits"])))) for f in formats]
    kv = [Need(f"{tokens_text(tokens)} tokens", gb(sizing.kv_bytes(arch, tokens, 1, KV_BITS)))
          for tokens in contexts(row["max_context"])]
    return weights, kv, None


def read_rows(conn, slug):
    def rows(sql):
        cursor = conn.execute(sql, {"slug": slug})
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r)) for r in cursor.fetchall()]
    return {name: rows(sql) for name, sql in SQL.items()}


def build(datasette, data) -> ModelPage:
    row = data["model"][0]
    weights, kv, problem = needs(row, data["formats"])
    fits_path = datasette.urls.path("/-/what-fits")
    fits = [Need(f"8-bit weights and cache, {tokens_text(tokens)} context", "",
                 f"{fits_path}?model={row['slug']}&weights=format%3Afp8&kv_format=fp8&context={tokens_text(tokens)}&batch=1")
            for tokens in contexts(row["max_context"])]
    measured = [{**m, "best_shown": shown(m["best"]),
                 "share_shown": share_text(m["roofline_share"]),
                 "href": datasette.urls.row(DATABASE, "accelerators", m["accelerator"])}
                for m in data["measured"][:MEASURED_ROWS]]
    counted = row.get("computed_params_b")
    return ModelPage(slug=row["slug"], name=row["name"], figures=figures(row),
                     stated_params=billions(row["total_params_b"]),
                     counted_params=None if counted is None else f"{counted:,.2f}",
                     weights=weights, kv=kv, checkpoints=data["checkpoints"], fits=fits, measured=measured,
                     problem=problem, eight_bit_gb=next((w.gb for w, f in zip(weights, data["formats"])
                                                         if f["slug"] == "fp8"), None))


@hookimpl
def extra_template_vars(view_name, database, table, request, datasette):
    if not is_row_page(view_name, database, table, "models"):
        return {}
    return row_page_vars(datasette, request, read_rows,
                         lambda slug, data: {"model_page": build(datasette, data)} if data["model"] else {})
