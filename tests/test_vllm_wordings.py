"""One line per vLLM wording, release by release (docs/vllm-log-lines.md §2):
each must yield exactly these facts.  Lines are built from the format strings vLLM prints."""

from __future__ import annotations

import pytest

from ledger import parsers

G = 2**30
HDR = "INFO 09-29 12:34:56 [f.py:1] "

CASES = [
    # §2.2 model loading
    ("Loading model weights took 14.9888 GB", {"model_weights_bytes": round(14.9888 * G)}),
    ("Model loading took 2.2845 GB and 74.270197 seconds",
     {"model_weights_bytes": round(2.2845 * G), "model_load_seconds": 74.270197}),
    ("Model loading took 2.2845 GiB and 74.270197 seconds",
     {"model_weights_bytes": round(2.2845 * G), "model_load_seconds": 74.270197}),
    ("Model loading took 12.66 GiB memory and 31.657031 seconds",
     {"model_weights_bytes": round(12.66 * G), "model_load_seconds": 31.657031}),
    ("Model loading took 0 GiB memory and 1.000000 seconds", {"model_weights_bytes": 0, "model_load_seconds": 1.0}),
    ("Loading weights took 26.93 seconds", {"model_load_seconds": 26.93}),
    # §2.3 memory profiling
    ("Memory profiling results: total_gpu_memory=23.69GiB initial_memory_usage=15.43GiB peak_torch_memory=16.22GiB "
     "memory_usage_post_profile=15.48Gib non_torch_memory=0.45GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90",
     {"total_gpu_memory_bytes": round(23.69 * G), "available_kv_cache_bytes": round(3.81 * G)}),
    ("Available KV cache memory: 16.23 GiB", {"available_kv_cache_bytes": round(16.23 * G)}),
    ("Available KV cache memory: 16.2 GiB", {"available_kv_cache_bytes": round(16.2 * G)}),
    # negative: stored as printed (fixtures/real/402, 419), the evidence of the failure that follows
    ("Available KV cache memory: -3.86 GiB", {"available_kv_cache_bytes": round(-3.86 * G)}),
    ("Estimated CUDA graph memory: 0.73 GiB total", {"estimated_cuda_graph_bytes": round(0.73 * G)}),
    # §2.4 kv_cache_memory_bytes (0.11.1+ wording)
    ("Initial free memory 31.16 GiB, reserved 4.25 GiB memory for KV Cache as specified by kv_cache_memory_bytes "
     "config and skipped memory profiling. This does not respect the gpu_memory_utilization config.",
     {"initial_free_memory_bytes": round(31.16 * G), "kv_cache_reserved_bytes": round(4.25 * G)}),
    # §2.5 capacity
    ("# GPU blocks: 1952, # CPU blocks: 2048", {"gpu_blocks": 1952, "cpu_blocks": 2048}),
    ("# CUDA blocks: 1952, # CPU blocks: 2048", {"gpu_blocks": 1952, "cpu_blocks": 2048}),
    ("# cuda blocks: 7299, # CPU blocks: 2048", {"gpu_blocks": 7299, "cpu_blocks": 2048}),
    ("# GPU blocks: 57656", {"gpu_blocks": 57656}),
    # a paste that lost the leading "# " (markdown read it as a heading)
    ("GPU blocks: 2285, # CPU blocks: 1024", {"gpu_blocks": 2285, "cpu_blocks": 1024}),
    ("Maximum concurrency for 20000 tokens per request: 1.56x", {"max_concurrency_tokens": 20000, "max_concurrency": 1.56}),
    ("GPU KV cache size: 425,424 tokens", {"kv_cache_tokens": 425424}),
    ("GPU + host KV cache size: 922,496 tokens, Maximum concurrency for 40,000 tokens per request: 23.06x",
     {"kv_cache_tokens": 922496, "max_concurrency_tokens": 40000, "max_concurrency": 23.06}),
    ("Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 26589", {"gpu_blocks": 26589}),
    ("vllm cache_config_info with initialization after num_gpu_blocks is: 26589", {"gpu_blocks": 26589}),
    # §2.7 graphs, compile, init
    ("Graph capturing finished in 7 secs.", {"graph_capture_seconds": 7.0}),
    ("Graph capturing finished in 7 secs, took 0.95 GiB", {"graph_capture_seconds": 7.0, "graph_capture_bytes": round(0.95 * G)}),
    ("torch.compile takes 14.45 s in total", {"torch_compile_seconds": 14.45}),
    ("[backbone] torch.compile took 1.61 s in total", {"torch_compile_seconds": 1.61}),
    ("torch.compile and initial profiling/warmup run together took 37.21 s in total", {"torch_compile_seconds": 37.21}),
    ("CUDA graph pool memory: 0.22 GiB (actual), 0.42 GiB (estimated), difference: 0.2 GiB (91.2%).",
     {"cuda_graph_pool_bytes": round(0.22 * G), "cuda_graph_pool_estimated_bytes": round(0.42 * G)}),
    ("Free memory on device (46.99/47.37 GiB) on startup. Desired GPU memory utilization is (0.85, 40.27 GiB). "
     "Actual usage is 2.81 GiB for consumed memory (weights + non-torch), 0.57 GiB for peak activation, and 0.22 "
     "GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=39207879578` (36.52 "
     "GiB) to fit into requested memory, or `--kv-cache-memory=46423534080` (43.24 GiB) to fully utilize gpu "
     "memory. Current kv cache memory in use is 36.88 GiB.",
     {"initial_free_memory_bytes": round(46.99 * G), "total_gpu_memory_bytes": round(47.37 * G),
      "requested_memory_bytes": round(40.27 * G), "consumed_memory_bytes": round(2.81 * G),
      "activation_peak_bytes": round(0.57 * G), "cuda_graph_memory_bytes": round(0.22 * G),
      "kv_cache_requested_limit_bytes": 39207879578, "kv_cache_gpu_limit_bytes": 46423534080,
      "available_kv_cache_bytes": round(36.88 * G)}),
    ("Peak XPU memory after loading weights: peak=7.82 GiB, current=7.58 GiB",
     {"load_peak_memory_bytes": round(7.82 * G), "load_end_memory_bytes": round(7.58 * G)}),
    ("init engine (profile, create kv cache, warmup model) took 2.60 seconds", {"init_engine_seconds": 2.6}),
    ("init engine (profile, create kv cache, warmup model) took 98.43 s (compilation: 24.61 s — language_model: "
     "20.00 s, encoder: 4.61 s)", {"init_engine_seconds": 98.43}),
    # §2.1
    ("Using max model len 262144", {"max_model_len": 262144}),
    # lines that must yield nothing
    ("CUDA graphs can take additional 1~3 GiB memory per GPU.", {}),
    ("Dynamo bytecode transform time: 14.62 s", {}),
    ("torch.compile takes 16.12", {}),
]


