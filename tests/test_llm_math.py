"""The sizing math (domain/sizing.py) and its SQL functions (plugins/sizing_sql.py).

Every expected value below is worked out by hand in its comment, on small
made-up architectures whose counts can be checked on paper, or comes from a
maker's published figure; none is produced by the code under test. GB are
decimal (10^9 bytes).
"""

import json
from urllib.parse import quote

import pytest

from domain import parameters, sizing
from plugins import query_checks, sizing_sql, speed_sql
from serving.site import query_path
from serving.sql_functions import arities

GIB = 2**30

# Small architectures, counted by hand in the tests that use them.
DENSE = sizing.Architecture(layers=2, hidden_size=8, attention_heads=4, kv_heads=2, head_dim=2,
                            intermediate_size=16, vocab_size=10)
MOE = sizing.Architecture(layers=2, dense_layers=1, hidden_size=4, attention_heads=2, kv_heads=1, head_dim=2,
                          intermediate_size=8, vocab_size=10, tied_embeddings=True, experts=4, experts_per_token=2,
                          shared_experts=1, moe_intermediate_size=2)
MLA = sizing.Architecture(layers=1, hidden_size=4, attention_heads=2, attention="mla", q_lora_rank=2, kv_lora_rank=3,
                          qk_rope_head_dim=1, qk_nope_head_dim=2, v_head_dim=2, intermediate_size=4, vocab_size=5)


def gb(value):
    return pytest.approx(value, rel=1e-12)


# Parameters

def test_dense_parameters_by_tensor_group():
    # embedding 10 × 8 = 80, output head 80 (not tied);
    # attention per layer: q and o 2 × 8 × 4 heads × 2 = 128, k and v 2 × 8 × 2 KV heads × 2 = 64; × 2 layers = 384
    # FFN 3 × 8 × 16 = 384 per layer, × 2 = 768; total 80 + 80 + 384 + 768 = 1312
    counts = sizing.parameters(DENSE)
    assert (counts.embedding, counts.output_head, counts.attention, counts.dense_ffn) == (80, 80, 384, 768)
    assert counts.total == 1312
    # a token reads everything but the embedding table: 1312 − 80
    assert sizing.active_parameters(DENSE, counts) == 1232


def test_tied_embeddings_have_no_separate_head():
    tied = sizing.Architecture(**{**vars(DENSE), "tied_embeddings": True})
    assert sizing.parameters(tied).total == 1312 - 80


def test_moe_parameters_count_dense_layers_experts_shared_experts_and_router():
    # embedding 10 × 4 = 40, tied; attention per layer 2 × 4 × 2 × 2 + 2 × 4 × 1 × 2 = 48, × 2 = 96;
    # 1 dense layer: 3 × 4 × 8 = 96; 1 MoE layer: 4 experts of 3 × 4 × 2 = 24 → 96 routed, 24 shared,
    # router 4 × 4 = 16. Total 40 + 96 + 96 + 96 + 24 + 16 = 368.
    counts = sizing.parameters(MOE)
    assert (counts.routed_experts, counts.shared_experts, counts.router, counts.dense_ffn) == (96, 24, 16, 96)
    assert counts.total == 368
    # active: all but the embedding (40) and the 2 of 4 routed experts a token skips (48): 280
    assert sizing.active_parameters(MOE, counts) == 280


@pytest.mark.parametrize("counting, dense, moe", [
    # DENSE reads 1232 of its 1312 (all but the 80 of its embedding table); MOE reads 280 (tied: no head of its own)
    ("without-embedding", 1232, 280),
    ("with-embedding", 1232 + 80, 280 + 40),        # the embedding table counted too
    ("without-embedding-and-head", 1232 - 80, 280),  # the transformer blocks alone: DENSE's 80-weight head left out
])
def test_active_parameters_counted_as_makers_count_them(counting, dense, moe):
    assert sizing.active_parameters_counted(DENSE, sizing.parameters(DENSE), counting) == dense
    assert sizing.active_parameters_counted(MOE, sizing.parameters(MOE), counting) == moe


def test_an_unknown_way_of_counting_is_refused():
    with pytest.raises(sizing.SizingError, match="unknown way of counting"):
        sizing.active_parameters_counted(DENSE, sizing.parameters(DENSE), "with-vision")


def test_mla_parameters():
    # q: 4 × 2 (down) + 2 × 2 heads × (2 + 1) (up) = 20; kv down 4 × (3 + 1) = 16;
    # kv up 3 × 2 × (2 + 2) = 24; out 2 × 2 × 4 = 16 → 76; FFN 3 × 4 × 4 = 48; embedding and head 20 each
    assert sizing.attention_parameters(MLA) == 76
    assert sizing.parameters(MLA).total == 76 + 48 + 20 + 20


# Parameters of real models against their makers' figures (the configs are the
# data's; the figures are the makers', quoted in the comments).

GPT_OSS_120B = sizing.Architecture(layers=36, hidden_size=2880, attention_heads=64, kv_heads=8, head_dim=64,
                                   vocab_size=201088, attention="hybrid", experts=128, experts_per_token=4,
                                   moe_intermediate_size=2880, sliding_window=128, full_attention_layers=18)
