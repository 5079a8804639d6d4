"""The exact allocator reproduces the reference's worked examples A-E (vllm-log-lines.md §3.6)
to the token, and the 0.20.1+ one-token-low cases (§3.4)."""

from __future__ import annotations

import pytest

from ledger.allocator import AllocatorError, Geometry, allocate, budget_for_tokens, from_hf_config

GiB = 2**30
LLAMA_8B = Geometry(attn_layers=32, num_kv_heads=8, head_size=128)
QWEN3_14B = Geometry(attn_layers=40, num_kv_heads=8, head_size=128)
TINYLLAMA = Geometry(attn_layers=22, num_kv_heads=4, head_size=64)
GLM4_9B = Geometry(attn_layers=40, num_kv_heads=2, head_size=128)


def test_example_a_v0_0_6_4_llama_8b_on_a_3090():
    # block = 16 x 8 x 128 x 2 x 32 x 2 B; kv_cache_size=3.81GiB with 1952 GPU blocks; 1.56x at 20000
    a = allocate(LLAMA_8B, int(3.8125 * GiB), 20000, v0=True, engine_version="0.6.4")
    assert a.bytes_per_block == 2_097_152
    assert (a.num_blocks, a.tokens, f"{a.concurrency:.2f}") == (1952, 31232, "1.56")
    # anything printed as 3.81 GiB in [3.8125, 3.8145) GiB gives the same 1952 blocks
    assert allocate(LLAMA_8B, int(3.8144 * GiB), 20000, v0=True, engine_version="0.6.4").num_blocks == 1952


def test_example_a_the_29k_case_matches_the_error_text():
    # kv_cache_size=2.89GiB, # GPU blocks: 1478 -> "max seq len (29000) ... KV cache (23648)", 0.82x
    a = allocate(LLAMA_8B, 1478 * 2_097_152 + 1000, 29000, v0=True, engine_version="0.6.4")
    assert (a.num_blocks, a.tokens, f"{a.concurrency:.2f}") == (1478, 23648, "0.82")


def test_example_b_v1_0_10_available_112_61_gib():
    a = allocate(LLAMA_8B, 57656 * 2 * 2**20 + 1, 40000, engine_version="0.10.1")
    assert (a.num_blocks, a.tokens, f"{a.concurrency:.2f}") == (57656, 922_496, "23.06")
    assert f"{57656 * a.bytes_per_block / GiB:.2f}" == "112.61"


def test_example_c_v1_0_11_tinyllama():
    a = allocate(TINYLLAMA, int(33.3102 * GiB), 2048, engine_version="0.11.0")
    assert a.bytes_per_block == 360_448
    assert (a.num_blocks, a.tokens, f"{a.concurrency:.2f}") == (99_228, 1_587_648, "775.22")


def test_example_d_qwen3_14b_available_6_51_gib():
    a = allocate(QWEN3_14B, int(6.51 * GiB), 32768, engine_version="0.11.0")
    assert a.bytes_per_block == 2_621_440
    assert (a.num_blocks, a.tokens, f"{a.concurrency:.2f}") == (2666, 42_656, "1.30")


def test_example_e_glm4_available_16_23_gib():
    a = allocate(GLM4_9B, 26589 * 655_360 + 300_000, 65536, engine_version="0.11.0")
    assert a.bytes_per_block == 655_360
    assert (a.num_blocks, a.tokens, f"{a.concurrency:.2f}") == (26_589, 425_424, "6.49")


@pytest.mark.parametrize("L,nb,tokens", [(40000, 1020, 16319), (12000, 1565, 25039)])
def test_0_20_1_reports_one_token_low(L, nb, tokens):
    a = allocate(LLAMA_8B, 0, L, engine_version="0.20.1", num_gpu_blocks_override=nb)
    assert a.tokens == tokens
    assert nb * 16 == tokens + 1  # the same blocks before 0.20.1 print one more token
    assert allocate(LLAMA_8B, 0, L, engine_version="0.20.0", num_gpu_blocks_override=nb).tokens == nb * 16


def test_0_20_1_with_a_length_not_a_multiple_of_the_block():
    a = allocate(LLAMA_8B, 0, 29000, engine_version="0.20.1", num_gpu_blocks_override=1000)
    assert a.tokens == int(1000 / 1813 * 29000) < 1000 * 16


def test_hybrid_constructed_example_0_20_1():
    # nb = 1000, bs = 544, L = 262144, 1 attention group + 3 mamba groups -> 540,503 tokens, 2.06x
    hybrid = Geometry(attn_layers=10, num_kv_heads=2, head_size=256, mamba_layers=30, mamba_page_bytes=1_000_000)
    a = allocate(hybrid, 0, 262144, block_size=544, engine_version="0.20.1", num_gpu_blocks_override=1000)
    assert (a.attn_groups, a.mamba_groups) == (1, 3)
    assert (a.tokens, f"{a.concurrency:.2f}") == (540_503, "2.06")


def test_hybrid_before_0_20_1_counts_blocks_per_group():
    hybrid = Geometry(attn_layers=10, num_kv_heads=2, head_size=256, mamba_layers=30, mamba_page_bytes=1_000_000)
    a = allocate(hybrid, 0, 262144, block_size=544, engine_version="0.11.0", num_gpu_blocks_override=1000)
    assert a.tokens == 1000 // 4 * 544


def test_tp_splits_kv_heads_and_replicates_past_them():
    two = allocate(QWEN3_14B, 10 * GiB, 4096, tensor_parallel_size=2)
    assert two.bytes_per_block == 2_621_440 // 2
    sixteen = allocate(QWEN3_14B, 10 * GiB, 4096, tensor_parallel_size=16)
    assert sixteen.bytes_per_block == 2_621_440 // 8  # 8 heads over 16 ranks: one head each


def test_fp8_halves_the_page():
    assert allocate(QWEN3_14B, GiB, 4096, kv_cache_dtype="fp8").bytes_per_block == 2_621_440 // 2


def test_budget_for_tokens_is_the_smallest_that_reports_them():
    budget, a = budget_for_tokens(QWEN3_14B, 42_656, 32768, engine_version="0.11.0")
    assert a.tokens == 42_656 and budget == 2666 * 2_621_440
    assert allocate(QWEN3_14B, budget - 1, 32768, engine_version="0.11.0").tokens < 42_656


def test_from_hf_config():
    g = from_hf_config({"num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 8,
                        "hidden_size": 5120, "head_dim": 128, "torch_dtype": "bfloat16"})
    assert g == QWEN3_14B
    mla = from_hf_config({"num_hidden_layers": 61, "num_attention_heads": 128, "kv_lora_rank": 512,
                          "qk_rope_head_dim": 64, "hidden_size": 7168})
    assert mla.mla and mla.head_size == 576
    assert allocate(mla, GiB, 4096, block_size=64).bytes_per_block == 64 * 576 * 2 * 61
    hybrid = from_hf_config({"num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 2,
                             "hidden_size": 2048, "head_dim": 256,
                             "layer_types": ["linear_attention"] * 3 + ["full_attention"]})
    assert (hybrid.attn_layers, hybrid.mamba_layers) == (1, 3)


def test_a_hybrid_model_without_its_mamba_page_is_refused():
    with pytest.raises(AllocatorError, match="mamba page"):
        allocate(Geometry(attn_layers=1, num_kv_heads=2, head_size=256, mamba_layers=3), GiB, 4096)


def test_a_config_file_that_holds_no_json_object_is_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[40, 40]")
    with pytest.raises(AllocatorError, match="no JSON object"):
        from_hf_config(path)
