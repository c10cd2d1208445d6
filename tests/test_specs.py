"""The spec tables: coverage, a citation for every number, units and scope kept honest."""

import json

import pytest

from domain.schema import NUMERIC_KINDS, TABLES

# The accelerators the seed articles discuss and the peers readers compare them with.
REQUIRED = """
nvidia-a100-sxm-80gb nvidia-h100-sxm nvidia-h100-pcie nvidia-h100-nvl nvidia-h200-sxm nvidia-h200-nvl
nvidia-b100 nvidia-b200 nvidia-b300 nvidia-gb200 nvidia-gb300 nvidia-rubin nvidia-l40s nvidia-bluefield-4
nvidia-dgx-station nvidia-dgx-spark nvidia-rtx-spark nvidia-rtx-5090 nvidia-rtx-4090
nvidia-rtx-pro-6000-blackwell nvidia-jetson-agx-thor nvidia-jetson-agx-orin-64gb
amd-mi300x amd-mi325x amd-mi350x amd-mi355x amd-mi455x amd-ryzen-ai-max-plus-395 amd-ryzen-ai-halo
amd-threadripper-halo-station amd-xdna2-npu amd-pensando-salina-400
apple-m3-ultra hailo-10h tenstorrent-blackhole-p150a google-tpu-v5e google-tpu-v5p google-tpu-v6e
google-tpu-v7 intel-gaudi-3
""".split()
GPU_CLASSES = ("datacenter-gpu", "workstation-gpu", "consumer-gpu", "unified-memory-system")




def test_every_discussed_accelerator_has_a_row(conn):
    present = {r[0] for r in conn.execute("select slug from accelerators")}
    assert sorted(set(REQUIRED) - present) == []


def test_every_number_has_a_citation(conn):
    missing = []
    for table in TABLES:
        if not table.cited:
            continue
        for field in table.fields:
            if field.kind not in NUMERIC_KINDS:
                continue
            missing += conn.execute(f"""
                select '{table.name}', t.slug, '{field.name}' from [{table.name}] t
                where t.[{field.name}] is not null and not exists (
                  select 1 from citations c where c.table_name = '{table.name}' and c.row_slug = t.slug
                  and c.field = '{field.name}' and c.value = t.[{field.name}])""").fetchall()
    assert [tuple(m) for m in missing] == []


def test_every_citation_points_to_a_source_with_url_or_article(conn):
    bad = conn.execute("""select c.slug from citations c join sources s on s.slug = c.source
                          where s.url is null and s.article is null""").fetchall()
    assert bad == []


def test_every_format_support_claim_is_cited(conn):
    uncited = conn.execute("""select f.slug from format_support f where not exists (
        select 1 from citations c where c.table_name = 'format_support' and c.row_slug = f.slug)""").fetchall()
    assert uncited == []


def test_gpus_have_memory_and_bandwidth_or_say_why(conn):
    rows = conn.execute(f"""select slug from accelerators where device_class in {GPU_CLASSES}
        and status != 'announced' and (memory_gb is null or memory_bandwidth_gbs is null) and note is null""").fetchall()
    assert [r[0] for r in rows] == []


def test_sparse_figures_are_never_below_dense(conn):
    rows = conn.execute("""select d.accelerator, d.precision from throughput d join throughput s
        on s.accelerator = d.accelerator and s.precision = d.precision and s.engine = d.engine
        where d.sparsity = 'dense' and s.sparsity = 'sparse-2-4' and s.tflops < d.tflops""").fetchall()
    assert [tuple(r) for r in rows] == []


def fp_family_evidence(conn, slug, family):
    """The formats of `family` the data says `slug` supports (claims and throughput rows), and
    whether an explicit `supported: false` claim of the family exists."""
    supported = {r[0] for r in conn.execute(
        """select f.format from format_support f join number_formats n on n.slug = f.format
           where f.accelerator = ? and n.family = ? and coalesce(f.supported, 1)
           union select t.precision from throughput t join number_formats n on n.slug = t.precision
           where t.accelerator = ? and n.family = ?""", (slug, family, slug, family))}
    refused = conn.execute("""select count(*) from format_support f join number_formats n on n.slug = f.format
                              where f.accelerator = ? and n.family = ? and f.supported = 0""",
                           (slug, family)).fetchone()[0]
    return supported, bool(refused)


def test_fp4_formats_name_the_formats_or_say_fp4(conn):
    for row in conn.execute("select slug, fp4_formats from accelerators"):
        supported, _ = fp_family_evidence(conn, row["slug"], "fp4")
        named = supported - {"fp4"}
        expected = named or ({"fp4"} if supported else set())
        assert set(json.loads(row["fp4_formats"])) == expected, row["slug"]
        assert expected <= {"nvfp4", "mxfp4", "fp4"}, row["slug"]


@pytest.mark.parametrize("column, family", [("native_fp8", "fp8"), ("native_fp4", "fp4")])
def test_native_capability_is_yes_no_or_unknown(conn, column, family):
    for row in conn.execute(f"select slug, {column} from accelerators"):
        supported, refused = fp_family_evidence(conn, row["slug"], family)
        expected = "yes" if supported else "no" if refused else "unknown"
        assert row[column] == expected, row["slug"]


def test_every_accelerator_with_fp4_throughput_is_native_fp4(conn):
    """AMD's MXFP4 parts included: the facet that finds FP4 hardware misses none."""
    with_fp4 = {r[0] for r in conn.execute("select accelerator from throughput where precision = 'fp4'")}
    native = {r[0] for r in conn.execute("select slug from accelerators where native_fp4 = 'yes'")}
    assert with_fp4 and with_fp4 <= native
    assert any(slug.startswith("amd-") for slug in with_fp4)