GPT_OSS_20B = sizing.Architecture(**{**vars(GPT_OSS_120B), "layers": 24, "experts": 32, "full_attention_layers": 12})
DEEPSEEK_V3 = sizing.Architecture(layers=61, hidden_size=7168, attention_heads=128, vocab_size=129280, attention="mla",
                                  intermediate_size=18432, experts=256, experts_per_token=8, shared_experts=1,
                                  moe_intermediate_size=2048, dense_layers=3, q_lora_rank=1536, kv_lora_rank=512,
                                  qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128)
MXFP4_EXPERTS = sizing.Checkpoint(embedding=16, output_head=16, attention=16, dense_ffn=16, experts=4.25)


@pytest.mark.parametrize("arch, total_b, active_b", [
    (GPT_OSS_120B, 116.83, 5.13),  # OpenAI's model card: 116.83B total, 5.13B active
    (GPT_OSS_20B, 20.91, 3.61),    # 20.91B total, 3.61B active
    (DEEPSEEK_V3, 671, 36.7),      # README_WEIGHTS.md: 671B, 36.7B activated
])
def test_parameters_agree_with_the_makers_within_one_percent(arch, total_b, active_b):
    counts = sizing.parameters(arch)
    assert counts.total / 1e9 == pytest.approx(total_b, rel=0.01)
    assert sizing.active_parameters(arch, counts) / 1e9 == pytest.approx(active_b, rel=0.01)


@pytest.mark.parametrize("arch, card_gib", [(GPT_OSS_120B, 60.8), (GPT_OSS_20B, 12.8)])
def test_gpt_oss_checkpoints_agree_with_the_model_card_within_three_percent(arch, card_gib):
    # OpenAI's model card gives the checkpoint sizes: 60.8 GiB (120b) and 12.8 GiB (20b),
    # MXFP4 experts (4.25 bits with their E8M0 scales) and BF16 for everything else.
    size = sizing.checkpoint_bytes(sizing.parameters(arch), MXFP4_EXPERTS)
    assert size / GIB == pytest.approx(card_gib, rel=0.03)
    # one format for the whole checkpoint (every weight in MXFP4) misses it by more than 3%
    assert sizing.checkpoint_bytes(sizing.parameters(arch), sizing.Checkpoint.uniform(4.25, 4.25)) / GIB \
        != pytest.approx(card_gib, rel=0.03)


# Llama 3.1 8B (the dimensions of Llama 3 8B, for which llama.cpp states its sizes) in GGUF.
LLAMA_3_1_8B = sizing.Architecture(layers=32, hidden_size=4096, attention_heads=32, kv_heads=8, head_dim=128,
                                   intermediate_size=14336, vocab_size=128256)
# Bits of llama.cpp's block types (ggml-common.h): Q4_K 144 bytes per 256 weights, Q5_K 176, Q6_K 210; Q8_0 34 per 32.
Q4_K, Q5_K, Q6_K, Q8_0 = 144 * 8 / 256, 176 * 8 / 256, 210 * 8 / 256, 34 * 8 / 32


def k_quant_mix(default):
    """Q4_K_M / Q5_K_M as llama-quant.cpp writes a 32-layer model: attn_v (1024 of the 10,240 attention
    columns) and ffn_down (a third of the FFN) in Q6_K in 16 of the 32 layers, output.weight in Q6_K."""
    return sizing.Checkpoint(embedding=default, output_head=Q6_K, attention=default + 0.5 * 0.1 * (Q6_K - default),
                             dense_ffn=default + 0.5 / 3 * (Q6_K - default), experts=default)


@pytest.mark.parametrize("checkpoint, stated_gib", [
    (k_quant_mix(Q4_K), 4.58),             # quantize.cpp: "Q4_K_M ... 4.58G ... @ Llama-3-8B"
    (k_quant_mix(Q5_K), 5.33),             # "Q5_K_M ... 5.33G"
    (sizing.Checkpoint.uniform(Q8_0), 7.96),  # "Q8_0 ... 7.96G"
])
def test_gguf_checkpoints_agree_with_llama_cpp_within_three_percent(checkpoint, stated_gib):
    size = sizing.checkpoint_bytes(sizing.parameters(LLAMA_3_1_8B), checkpoint)
    assert size / GIB == pytest.approx(stated_gib, rel=0.03)


def test_a_k_quant_mix_is_not_its_default_type():
    # All of Llama 3.1 8B in Q4_K: 8.03B × 4.5 / 8 = 4.52 GB = 4.21 GiB, 8% under the 4.58 GiB of Q4_K_M
    uniform = sizing.checkpoint_bytes(sizing.parameters(LLAMA_3_1_8B), sizing.Checkpoint.uniform(Q4_K))
    assert uniform / GIB != pytest.approx(4.58, rel=0.03)


def test_checkpoint_bytes_per_tensor_group():
    # DENSE in a made-up checkpoint: embedding 80 × 16 / 8 = 160, head 80 × 8 / 8 = 80,
    # attention 384 × 4 / 8 = 192, FFN 768 × 4 / 8 = 384 → 816 bytes
    checkpoint = sizing.Checkpoint(embedding=16, output_head=8, attention=4, dense_ffn=4, experts=4)
    assert sizing.checkpoint_bytes(sizing.parameters(DENSE), checkpoint) == 816


# Tensor parallelism

