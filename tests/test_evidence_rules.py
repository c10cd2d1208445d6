"""Evidence rules v3 as pure functions: the FP16-accumulate variant stays apart from the comparable figures."""

from domain.schema import TABLES_BY_NAME, derived_slug
from etl.transform import dense_peaks

THROUGHPUT = TABLES_BY_NAME["throughput"]
FORMATS = [{"slug": "fp16", "kind": "family", "bits": 16, "effective_bits": None}]


def figure(accumulate, tflops):
    return {"accelerator": "acme-x2", "precision": "fp16", "sparsity": "dense", "engine": "matrix",
            "accumulate": accumulate, "tflops": tflops}


def test_a_figure_of_the_default_accumulate_keeps_its_slug():
    assert derived_slug(THROUGHPUT, figure("fp32", 100)) == "acme-x2-fp16-dense-matrix"


def test_an_fp16_accumulate_figure_has_a_slug_of_its_own():
    assert derived_slug(THROUGHPUT, figure("fp16", 200)) == "acme-x2-fp16-dense-matrix-fp16-accumulate"


def test_the_dense_peak_is_the_fp32_accumulate_figure():
    # the FP16-accumulate figure is twice as high and must not become the device's peak
    assert dense_peaks([figure("fp32", 100.0), figure("fp16", 200.0)], FORMATS) == {"acme-x2": {16: 100.0}}