async def test_filter_by_memory_sorted_by_bandwidth_is_fully_sourced(client, conn):
    response = await client.get("/computekb/accelerators.json?memory_gb__gte=80&_sort_desc=memory_bandwidth_gbs"
                                "&_shape=array&_size=max")
    assert response.status_code == 200
    rows = response.json()
    expected = conn.execute("select count(*) from accelerators where memory_gb >= 80").fetchone()[0]
    assert len(rows) == expected > 5
    bandwidths = [r["memory_bandwidth_gbs"] for r in rows if r["memory_bandwidth_gbs"] is not None]
    assert bandwidths == sorted(bandwidths, reverse=True)
    for row in rows:
        assert row["memory_gb"] >= 80
        cited = {c[0] for c in conn.execute(
            "select field from citations where table_name = 'accelerators' and row_slug = ?", (row["slug"],))}
        assert "memory_gb" in cited, row["slug"]


@pytest.mark.parametrize("slug, memory", [
    # both print 24 (AMD "24 GiB" in ROCm's table, NVIDIA "24 GB"): the same capacity, the same value
    ("amd-radeon-rx-7900-xtx", 24), ("nvidia-rtx-4090", 24), ("amd-radeon-pro-w7900", 48),
])
def test_capacity_is_the_number_the_vendor_prints(conn, slug, memory):
    assert conn.execute("select memory_gb from accelerators where slug = ?", (slug,)).fetchone()[0] == memory


@pytest.mark.parametrize("slug, tflops", [
    # Tenstorrent's BLOCKFP8 figures, stored as bfp8 (its own precision), on Wormhole and Blackhole alike
    ("tenstorrent-wormhole-n150", 148), ("tenstorrent-wormhole-n300", 262), ("tenstorrent-blackhole-p150a", 664),
])
def test_block_floating_point_is_its_own_precision(conn, slug, tflops):
    assert conn.execute("select tflops from throughput where accelerator = ? and precision = 'bfp8' "
                        "and sparsity = 'dense' and engine = 'matrix'", (slug,)).fetchone()[0] == tflops
    assert conn.execute("select family from number_formats where slug = 'bfp8'").fetchone()[0] == "bfp"


@pytest.mark.parametrize("slug, speedup", [("nvidia-h100-sxm", 2.0), ("aws-inferentia2", 1.0)])
def test_fp8_speedup_shows_native_fp8_at_any_rate(conn, slug, speedup):
    assert tuple(conn.execute("select fp8_speedup, native_fp8 from accelerators where slug = ?", (slug,)).fetchone()) \
        == (speedup, "yes")


def test_every_row_with_an_fp8_figure_is_native_fp8(conn):
    assert conn.execute("select slug from accelerators where fp8_speedup is not null and native_fp8 != 'yes'").fetchall() == []


def test_every_power_value_says_its_kind_and_every_memory_its_kind(conn):
    assert conn.execute("select slug from accelerators where tdp_w is not null and power_kind is null").fetchall() == []
    unknown = conn.execute("""select slug from accelerators where memory_kind is null
        and (memory_gb is not null or memory_type is not null or memory_bandwidth_gbs is not null)""").fetchall()
    # AWS states "8GiB of device DRAM memory" for Inferentia, not which kind
    assert [r[0] for r in unknown] == ["aws-inferentia"]
    sram = {r[0] for r in conn.execute("select slug from accelerators where memory_kind = 'on-chip-sram'")}
    assert {"cerebras-wse-3", "groq-lpu"} <= sram


def test_blackwell_names_every_blackwell_line(conn):
    found = {r[0] for r in conn.execute("""select a.slug from accelerators_fts f join accelerators a on a.rowid = f.rowid
        where accelerators_fts match 'architecture_family : "blackwell"'""")}
    assert {"nvidia-rtx-5090", "nvidia-rtx-5060-ti-16gb", "nvidia-gb10", "nvidia-jetson-agx-thor",
            "nvidia-b200", "nvidia-b300", "nvidia-rtx-pro-6000-blackwell"} <= found
    assert conn.execute("select architecture_family from accelerators where slug = 'nvidia-b300'").fetchone()[0] == "Blackwell"


def test_every_matrix_precision_with_a_figure_has_its_format_claim(conn):
    """A format list that leaves out a precision the device computes in reads as "emulated" on what-fits."""
    unclaimed = conn.execute("""
        select distinct t.accelerator || ':' || t.precision from throughput t join number_formats n on n.slug = t.precision
        where t.engine = 'matrix' and not exists (select 1 from format_support f join number_formats m on m.slug = f.format
          where f.accelerator = t.accelerator and coalesce(f.supported, 1) = 1
          and (f.format = t.precision or m.family = n.family)) order by 1""").fetchall()
    # FP4 figures whose format the row's sources do not name, where the family names NVFP4 elsewhere; DGX
    # Station states FP4 alone, and a format list of FP4 alone would read as BF16 emulated
    assert [r[0] for r in unclaimed] == ["nvidia-dgx-station:fp4", "nvidia-gb200-nvl72:fp4", "nvidia-gb300-nvl72:fp4",
                                        "nvidia-rtx-pro-6000-blackwell-server:fp4"]
    for slug in ("nvidia-b100", "nvidia-h200-nvl", "nvidia-gh200", "nvidia-gb300", "google-tpu-v7", "intel-gaudi-3"):
        assert conn.execute("select 1 from format_support where accelerator = ? and format = 'bf16' "
                            "and coalesce(supported, 1) = 1", (slug,)).fetchone(), slug