@pytest.mark.parametrize("heads, tp, nearest", [
    (128, 6, "tp=4 or tp=8"),   # DeepSeek-V3: 6 does not divide 128 heads
    (64, 3, "tp=2 or tp=4"),
    (64, 128, "tp=64"),         # more ranks than heads: only smaller layouts
])
def test_tp_must_divide_the_attention_heads(heads, tp, nearest):
    arch = sizing.Architecture(**{**vars(DENSE), "attention_heads": heads})
    problem = sizing.layout_problem(arch, sizing.Layout(tp))
    assert f"tp={tp} does not divide the {heads} attention heads" in problem and problem.endswith(nearest)
    with pytest.raises(sizing.SizingError):
        sizing.size(arch, sizing.Checkpoint.uniform(16), sizing.Layout(tp), sizing.Device(1e12, 1000),
                    sizing.Workload(1, 1, 16))


def test_a_valid_layout_has_no_problem():
    assert sizing.layout_problem(DENSE, sizing.Layout(4, 2)) is None
    assert "exceeds the 2 layers" in sizing.layout_problem(DENSE, sizing.Layout(1, 3))


@pytest.mark.parametrize("tp, values", [
    (1, 160),  # 2 KV heads: 2 (K and V) × 2 heads × 4 dims × 10 tokens
    (2, 80),   # one head per rank
    (4, 80),   # fewer KV heads than ranks: each rank keeps a whole head (replicated), not half of one
])
def test_kv_heads_are_replicated_when_fewer_than_ranks(tp, values):
    arch = sizing.Architecture(layers=1, hidden_size=8, attention_heads=4, kv_heads=2, head_dim=4, vocab_size=1)
    assert sizing.kv_values_per_token(arch, 10, tp) == values


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_the_mla_latent_is_whole_on_every_rank(tp):
    # 2 layers × (latent 3 + RoPE key 1) × 5 tokens = 40 values, whatever the TP
    arch = sizing.Architecture(**{**vars(MLA), "layers": 2})
    assert sizing.kv_values_per_token(arch, 5, tp) == 40


def test_full_attention_layers_with_their_own_kv_heads():
    # 3 layers, 1 full: full layer caches one tensor (keys = values) of 1 head × 8 dims × 10 tokens = 80;
    # 2 windowed layers: 2 (K, V) × 2 heads × 2 dims × min(10, 4) tokens × 2 layers = 64; total 144
    arch = sizing.Architecture(layers=3, hidden_size=4, attention_heads=2, kv_heads=2, head_dim=2, vocab_size=1,
                               attention="hybrid", sliding_window=4, full_attention_layers=1,
                               full_attention_kv_heads=1, full_attention_head_dim=8, full_attention_kv_shared=True)
    assert sizing.kv_values_per_token(arch, 10) == 144


# MoE decode

@pytest.mark.parametrize("experts, per_token, batch, expected", [
    (8, 2, 1, 2),                   # one token reads its own experts
    (8, 2, 8, 7.19909668),          # Mixtral at batch 8: 8 × (1 − 0.75^8) = 8 × 0.899903 = 7.199
    # DeepSeek-V3 at batch 8: (248/256)^8 by squaring: 0.96875² = 0.9384766, ^4 = 0.8807383, ^8 = 0.7756998;
    # 256 × (1 − 0.7756998) = 57.4208
    (256, 8, 8, 57.4208),
    (4, 2, 2, 3),                   # 4 × (1 − 0.5²)
])
def test_expected_distinct_experts_under_uniform_routing(experts, per_token, batch, expected):
    assert sizing.expected_distinct_experts(experts, per_token, batch) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("batch, step", [
    # MOE in 16 bits, no KV cache. Read every step: attention 96 × 2 = 192 bytes, dense FFN 96 × 2 = 192,
    # shared expert 24 × 2 = 48, router 16 × 2 = 32, tied head (the embedding) 40 × 2 = 80 → 544; plus the
    # routed experts touched, of 96 × 2 = 192 bytes for all four:
    (1, 544 + 192 * 2 / 4),          # 2 experts: 640
    (2, 544 + 192 * 3 / 4),          # 3 expected: 688
    (8, 544 + 192 * 3.984375 / 4),   # 4 × (1 − 0.5^8) = 3.984375: 735.25
])
def test_decode_reads_the_experts_the_batch_touches(batch, step):
    counts = sizing.parameters(MOE)
    assert sizing.step_bytes(MOE, counts, sizing.Checkpoint.uniform(16), sizing.Layout(1), batch, 0) == step


# A whole deployment, by hand (DENSE, 16-bit weights and KV cache, 10 tokens, TP=2)

def dense_on(memory_bytes, batch):
    return sizing.size(DENSE, sizing.Checkpoint.uniform(16), sizing.Layout(2), sizing.Device(memory_bytes, 1),
                       sizing.Workload(context=10, batch=batch, kv_bits=16, utilization=1, runtime=None))


