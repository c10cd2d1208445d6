"""The data format as documented for writers of data files: every field of its examples is
accepted and lands where the documentation says."""

import sqlite3
import textwrap

from etl.build import build_database

FILES = {
    "sources.yml": """
        sources:
          - slug: vendor-h200-datasheet
            url: https://example.com/h200-datasheet
            title: "H200 datasheet"
            publisher: Vendor
            kind: vendor-datasheet
            tier: vendor-primary
            published: 2024-11
            retrieved: 2026-12-01
            note: >-
              Read through a stored copy.
          - slug: vendor-blackwell-datasheet
            url: https://example.com/blackwell
            title: Blackwell datasheet
            publisher: Vendor
            kind: vendor-datasheet
            tier: vendor-primary
            retrieved: 2026-12-01
        vendors:
          - {slug: vendor, name: Vendor}
        interconnects:
          - {slug: nvlink-4, name: NVLink 4, kind: gpu-gpu, bidirectional_gbs: 900 GB/s, source: vendor-h200-datasheet}
          - {slug: pcie-5-x16, name: PCIe 5.0 x16, kind: host, bidirectional_gbs: 128 GB/s, source: vendor-h200-datasheet}
        number_formats:
          - {slug: fp64, name: FP64, family: fp64, kind: family}
          - {slug: fp8, name: FP8, family: fp8, kind: family}
          - {slug: fp4, name: FP4, family: fp4, kind: family}
          - {slug: nvfp4, name: NVFP4, family: fp4, kind: block-scaled-float}
        """,
    "specs/accelerators/h200.yml": """
        accelerators:
          - slug: vendor-h200-sxm
            vendor: vendor
            name: H200 SXM
            family: Hopper
            architecture: Hopper (GH100)
            device_class: datacenter-gpu
            scope: device
            system: null
            form_factor: SXM5
            status: shipping
            announced: 2023-11-13
            available: 2024-05
            memory_gb: 141 GB
            memory_type: HBM3E
            memory_bandwidth_gbs: 4.8 TB/s
            tdp_w:
              value: 700 W
              source: vendor-h200-datasheet
              kind: vendor-spec
              scope: device
              note: "Up to 700W (configurable)"
            interconnect: nvlink-4
            interconnect_gbs: 900 GB/s
            host_interface: pcie-5-x16
            source: vendor-h200-datasheet
            note: >-
              Free text.
          - slug: vendor-tpu
            vendor: vendor
            name: TPU
            device_class: tpu-asic
            scope: chip
            status: announced
            memory_gb: 192 GiB
            source: vendor-h200-datasheet
        throughput:
          - {accelerator: vendor-h200-sxm, precision: fp64, sparsity: dense, engine: matrix, tflops: 67 TFLOPS,
             source: vendor-h200-datasheet}
          - {accelerator: vendor-h200-sxm, precision: fp64, sparsity: dense, engine: vector, tflops: 34 TFLOPS,
             source: vendor-h200-datasheet}
          - {accelerator: vendor-h200-sxm, precision: fp8, sparsity: sparse-2-4, engine: matrix, tflops: 3958 TFLOPS,
             source: vendor-h200-datasheet}
          - accelerator: vendor-h200-sxm
            precision: fp8
            sparsity: dense
            engine: matrix
            tflops: {value: 1979 TFLOPS, kind: derived, note: "the footnote: dense is one half"}
            source: vendor-h200-datasheet
        format_support:
          - {accelerator: vendor-h200-sxm, format: nvfp4, supported: false, source: vendor-h200-datasheet, note: "not supported"}
          - {accelerator: vendor-tpu, format: fp4, source: vendor-blackwell-datasheet, note: "FP4 only"}
        prices:
          - {slug: vendor-h200-launch-usd, accelerator: vendor-h200-sxm, kind: launch-list, amount: 1999, currency: USD,
             observed: 2025-01-06, date_basis: stated, region: US, source: vendor-h200-datasheet}
        """,
}


def test_the_documented_examples_build(tmp_path):
    data = tmp_path / "data"
    for name, text in FILES.items():
        path = data / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    db = tmp_path / "kb.db"
    build_database(data, db)
    with sqlite3.connect(db) as conn:
        h200 = conn.execute("SELECT scope, announced, available, memory_type, host_interface, native_fp8, native_fp4, "
                            "fp4_formats FROM accelerators WHERE slug = 'vendor-h200-sxm'").fetchone()
        assert h200 == ("device", "2023-11-13", "2024-05", "HBM3E", "pcie-5-x16", "yes", "no", "[]")
        assert conn.execute("SELECT memory_gb, native_fp4, fp4_formats FROM accelerators WHERE slug = 'vendor-tpu'"
                            ).fetchone() == (192.0, "yes", '["fp4"]')
        slugs = {r[0] for r in conn.execute("SELECT slug FROM throughput")}
        assert slugs == {"vendor-h200-sxm-fp64-dense-matrix", "vendor-h200-sxm-fp64-dense-vector",
                         "vendor-h200-sxm-fp8-sparse-2-4-matrix", "vendor-h200-sxm-fp8-dense-matrix"}
        assert conn.execute("SELECT kind, tier, scope FROM citations WHERE field = 'tdp_w'").fetchone() == (
            "vendor-spec", "vendor-primary", "device")
        assert conn.execute("SELECT fp64_matrix_tflops, fp64_vector_tflops, fp8_matrix_tflops FROM dense_throughput "
                            "WHERE accelerator = 'vendor-h200-sxm'").fetchone() == (67, 34, 1979)