@pytest.mark.parametrize("message,expected", CASES, ids=[c[0][:50] for c in CASES])
def test_wording(message, expected):
    boots = parsers.parse_text(HDR + message + "\n", year=2026)
    got = {f.name: f.value for f in boots[0].facts}
    assert got == pytest.approx(expected)


@pytest.mark.parametrize("message,version,commit", [
    ("vLLM API server version 0.5.1", "0.5.1", None),
    ("vLLM server version 0.23.0, serving model Qwen/Qwen3.5-2B", "0.23.0", None),
    ("       █     █     █▄   ▄█", None, None),
    (" ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.23.0", "0.23.0", None),
    ("Initializing a V0 LLM engine (v0.8.1) with config: model='m', ", "0.8.1", None),
    ("Initializing an LLM engine (v0.5.4) with config: model='m', ", "0.5.4", None),
    ("Initializing a V1 LLM engine (v0.20.1rc1.dev16+g7a1eb8ac2) with config: model='m', ",
     "0.20.1rc1.dev16+g7a1eb8ac2", "7a1eb8ac2"),
    # the fatal-error dump of a model-execution step prints the engine's version too
    ("Dumping input data for V1 LLM engine (v0.21.0) with config: model='m', ", "0.21.0", None),
])
def test_engine_version_wordings(message, version, commit):
    boot = parsers.parse_text(HDR + message + "\n", year=2026)[0]
    assert (boot.engine_version, boot.engine_commit) == (version, commit)