def test_size_per_device():
    # weights on one rank: attention (128 / 2 + 2 × 8 × 2 × 1 head) × 2 layers × 2 bytes = 384,
    # FFN 768 × 2 / 2 = 768, embedding and head 160 × 2 / 2 = 160 → 1312 bytes
    # KV per sequence: 2 × 1 head × 2 dims × 2 layers × 10 tokens × 2 bytes = 160; batch 3 → 480
    # no runtime: no reserve
    s = dense_on(2000, 3)
    assert (s.weights_per_device, s.kv_per_sequence, s.kv_per_device, s.reserve_per_device) == (1312, 160, 480, 0)
    assert s.needed_per_device == 1792 and s.fits
    # per step: attention 384 + FFN 768 + head 80 + KV 480 = 1712 bytes at 1 GB/s = 1.712 µs, plus two
    # all-reduces per layer at 6 µs each (no link bandwidth known): 2 × 2 × 6 = 24 µs
    assert s.step_bytes_per_device == 1712
    assert s.tokens_per_s_per_sequence == pytest.approx(1 / (1712e-9 + 24e-6))
    assert s.tokens_per_s == pytest.approx(3 / (1712e-9 + 24e-6))


def test_the_batch_counts_when_sizing():
    # 1312 + 4 × 160 = 1952 ≤ 2000; one more sequence: 2112 > 2000
    assert dense_on(2000, 4).fits and not dense_on(2000, 5).fits


def test_pipeline_stages_split_the_layers():
    # TP=1, PP=2: one of the 2 layers per stage: attention 192 params × 2 bytes = 384, FFN 384 × 2 = 768;
    # embedding and head on their own stages: the larger, 80 × 2 = 160 bytes → 384 + 768 + 160 = 1312
    s = sizing.size(DENSE, sizing.Checkpoint.uniform(16), sizing.Layout(1, 2), sizing.Device(1e6, 1),
                    sizing.Workload(context=10, batch=1, kv_bits=16))
    assert s.weights_per_device == 1312
    # KV: 2 × 2 heads × 2 dims × 10 tokens × 2 bytes on the stage's one layer = 160
    assert s.kv_per_sequence == 160


def test_the_smallest_layout_grows_tensor_parallelism_first():
    workload = sizing.Workload(context=10, batch=3, kv_bits=16, utilization=1, runtime=None)
    # TP=1 needs 2624 + 3 × 320 = 3584 bytes; TP=2 1792 (above): on 2000-byte devices, TP=2
    found = sizing.smallest_layout(DENSE, sizing.Checkpoint.uniform(16), sizing.Device(2000, 1), workload)
    assert (found.layout.tp, found.layout.pp) == (2, 1)
    assert sizing.smallest_layout(DENSE, sizing.Checkpoint.uniform(16), sizing.Device(10, 1), workload) is None


# Backwards (DENSE, TP=1, 16 bits: weights 2624 bytes, no runtime reserve)

def backwards_workload(**kw):
    return sizing.Workload(**{"context": 10, "batch": 1, "kv_bits": 16, "utilization": 1, "runtime": None, **kw})


def test_largest_batch():
    # free 4000 − 2624 = 1376 bytes; a sequence of 10 tokens caches 2 × 2 × 2 × 2 × 10 × 2 = 320 → 4
    assert sizing.largest_batch(DENSE, sizing.Checkpoint.uniform(16), sizing.Layout(1), sizing.Device(4000, 1),
                                backwards_workload()) == 4
    assert sizing.largest_batch(DENSE, sizing.Checkpoint.uniform(16), sizing.Layout(1), sizing.Device(2000, 1),
                                backwards_workload()) == 0


@pytest.mark.parametrize("batch, max_context, longest", [
    (1, 1000, 43),   # 32 bytes a token: 43 × 32 = 1376 ≤ 1376 < 44 × 32
    (2, 1000, 21),   # 64 bytes a token for two sequences: 21 × 64 = 1344 ≤ 1376 < 1408
    (1, 30, 30),     # capped by the model's context
])
def test_longest_context(batch, max_context, longest):
    assert sizing.longest_context(DENSE, sizing.Checkpoint.uniform(16), sizing.Layout(1), sizing.Device(4000, 1),
                                  backwards_workload(batch=batch), max_context) == longest


# The build's check of a models row

def test_a_model_missing_a_field_it_needs_is_named():
    row = {"layers": 2, "hidden_size": 8, "attention_heads": 4, "vocab_size": 10, "attention": "mla", "kv_lora_rank": 3}
    assert sizing.missing_fields(row) == ["qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "intermediate_size"]
    assert sizing.missing_fields({**vars(DENSE)}) == []


def test_a_model_with_linear_layers_or_an_indexer_names_their_missing_fields():
    row = {**vars(DENSE), "linear_attention_layers": 1, "linear_attention": "mamba2", "linear_heads": 4,
           "indexer_heads": 2}
    assert sizing.missing_fields(row) == ["linear_key_heads", "linear_key_head_dim", "linear_value_head_dim",
                                          "linear_conv_kernel", "indexer_head_dim", "q_lora_rank"]


# The simple SQL functions

def test_llama_3_1_70b_kv_cache_at_128k_in_fp16():
    # 80 layers, 8 KV heads, head_dim 128, 131,072 tokens, batch 1, 2 bytes:
    # 2 × 80 × 8 × 128 × 131,072 × 2 = 42,949,672,960 bytes = 42.95 GB
    assert sizing_sql.kv_cache_gb(80, 8, 128, 131072, 1, 2) == gb(42.94967296)


def test_kv_cache_grows_with_batch_and_shrinks_with_bytes():
    # Llama 3.1 8B, 8,192 tokens, batch 4, FP8 (1 byte): 2 × 32 × 8 × 128 × 8,192 × 4 × 1 = 2,147,483,648 bytes
    assert sizing_sql.kv_cache_gb(32, 8, 128, 8192, 4, 1) == gb(2.147483648)


@pytest.mark.parametrize("params_b, bits, expected", [
    (70.6, 4.5, 39.7125),    # NVFP4: 70.6e9 × 4.5 / 8 = 39,712,500,000 bytes
    (70, 16, 140.0),         # FP16: 70e9 × 2 bytes
    (0, 16, 0.0),            # no parameters, no memory
])
def test_weights(params_b, bits, expected):
    assert sizing_sql.weights_gb(params_b, bits) == gb(expected)


def test_mla_caches_one_latent_and_the_rope_key():
    # DeepSeek-V3: 61 layers × (512 latent + 64 RoPE) = 35,136 values per token; × 131,072 × 2 bytes
    assert sizing_sql.kv_cache_mla_gb(61, 512, 64, 131072, 1, 2) == gb(9.210691584)


def test_sliding_window_layers_cache_at_most_the_window():
    # gpt-oss-120b: 18 × 131,072 + 18 × 128 = 2,361,600 token-layers × 2 × 8 × 64 × 2 bytes = 4,836,556,800
    assert sizing_sql.kv_cache_swa_gb(36, 18, 8, 64, 131072, 128, 1, 2) == gb(4.8365568)
    # Gemma 3 27B: 10 × 131,072 + 52 × 1,024 = 1,363,968 × 4,096 values × 2 bytes = 11,173,625,856
    assert sizing_sql.kv_cache_swa_gb(62, 10, 16, 128, 131072, 1024, 1, 2) == gb(11.173625856)


def test_decode_ceiling():
    # H100 SXM, 3,350 GB/s, reading 70 GB per step: 3,350 / 70 = 47.857...
    assert speed_sql.decode_tokens_per_s(3350, 70) == pytest.approx(47.857142857)


@pytest.mark.parametrize("slug, bits", [
    ("fp16", 16), ("bf16", 16), ("fp8", 8), ("int8", 8), ("int4", 4),
    ("mxfp4", 4.25), ("nvfp4", 4.5), ("mxfp8", 8.25), ("mxfp6", 6.25), (" NVFP4 ", 4.5),
])
def test_bits_per_weight(slug, bits):
    assert sizing_sql.bits_per_weight(slug) == bits


@pytest.mark.parametrize("fn", [sizing_sql.weights_gb, sizing_sql.kv_cache_gb, sizing_sql.kv_cache_mla_gb,
                                sizing_sql.kv_cache_swa_gb, speed_sql.decode_tokens_per_s, speed_sql.expected_experts],
                         ids=lambda fn: fn.__name__)
def test_null_in_gives_null_out(fn):
    for position in range(max(arities(fn))):
        args = [1] * max(arities(fn))
        args[position] = None
        assert fn(*args) is None, (fn.__name__, position)


@pytest.mark.parametrize("call, message", [
    (lambda: sizing_sql.weights_gb(-70, 16), "params_b must not be negative"),
    (lambda: sizing_sql.weights_gb("seventy", 16), "params_b must be a number, got 'seventy'"),
    (lambda: sizing_sql.weights_gb("inf", 16), "params_b must be finite"),
    (lambda: sizing_sql.kv_cache_gb(0, 8, 128, 1, 1, 2), "layers must be a whole number of at least 1"),
    (lambda: sizing_sql.kv_cache_swa_gb(36, 40, 8, 64, 1, 128, 1, 2), "full_layers (40) cannot exceed layers (36)"),
    (lambda: speed_sql.expected_experts(8, 9, 1), "experts_per_token (9) cannot exceed experts (8)"),
    (lambda: sizing_sql.bits_per_weight("fp5"), "unknown format 'fp5'"),
])
def test_nonsense_raises_a_clear_message(call, message):
    with pytest.raises(ValueError) as error:
        call()
    assert message in str(error.value)


def test_llm_size_answers_a_layout_that_cannot_split_the_heads_with_the_nearest_ones():
    architecture = json.dumps({k: v for k, v in vars(DEEPSEEK_V3).items() if v is not None})
    answer = json.loads(sizing_sql.llm_size(architecture, sizing_sql.uniform_bits(8), 141, 4800, 131072, 8, 16, 6, 1, 0.9))
    assert answer["fits"] == 0
    assert answer["problem"] == "tp=6 does not divide the 128 attention heads; the nearest valid layouts are tp=4 or tp=8"


# Through Datasette: the functions are registered on its connections.

async def sql(client, query):
    return await client.get(query_path("json") + "?_shape=objects&sql=" + quote(query))


async def test_functions_answer_through_datasette_sql(client):
    response = await sql(client, "select kv_cache_gb(80, 8, 128, 131072, 1, 2) as kv, "
                                 "weights_gb(null, 16) is null as null_out, expected_experts(8, 2, 8) as experts")
    assert response.status_code == 200
    row = response.json()["rows"][0]
    assert row["kv"] == gb(42.94967296)
    assert row["null_out"] == 1
    assert row["experts"] == pytest.approx(7.19909668)


# Datasette turns on sqlite callback tracebacks, so each failing call is also
# reported to sys.unraisablehook (the server log); pytest would warn about it.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("query", ["select weights_gb(-1, 16)", "select expected_experts(8, 9, 1)",
                                   "select kv_cache_gb('many', 8, 128, 1024, 1, 2)"])