@pytest.mark.parametrize("message,kind", [
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}", "engine_init_failed"),
    ("Engine process failed to start. See stack trace for the root cause.", "engine_init_failed"),
    ("Worker proc VllmWorker-1 died unexpectedly, shutting down executor.", "worker_died"),
    ("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.", "engine_dead"),
    ("EngineCore encountered a fatal error.", "engine_dead"),
    ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
     "no_kv_memory"),
    ("ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (6).", "config_error"),
    ("AssertionError: tensor parallel size 2 must be greater than total num kv heads 2 when enable decode context "
     "parallel for GQA/MQA", "config_error"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_error"),
    ("EngineCore hit an exception: Traceback (most recent call last):", "engine_init_failed"),
    ("Exception in worker VllmWorkerProcess while processing method load_model.", "engine_init_failed"),
    ("Exception in worker VllmWorkerProcess while processing method init_device.", "engine_init_failed"),
    ("Exception in worker VllmWorkerProcess while processing method execute_model.", "engine_dead"),
    ("MulitprocExecutor got fatal signal from worker processes, shutting down. See stack trace above for root "
     "cause issue.", "worker_died"),
    ("Got fatal signal from worker processes, shutting down. See stack trace above for root cause issue.",
     "engine_dead"),
])
def test_failure_wordings(message, kind):
    boot = parsers.parse_text(HDR + message + "\n", year=2026)[0]
    assert [f.kind for f in boot.failures] == [kind]


def test_a_max_model_len_above_the_models_is_a_config_error_with_its_message():
    message = ("User-specified max_model_len (4096) is greater than the derived max_model_len (seq_length=2048 or "
               "model_max_length=None in model's config.json). This may lead to incorrect model outputs or CUDA "
               "errors. Make sure the value is correct and within the model context size.")
    (boot,) = parsers.parse_text("ValueError: [address=127.0.0.1:37657, pid=3125985] " + message + "\n", year=2026)
    assert [(f.kind, f.figures) for f in boot.failures] == [("config_error", {"message": message})]


def test_pydantics_max_model_len_above_the_models_is_one_config_error_without_pydantics_tail():
    message = ("User-specified max_model_len (40960) is greater than the derived max_model_len "
               "(max_position_embeddings=32768 or model_max_length=None in model's config.json). To allow "
               "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    boot = parsers.parse_text(HDR + "  Value error, " + message + " [type=value_error, input_value=ArgsKwargs((), "
                              "{'model': 'Qwen/Qwen3-8B'}), input_type=ArgsKwargs]\n", year=2026)[0]
    assert [(f.kind, f.figures) for f in boot.failures] == [("config_error", {"message": message})]


@pytest.mark.parametrize("message,values", [
    ("Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 28.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs "
     "GPU KV cache usage: 0.4%.",
     {"prompt_throughput_tps": 0.0, "generation_throughput_tps": 28.4, "running_reqs": 1, "waiting_reqs": 0,
      "gpu_kv_cache_usage_pct": 0.4}),
    ("Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 28.4 tokens/s, Running: 0 reqs, "
     "Waiting: 0 reqs, Preemptions: 3, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%, MM cache hit rate: 0.0%",
     {"prompt_throughput_tps": 0.0, "generation_throughput_tps": 28.4, "running_reqs": 0, "waiting_reqs": 0,
      "gpu_kv_cache_usage_pct": 0.0, "prefix_cache_hit_rate_pct": 0.0}),
    ("SpecDecoding metrics: Draft acceptance rate: 62.5%, Mean acceptance length: 2.25, Accepted: 125 tokens, "
     "Drafted: 200 tokens, Per-position acceptance rate: 0.800, 0.450",
     {"spec_draft_acceptance_rate_pct": 62.5, "spec_mean_acceptance_length": 2.25, "spec_accepted_tokens": 125,
      "spec_drafted_tokens": 200, "spec_per_position_acceptance": [0.8, 0.45]}),
])
def test_runtime_wordings(message, values):
    boot = parsers.parse_text(HDR + message + "\n", year=2026)[0]
    assert boot.runtime[0].values == values