async def test_a_bad_argument_is_a_400(client, query):
    """sqlite reports a failing function with its own fixed text; Datasette answers it with a 400."""
    response = await sql(client, query)
    assert response.status_code == 400
    assert response.json()["ok"] is False and response.json()["error"]


async def test_bits_per_weight_agrees_with_the_number_formats_table(client):
    slugs = sorted(sizing_sql.ELEMENT_BITS) + sorted(sizing_sql.BLOCK_SCALED)
    listed = ", ".join(f"'{slug}'" for slug in slugs)
    response = await sql(client, "select slug, coalesce(effective_bits, bits) as table_bits, "
                                 f"bits_per_weight(slug) as function_bits from number_formats where slug in ({listed})")
    rows = response.json()["rows"]
    assert {"nvfp4", "mxfp4"} <= {r["slug"] for r in rows}
    for row in rows:
        assert row["function_bits"] == row["table_bits"], row["slug"]


# Per-layer attention types: linear attention and state-space layers, sparse-attention indexers

# Qwen3-Next-80B-A3B as Transformers' Qwen3NextConfig states it: 48 layers, one in four full (gated) attention,
# 16 query and 2 KV heads of 256; Gated DeltaNet with 32 value heads and 16 key heads of 128, kernel 4;
# 512 experts of 512 (10 per token) and one shared expert of 512; vocabulary 151,936, untied.
QWEN3_NEXT = sizing.Architecture(layers=48, hidden_size=2048, attention_heads=16, kv_heads=2, head_dim=256,
                                 attention_output_gate=True, vocab_size=151936, experts=512, experts_per_token=10,
                                 shared_experts=1, moe_intermediate_size=512, linear_attention="gated-deltanet",
                                 linear_attention_layers=36, linear_heads=32, linear_key_heads=16,
                                 linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel=4)
# NVIDIA Nemotron Nano 9B v2 (Megatron-Bridge): 27 Mamba-2 and 4 attention mixer blocks, 25 squared-ReLU MLP blocks.
NEMOTRON_NANO_9B = sizing.Architecture(layers=31, hidden_size=4480, attention_heads=40, kv_heads=8, head_dim=128,
                                       intermediate_size=15680, ffn_layers=25, ffn_matrices=2, vocab_size=131072,
                                       linear_attention="mamba2", linear_attention_layers=27, linear_heads=128,
                                       linear_key_heads=8, linear_key_head_dim=128, linear_value_head_dim=80,
                                       linear_conv_kernel=4)
# DeepSeek-V3.2-Exp (config_671B_v3.2.json): DeepSeek-V3 plus a 64-head indexer with 128-value keys.
DEEPSEEK_V32 = sizing.Architecture(layers=61, hidden_size=7168, attention_heads=128, attention="mla",
                                   q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128,
                                   v_head_dim=128, intermediate_size=18432, vocab_size=129280, experts=256,
                                   experts_per_token=8, shared_experts=1, moe_intermediate_size=2048, dense_layers=3,
                                   indexer_heads=64, indexer_head_dim=128)


def test_gated_deltanet_layer_parameters():
    # in_proj: 2048 × (2 × 16 × 128 (q, k) + 2 × 32 × 128 (v, z) + 2 × 32 (beta, a)) = 2048 × 12,352 = 25,296,896;
    # conv: (2 × 16 × 128 + 32 × 128) = 8,192 channels × 4 = 32,768; out: 32 × 128 × 2048 = 8,388,608
    assert sizing.linear_attention_parameters(QWEN3_NEXT) == 33_718_272


def test_gated_attention_doubles_the_query_projection():
    # q and its gate 2 × 2048 × 16 × 256 = 16,777,216, o 8,388,608, k and v 2 × 2048 × 2 × 256 = 2,097,152
    assert sizing.attention_parameters(QWEN3_NEXT) == 27_262_976


def test_hybrid_linear_model_parameters():
    # mixers 36 × 33,718,272 + 12 × 27,262,976 = 1,541,013,504; experts 48 × 512 × 3 × 2048 × 512 = 77,309,411,328;
    # shared 48 × 3 × 2048 × 512 = 150,994,944; router 48 × 512 × 2048 = 50,331,648; embedding and head
    # 2 × 151,936 × 2048 = 622,329,856: 79,674,081,280 (the model card's "80B")
    counts = sizing.parameters(QWEN3_NEXT)
    assert counts.attention == 1_541_013_504
    assert counts.total == 79_674_081_280


def test_gated_deltanet_state_per_sequence():
    # per linear layer: recurrent 32 × 128 × 128 = 524,288; convolution 3 × 8,192 = 24,576; × 36 layers = 19,759,104
    assert sizing.state_values_per_sequence(QWEN3_NEXT) == 19_759_104
    # TP=2 halves the heads: 16 × 128 × 128 + 3 × (2 × 8 × 128 + 16 × 128) = 274,432; × 36 = 9,879,552
    assert sizing.state_values_per_sequence(QWEN3_NEXT, tp=2) == 9_879_552


def test_only_full_attention_layers_cache_tokens():
    # 12 full layers × 2 (key, value) × 2 KV heads × 256 = 12,288 values a token
    assert sizing.kv_values_per_token(QWEN3_NEXT, 1000) == 12_288_000


def test_cache_bytes_add_kv_and_state():
    # 1,000 tokens in BF16: 12,288,000 × 2 bytes + state 19,759,104 × 2 bytes = 64,094,208 bytes, per sequence
    assert sizing.kv_bytes(QWEN3_NEXT, 1000, 2, 16) == 2 * 64_094_208


def test_mamba2_parameters_and_state():
    # Mamba-2 layer: in_proj 4480 × (2 × 128 × 80 (z, x) + 2 × 8 × 128 (B, C) + 128 (dt)) = 101,498,880;
    # conv (128 × 80 + 2 × 8 × 128) = 12,288 × 4 = 49,152; out 10,240 × 4480 = 45,875,200 → 147,423,232
    assert sizing.linear_attention_parameters(NEMOTRON_NANO_9B) == 147_423_232
    # 27 × 147,423,232 + 4 × (2 × 4480 × 5120 + 2 × 4480 × 1024) = 3,980,427,264 + 220,200,960;
    # 25 MLPs of 2 × 4480 × 15680 = 3,512,320,000; embedding and head 2 × 131,072 × 4480 = 1,174,405,120
    counts = sizing.parameters(NEMOTRON_NANO_9B)
    assert (counts.attention, counts.dense_ffn) == (4_200_628_224, 3_512_320_000)
    assert counts.total == 8_887_353_344
    # state: 128 × 128 × 80 = 1,310,720 + 3 × 12,288 = 36,864 → 1,347,584 a layer, × 27 = 36,384,768
    assert sizing.state_values_per_sequence(NEMOTRON_NANO_9B) == 36_384_768
    # KV: 4 attention layers × 2 × 8 × 128 = 8,192 values a token
    assert sizing.kv_values_per_token(NEMOTRON_NANO_9B, 1) == 8192


def test_linear_layers_split_over_tensor_parallel_ranks():
    # TP=2: 27 Mamba-2 layers of 147,423,232 halved = 1,990,213,632; 4 attention layers of
    # q and o 2 × 4480 × 40 × 128 / 2 = 22,937,600 and k, v 2 × 4480 × 128 × 4 KV heads = 4,587,520 → 110,100,480
    assert sizing.mixer_parameters_per_rank(NEMOTRON_NANO_9B, 2) == 2_100_314_112


def test_indexer_parameters_and_cache():
    # per layer: 1536 × 64 × 128 + 7168 × 128 + 7168 × 64 = 12,582,912 + 917,504 + 458,752 = 13,959,168
    assert sizing.indexer_parameters(DEEPSEEK_V32) == 13_959_168
    # one key of 128 per layer and token: 61 × 128 = 7,808 values
    assert sizing.indexer_values_per_token(DEEPSEEK_V32, 1) == 7808
    # a token in BF16 latent: 61 × 576 × 2 = 70,272 bytes; indexer 61 × (128 + 4 (FP32 scale)) = 8,052 bytes
    assert sizing.kv_bytes(DEEPSEEK_V32, 1, 1, 16) == pytest.approx(78_324)
    # the indexer key is whole on every rank, as the latent: TP=8 changes nothing
    assert sizing.kv_bytes(DEEPSEEK_V32, 1, 1, 16, tp=8) == pytest.approx(78_324)


def test_layers_kept_in_bf16_raise_the_layer_groups_bits():
    # 2 of 126 layers kept in BF16, FFN in FP8: 8 × 124/126 + 16 × 2/126 = 8.126984...; attention at 16 stays 16
    llama_405b = sizing.Architecture(layers=126, hidden_size=16384, attention_heads=128, kv_heads=8, head_dim=128,
                                     intermediate_size=53248, vocab_size=128256)
    kept = sizing.with_layers_kept(sizing.Checkpoint(16, 16, 16, 8, 8), llama_405b, 2)
    assert kept.dense_ffn == pytest.approx(8 + 16 / 126)
    assert (kept.attention, kept.embedding, kept.output_head) == (16, 16, 16)
    with pytest.raises(sizing.SizingError, match="has 126"):
        sizing.with_layers_kept(sizing.Checkpoint.uniform(8), llama_405b, 127)


async def test_state_and_cache_functions_through_sql(client):
    response = await sql(client, "select llm_state_gb(architecture, 1, 1) as state, "
                                 "llm_cache_gb(architecture, 1000, 1, 16, 1) as cache "
                                 "from models where slug = 'nemotron-nano-9b-v2'")
    row = response.json()["rows"][0]
    # 36,384,768 state values × 2 bytes = 0.072769536 GB; plus 1,000 tokens × 8,192 values × 2 bytes = 0.016384 GB
    assert row["state"] == gb(0.072769536)
    assert row["cache"] == gb(0.072769536 + 0.016384)


async def test_glm5_caches_its_latent_and_indexer_key_through_sql(client):
    response = await sql(client, "select llm_cache_gb(architecture, 1000, 1, 16, 1) as cache "
                                 "from models where slug = 'glm-5'")
    # GLM-5's config: 78 layers, each caching the 512 latent + 64 RoPE values (BF16, 2 bytes) and one 128-value
    # indexer key in FP8 with an FP32 scale (132 bytes): 78 × (1,152 + 132) = 100,152 bytes a token
    assert response.json()["rows"][0]["cache"] == gb(1000 * 100_152 / 1e9)


async def test_qwen35_keeps_a_state_and_caches_only_full_layers_through_sql(client):
    response = await sql(client, "select llm_state_gb(architecture, 1, 1) as state, "
                                 "llm_cache_gb(architecture, 1000, 1, 16, 1) as cache "
                                 "from models where slug = 'qwen3-5-27b'")
    row = response.json()["rows"][0]
    # Qwen3.5-27B's config: 48 Gated DeltaNet layers of 48 value heads and 16 key heads of 128, kernel 4:
    # recurrent 48 × 128 × 128 = 786,432 and convolution 3 × (2 × 16 × 128 + 48 × 128) = 30,720 → 817,152 a layer,
    # × 48 = 39,223,296 values × 2 bytes = 0.078446592 GB
    assert row["state"] == gb(0.078446592)
    # 16 full-attention layers × 2 × 4 KV heads × 256 = 32,768 values a token: 1,000 tokens = 0.065536 GB in BF16
    assert row["cache"] == gb(0.078446592 + 0.065536)


# One check per parameter (domain/parameters.py): the page, the queries' checks and the SQL functions use these

@pytest.mark.parametrize("text, tokens", [("32768", 32768), ("32k", 32768), ("128K", 131072), (131072, 131072),
                                          ("16M", 16 * 1024 * 1024)])
def test_the_context_check_reads_what_a_reader_writes(text, tokens):
    assert parameters.context(text) == tokens


@pytest.mark.parametrize("check, value, message", [
    (parameters.context, "16385k", "context must be a whole number of tokens from 1 to 16,777,216 (16M), such as "
                                   "32768, 32k or 128K; got '16385k'"),
    (parameters.batch, "0", "batch must be a whole number from 1 to 999,999,999, got '0'"),
    (parameters.devices, "9", "tp must be a whole number from 1 to 8, got '9'"),
    (parameters.usable_fraction, "1.01", "usable_fraction must be a number above 0 and at most 1, got '1.01'"),
    (parameters.runtime, "ollama", "runtime must be one of vllm, sglang, tensorrt-llm, llama-cpp, got 'ollama'"),
])
def test_each_check_names_its_parameter_and_its_limits(check, value, message):
    with pytest.raises(parameters.ParameterError) as error:
        check(value)
    assert str(error.value) == message


def test_the_limits_themselves_pass():
    assert (parameters.batch("999999999"), parameters.devices("8"), parameters.devices(""),
            parameters.usable_fraction("1"), parameters.runtime("")) == (999_999_999, 8, None, 1.0, "vllm")


def test_an_unknown_choice_offers_the_closest_names():
    known = {"llama-3-1-70b": "Llama 3.1 70B", "llama-3-1-8b": "Llama 3.1 8B", "gpt-oss-120b": "gpt-oss-120b"}
    with pytest.raises(parameters.ParameterError) as error:
        parameters.choice("model", "llama-3-1-7b", known, "models")
    assert str(error.value).startswith("model 'llama-3-1-7b' is not one of the models here; did you mean Llama 3.1")
    assert "gpt-oss" not in str(error.value)


def test_every_problem_is_found_at_once():
    values, problems = parameters.problems({"context": "lots", "batch": "0", "tp": "2"}, [
        parameters.Check("context", parameters.context), parameters.Check("batch", parameters.batch),
        parameters.Check("tp", parameters.devices)])
    assert [p.name for p in problems] == ["context", "batch"] and values == {"tp": 2}


def test_the_canned_queries_check_with_the_same_checks():
    class Lookup:  # the slugs a database would hold
        def names(self, sql, *params):
            return {"llama-3-1-70b": "Llama 3.1 70B"} if "models" in sql else {"fp8": "FP8"}
    problems = [p for p in query_checks.CHECKS["what-fits"](
        {"model": "llama-3-1-70b", "weight_format": "fp8", "kv_format": "fp8", "context": "32k", "tp": "9"},
        Lookup()) if p]
    assert problems == ["tp must be a whole number from 1 to 8, got '9'"]


@pytest.mark.parametrize("figure, value, message", [
    ("bandwidth_gbs", 1.7e308, "bandwidth_gbs must be at most 100,000,000, got 1.7e+308"),
    ("dense_tflops", 2e9, "dense_tflops must be at most 1,000,000,000, got 2e+09"),
    ("memory_gb", 0, "memory_gb must be positive, got 0"),
])
def test_a_device_figure_past_the_knowledge_bases_bounds_is_refused(figure, value, message):
    """At 1.7e308 GB/s a step's time rounds to 0 and a speed divided by it raised ZeroDivisionError."""
    from domain import fits
    from domain.parameters import ParameterError

    architecture = json.dumps({"layers": 2, "hidden_size": 64, "attention_heads": 4, "kv_heads": 4, "head_dim": 16,
                               "intermediate_size": 128, "vocab_size": 100})
    bits = json.dumps(dict.fromkeys(["embedding", "output_head", "attention", "dense_ffn", "experts", "other"], 16))
    device = dict(memory_gb=80, bandwidth_gbs=3350, dense_tflops=989, link_gbs=450) | {figure: value}
    with pytest.raises(ParameterError) as refused:
        fits.question(architecture, bits, fits.DeviceFigures(**device), 4096, 1, 16)
    assert str(refused.value) == message
