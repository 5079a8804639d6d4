"""The built-in rules' samples: for every rule of ``ledger.parsers.vllm``, a line it must read —
a real line of ``fixtures/real`` (file and line number) or one the reference
(docs/vllm-log-lines.md) quotes as vLLM prints it — and the figures it must yield from that
line (facts, failure figures, shape keys, runtime series by name, each as its stored value; a
marker, a traceback hint or a counted line yields none).  ``vllm`` attaches them to its rules
and checks every one when it is imported, with the check a grammar pack's samples pass when the
pack loads (``rules.sample_problem``): a rule that stops reading its line, or reads another
figure from it, fails at import.  A new rule needs its sample here (``python
tests/rule_samples.py`` drafts one from the fixtures).
"""

from __future__ import annotations

from .rules import Sample

# tests/rule_samples.py sets this while it drafts: the grammar then loads with rules unsampled
DRAFTING = False

# rule name -> its samples
SAMPLES: dict[str, tuple[Sample, ...]] = {
    'v1_available_kv': (
        Sample('(Worker_TP0 pid=118) INFO 05-04 01:05:57 [gpu_worker.py:440] Available KV cache memory: 9.74 GiB',
               {'available_kv_cache_bytes': 10458245366},
               'fixtures/real/008_v1-nightly-dual4090-dflash-kvpool-specdecode-runtime.log:11'),
    ),
    'cpu_kv_pool': (
        Sample('(Worker pid=9695) INFO 12-03 16:20:11 [cpu_worker.py:260] Explicitly set (1.0/9.46) GiB for KV cache on node 0.',
               {'available_kv_cache_bytes': 1073741824},
               'fixtures/live/vllm-0.32.0/ready-served-sigterm.log:77'),
    ),
    'v0_profile_breakdown': (
        Sample('INFO 03-22 18:53:23 [worker.py:267] model weights take 18.38GiB; non_torch_memory takes 0.15GiB; PyTorch activation peak memory takes 0.79GiB; the rest of the memory reserved for KV Cache is 2.96GiB.',
               {'model_weights_bytes': 19735374725, 'non_torch_memory_bytes': 161061274, 'activation_peak_bytes': 848256041, 'available_kv_cache_bytes': 3178275799},
               'fixtures/real/003_v0-deepseek-r1-gguf-3090-multiworker-profiling.log:17'),
    ),
    'v0_profile_total': (
        Sample('INFO 03-22 18:53:23 [worker.py:267] the current vLLM instance can use total_gpu_memory (23.58GiB) x gpu_memory_utilization (0.94) = 22.29GiB',
               {'total_gpu_memory_bytes': 25318832210, 'requested_memory_bytes': 23933705257},
               'fixtures/real/003_v0-deepseek-r1-gguf-3090-multiworker-profiling.log:16'),
    ),
    'v0_profile_time': (
        Sample('INFO 07-29 19:12:55 [worker.py:294] Memory profiling takes 3.01 seconds',
               {'memory_profiling_seconds': 3.01},
               'fixtures/real/048_v0-0.9x-whisper-encdec-a100-40g-model-loading-cuda-blocks.log:18'),
    ),
    'v0_064_profile': (
        Sample('Memory profiling results: total_gpu_memory=23.69GiB initial_memory_usage=15.43GiB peak_torch_memory=16.22GiB memory_usage_post_profile=15.48Gib non_torch_memory=0.45GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90',
               {'total_gpu_memory_bytes': 25436943811, 'available_kv_cache_bytes': 4090956349},
               "tests/test_vllm_wordings.py:25 (vLLM's format)"),
    ),
    'kv_reserved': (
        Sample("(EngineCore pid=316) INFO 08-21 18:37:44 [gpu_worker.py:492] Initial free memory 31.16 GiB, reserved 4.25 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not respect the gpu_memory_utilization config. Only use kv_cache_memory_bytes config when you want manual control of KV cache memory size. If OOM'ed, check the difference of initial free memory between the current run and the previous run where kv_cache_memory_bytes is suggested and update it correspondingly.",
               {'kv_cache_reserved_bytes': 4563402752, 'initial_free_memory_bytes': 33457795236},
               'fixtures/real/017_v1-0.27.2rc1-xpu-arc-b70-mtp-fp8kv-kv-too-small.log:16'),
    ),
    'v1_kv_tokens': (
        Sample('INFO 07-08 01:14:18 [kv_cache_utils.py:716] GPU KV cache size: 811,008 tokens',
               {'kv_cache_tokens': 811008},
               'fixtures/real/217_tpu-inference-v6e-tp4-hbm-kv-tokens.log:12'),
    ),
    'max_concurrency': (
        Sample('INFO 04-23 14:48:44 [executor_base.py:117] Maximum concurrency for 50000 tokens per request: 2.34x',
               {'max_concurrency_tokens': 50000, 'max_concurrency': 2.34},
               'fixtures/real/016_v0-0.8x-rtx5090-cuda-blocks-concurrency.log:16'),
    ),
    'v0_blocks': (
        Sample('INFO 04-23 14:48:44 [executor_base.py:112] # cuda blocks: 7299, # CPU blocks: 2048',
               {'gpu_blocks': 7299, 'cpu_blocks': 2048},
               'fixtures/real/016_v0-0.8x-rtx5090-cuda-blocks-concurrency.log:15'),
    ),
    'v1_early_blocks': (
        Sample('# GPU blocks: 1478',
               {'gpu_blocks': 1478},
               'docs/vllm-log-lines.md §3.6'),
    ),
    'num_gpu_blocks_is': (
        Sample('(APIServer pid=188747) INFO 10-21 09:12:14 [loggers.py:147] Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 26589',
               {'gpu_blocks': 26589},
               'fixtures/real/209_v1-0.11-boot-tail-kv-graph-capture-init-engine.log:20'),
    ),
    'v0_weights': (
        Sample('INFO 08-19 07:51:03 model_runner.py:732] Loading model weights took 2.3463 GB',
               {'model_weights_bytes': 2519320442},
               'fixtures/real/015_v0-0.5.x-gemma2-9b-8xl4-gpublocks-cudagraph.log:11'),
    ),
    'model_loading': (
        Sample('INFO 07-29 19:12:52 [model_runner.py:1203] Model loading took 2.8764 GiB and 9.005007 seconds',
               {'model_weights_bytes': 3088510983, 'model_load_seconds': 9.005007},
               'fixtures/real/048_v0-0.9x-whisper-encdec-a100-40g-model-loading-cuda-blocks.log:12'),
    ),
    'loading_weights': (
        Sample('INFO 07-29 19:12:52 [default_loader.py:272] Loading weights took 8.37 seconds',
               {'model_load_seconds': 8.37},
               'fixtures/real/048_v0-0.9x-whisper-encdec-a100-40g-model-loading-cuda-blocks.log:11'),
    ),
    'graph_capture': (
        Sample('(EngineCore pid=5744) INFO 09-22 12:15:35 [model_runner.py:960] Graph capturing finished in 4 secs, took 0.11 GiB',
               {'graph_capture_seconds': 4.0, 'graph_capture_bytes': 118111601},
               'fixtures/real/033_v1-windows-build-cudagraph-capture-finished-kv-profiling-notice.log:18'),
    ),
    'torch_compile': (
        Sample('(EngineCore pid=316) INFO 08-21 18:37:40 [monitor.py:53] torch.compile took 0.06 s in total',
               {'torch_compile_seconds': 0.06},
               'fixtures/real/017_v1-0.27.2rc1-xpu-arc-b70-mtp-fp8kv-kv-too-small.log:13'),
    ),
    'torch_compile_with_warmup': (
        Sample('torch.compile and initial profiling/warmup run together took 37.21 s in total',
               {'torch_compile_seconds': 37.21},
               "tests/test_vllm_wordings.py:51 (vLLM's format)"),
    ),
    'init_engine': (
        Sample('(EngineCore_DP0 pid=188893) INFO 10-21 09:12:04 [core.py:210] init engine (profile, create kv cache, warmup model) took 25.99 seconds',
               {'init_engine_seconds': 25.99},
               'fixtures/real/209_v1-0.11-boot-tail-kv-graph-capture-init-engine.log:19'),
    ),
    'max_model_len': (
        Sample('(APIServer pid=733) INFO 11-14 21:01:39 [model.py:1728] Using max model len 131072',
               {'max_model_len': 131072},
               'fixtures/real/219_rocm-strix-halo-0.11.1-gpu-hang-after-compile.log:14'),
    ),
    'cudagraph_estimate': (
        Sample('(EngineCore pid=1623438) INFO 04-13 22:09:36 [gpu_model_runner.py:5993] Estimated CUDA graph memory: 0.73 GiB total',
               {'estimated_cuda_graph_bytes': 783831532},
               'fixtures/real/034_v1-gguf-qwen35-num-gpu-blocks-override-cudagraph-estimate.log:19'),
    ),
    'cudagraph_pool': (
        Sample('(EngineCore pid=23853) INFO 09-16 13:51:51 [gpu_worker.py:813] CUDA graph pool memory: 0.22 GiB (actual), 0.42 GiB (estimated), difference: 0.2 GiB (91.2%).',
               {'cuda_graph_pool_bytes': 236223201, 'cuda_graph_pool_estimated_bytes': 450971566},
               'fixtures/real/211_v1-2026-09-newest-wording-combined-kv-line-free-memory.log:25'),
    ),
    'load_peak_memory': (
        Sample('(Worker_TP3_EP3 pid=4033) INFO 06-03 07:55:54 [base_loader.py:65] Peak XPU memory after loading weights: peak=7.82 GiB, current=7.58 GiB',
               {'load_peak_memory_bytes': 8396661064, 'load_end_memory_bytes': 8138963026},
               'fixtures/real/218_xpu-b60-tp4-ep-peak-xpu-memory-analysis.log:13'),
    ),
    'free_memory_on_device': (
        Sample('(EngineCore pid=23853) INFO 09-16 13:51:51 [gpu_worker.py:876] Free memory on device (46.99/47.37 GiB) on startup. Desired GPU memory utilization is (0.85, 40.27 GiB). Actual usage is 2.81 GiB for consumed memory (weights + non-torch), 0.57 GiB for peak activation, and 0.22 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=39207879578` (36.52 GiB) to fit into requested memory, or `--kv-cache-memory=46423534080` (43.24 GiB) to fully utilize gpu memory. Current kv cache memory in use is 36.88 GiB.',
               {'initial_free_memory_bytes': 50455128310, 'total_gpu_memory_bytes': 50863150203, 'requested_memory_bytes': 43239583252, 'consumed_memory_bytes': 3017214525, 'activation_peak_bytes': 612032840, 'cuda_graph_memory_bytes': 236223201, 'kv_cache_requested_limit_bytes': 39207879578, 'kv_cache_gpu_limit_bytes': 46423534080, 'available_kv_cache_bytes': 39599598469},
               'fixtures/real/211_v1-2026-09-newest-wording-combined-kv-line-free-memory.log:26'),
    ),
    'v0_profile_util': (
        Sample('INFO 03-22 18:53:23 [worker.py:267] the current vLLM instance can use total_gpu_memory (23.58GiB) x gpu_memory_utilization (0.94) = 22.29GiB',
               {'gpu_memory_utilization': 0.94},
               'fixtures/real/003_v0-deepseek-r1-gguf-3090-multiworker-profiling.log:16'),
    ),
    'v0_064_profile_util': (
        Sample('Memory profiling results: total_gpu_memory=23.69GiB initial_memory_usage=15.43GiB peak_torch_memory=16.22GiB memory_usage_post_profile=15.48Gib non_torch_memory=0.45GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90',
               {'gpu_memory_utilization': 0.9},
               "tests/test_vllm_wordings.py:25 (vLLM's format)"),
    ),
    'free_memory_util': (
        Sample('(EngineCore pid=23853) INFO 09-16 13:51:51 [gpu_worker.py:876] Free memory on device (46.99/47.37 GiB) on startup. Desired GPU memory utilization is (0.85, 40.27 GiB). Actual usage is 2.81 GiB for consumed memory (weights + non-torch), 0.57 GiB for peak activation, and 0.22 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=39207879578` (36.52 GiB) to fit into requested memory, or `--kv-cache-memory=46423534080` (43.24 GiB) to fully utilize gpu memory. Current kv cache memory in use is 36.88 GiB.',
               {'gpu_memory_utilization': 0.85},
               'fixtures/real/211_v1-2026-09-newest-wording-combined-kv-line-free-memory.log:26'),
    ),
    'chunked_prefill': (
        Sample('INFO 06-06 15:54:01 [config.py:2118] Chunked prefill is enabled with max_num_batched_tokens=2048.',
               {'max_num_batched_tokens': 2048},
               'fixtures/real/007_v1-0.9.0.1-qwen25vl-banner-nondefault-args.log:19'),
    ),
    'hybrid_block_size': (
        Sample('(APIServer pid=733) INFO 11-14 21:01:39 [config.py:422] Setting attention block size to 528 tokens to ensure that attention page size is >= mamba page size.',
               {'block_size': 528},
               'fixtures/real/219_rocm-strix-halo-0.11.1-gpu-hang-after-compile.log:17'),
    ),
    'backend_block_size': (
        Sample('(EngineCore_DP0 pid=312) INFO 06-20 10:15:02 [cuda.py:164] Forcing kv cache block size to 64 for FlashMLA backend.',
               {'block_size': 64},
               "docs/vllm-log-lines.md §2.5 (the message as quoted there, in vLLM's header)"),
    ),
    'blocks_override': (
        Sample('(EngineCore pid=1623438) INFO 04-13 22:09:35 [kv_cache_utils.py:829] Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512',
               {'num_gpu_blocks_override': 512},
               'fixtures/real/034_v1-gguf-qwen35-num-gpu-blocks-override-cudagraph-estimate.log:17'),
    ),
    'args_dict': (
        Sample("INFO 06-06 15:53:55 [cli_args.py:300] non-default args: {'host': '0.0.0.0', 'port': 8001, 'dtype': 'bfloat16', 'limit_mm_per_prompt': {'image': 5, 'video': 5}}",
               {'source': 'args', 'items': {'host': '0.0.0.0', 'port': 8001, 'dtype': 'bfloat16', 'limit_mm_per_prompt': {'image': 5, 'video': 5}}, 'complete': True},
               'fixtures/real/007_v1-0.9.0.1-qwen25vl-banner-nondefault-args.log:17'),
    ),
    'args_namespace': (
        Sample("INFO 06-19 11:30:25 [api_server.py:1044] args: Namespace(subparser='serve', model_tag='/root/workspace/d19ndanhri0c73dr6i5g/cache/model_scope/LLM-Research/gemma-3-27b-it', config='', host='0.0.0.0', port=40059, uvicorn_log_level='info', disable_uvicorn_access_log=False, allow_credentials=Fa",
               {'source': 'args', 'items': {'model_tag': '/root/workspace/d19ndanhri0c73dr6i5g/cache/model_scope/LLM-Research/gemma-3-27b-it', 'config': '', 'host': '0.0.0.0', 'port': 40059, 'uvicorn_log_level': 'info', 'disable_uvicorn_access_log': False}, 'complete': False},
               'fixtures/real/053_v0-0.8.5post1-gpustack-wrapper-version-banner-args-namespace.log:20'),
    ),
    'engine_config': (
        Sample("INFO 01-22 14:32:19 llm_engine.py:73] Initializing an LLM engine with config: model='/tmp/CodeLlama-13b-Instruct-hf', tokenizer='/tmp/CodeLlama-13b-Instruct-hf', tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=True, dtype=torch.float16, max_seq_len=16384, download_dir=None, load_format=auto, tensor_parallel_size=5, quantization=None, enforce_eager=False, seed=0)",
               {'source': 'engine_config', 'items': {'model': '/tmp/CodeLlama-13b-Instruct-hf', 'tokenizer': '/tmp/CodeLlama-13b-Instruct-hf', 'tokenizer_mode': 'auto', 'revision': None, 'tokenizer_revision': None, 'trust_remote_code': True, 'dtype': 'float16', 'max_model_len': 16384, 'download_dir': None, 'load_format': 'auto', 'tensor_parallel_size': 5, 'quantization': None, 'enforce_eager': False, 'seed': 0}, 'complete': True},
               'fixtures/real/052_v0-0.2x-ray-fastchat-tp5-heads-not-divisible.log:13'),
    ),
    'dump_input_config': (
        Sample("(EngineCore pid=23935) ERROR 05-21 04:01:32 [dump_input.py:72] Dumping input data for V1 LLM engine (v0.21.0) with config: model='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', speculative_config=SpeculativeConfig(method='mtp', model='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', num_spec_tokens=3), tokenizer='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=200000, download_dir=None, load_format=auto, tensor_parallel_size=8, pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=ag_rs, disable_custom_all_reduce=False, quantization=fp8, quantization_config=None, enforce_eager=False, enable_return_routed_experts=False, kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='glm4",
               {'source': 'engine_config', 'items': {'model': '/data/cache/model_scope/ZhipuAI/GLM-5-FP8', 'speculative_config': "SpeculativeConfig(method='mtp', model='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', num_spec_tokens=3)", 'tokenizer': '/data/cache/model_scope/ZhipuAI/GLM-5-FP8', 'skip_tokenizer_init': False, 'tokenizer_mode': 'auto', 'revision': None, 'tokenizer_revision': None, 'trust_remote_code': True, 'dtype': 'bfloat16', 'max_model_len': 200000, 'download_dir': None, 'load_format': 'auto', 'tensor_parallel_size': 8, 'pipeline_parallel_size': 1, 'data_parallel_size': 1, 'decode_context_parallel_size': 1, 'dcp_comm_backend': 'ag_rs', 'disable_custom_all_reduce': False, 'quantization': 'fp8', 'quantization_config': None, 'enforce_eager': False, 'enable_return_routed_experts': False, 'kv_cache_dtype': 'auto', 'device_config': 'cuda'}, 'complete': False},
               'fixtures/real/607_v1-0.21.0-worker-proc-died-dump-input-banner-split-in-storage.log:12'),
    ),
    'api_server_version': (
        Sample('INFO 06-06 15:53:55 [api_server.py:1289] vLLM API server version 0.9.0.1',
               {'engine_version': '0.9.0.1', 'engine_commit': None},
               'fixtures/real/007_v1-0.9.0.1-qwen25vl-banner-nondefault-args.log:16'),
    ),
    'logo_version': (
        Sample('INFO 08-07 21:32:22 [api_utils.py:339]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.25.0',
               {'engine_version': '0.25.0', 'engine_commit': None},
               'fixtures/real/030_v1-0.25.0-dp8-ep-banner-version-deepseek-v4.log:12'),
    ),
    'engine_version': (
        Sample("INFO 04-07 05:27:51 [llm_engine.py:241] Initializing a V0 LLM engine (v0.8.1) with config: model='meta-llama/Llama-3.2-1B-Instruct', speculative_config=None, tokenizer='meta-llama/Llama-3.2-1B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=131072, download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_",
               {'engine_version': '0.8.1', 'engine_commit': None},
               'fixtures/real/026_v0-0.8.1-kserve-huggingfaceserver-interleaved.log:17'),
    ),
    'dump_input_version': (
        Sample("(EngineCore pid=23935) ERROR 05-21 04:01:32 [dump_input.py:72] Dumping input data for V1 LLM engine (v0.21.0) with config: model='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', speculative_config=SpeculativeConfig(method='mtp', model='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', num_spec_tokens=3), tokenizer='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=200000, download_dir=None, load_format=auto, tensor_parallel_size=8, pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=ag_rs, disable_custom_all_reduce=False, quantization=fp8, quantization_config=None, enforce_eager=False, enable_return_routed_experts=False, kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='glm4",
               {'engine_version': '0.21.0', 'engine_commit': None},
               'fixtures/real/607_v1-0.21.0-worker-proc-died-dump-input-banner-split-in-storage.log:12'),
    ),
    'image_digest': (
        Sample('Digest: sha256:7923b4803d9b5a0d2e8a1fd6ee3a0b0a3f5c1a9d4e7b2c6f8a0d1e3b5c7f9a2b',
               {'image_digests': ['sha256:7923b4803d9b5a0d2e8a1fd6ee3a0b0a3f5c1a9d4e7b2c6f8a0d1e3b5c7f9a2b']},
               "docker pull's digest line (the image digest the rule takes; the digest illustrative)"),
    ),
    'banner_api_server': (
        Sample('INFO 06-06 15:53:55 [api_server.py:1289] vLLM API server version 0.9.0.1',
               {},
               'fixtures/real/007_v1-0.9.0.1-qwen25vl-banner-nondefault-args.log:16'),
    ),
    'banner_logo': (
        Sample('INFO 08-07 21:32:22 [api_utils.py:339]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.25.0',
               {},
               'fixtures/real/030_v1-0.25.0-dp8-ep-banner-version-deepseek-v4.log:12'),
    ),
    'args_dict_start': (
        Sample("INFO 06-06 15:53:55 [cli_args.py:300] non-default args: {'host': '0.0.0.0', 'port': 8001, 'dtype': 'bfloat16', 'limit_mm_per_prompt': {'image': 5, 'video': 5}}",
               {},
               'fixtures/real/007_v1-0.9.0.1-qwen25vl-banner-nondefault-args.log:17'),
    ),
    'args_namespace_start': (
        Sample("INFO 06-19 11:30:25 [api_server.py:1044] args: Namespace(subparser='serve', model_tag='/root/workspace/d19ndanhri0c73dr6i5g/cache/model_scope/LLM-Research/gemma-3-27b-it', config='', host='0.0.0.0', port=40059, uvicorn_log_level='info', disable_uvicorn_access_log=False, allow_credentials=Fa",
               {},
               'fixtures/real/053_v0-0.8.5post1-gpustack-wrapper-version-banner-args-namespace.log:20'),
    ),
    'engine_init_start': (
        Sample("INFO 01-22 14:32:19 llm_engine.py:73] Initializing an LLM engine with config: model='/tmp/CodeLlama-13b-Instruct-hf', tokenizer='/tmp/CodeLlama-13b-Instruct-hf', tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=True, dtype=torch.float16, max_seq_len=16384, download_dir=None, load_format=auto, tensor_parallel_size=5, quantization=None, enforce_eager=False, seed=0)",
               {},
               'fixtures/real/052_v0-0.2x-ray-fastchat-tp5-heads-not-divisible.log:13'),
    ),
    'load_start': (
        Sample('INFO 04-21 21:28:20 [gpu_model_runner.py:4752] Starting to load model MiniMaxAI/MiniMax-M2.5...',
               {},
               'fixtures/real/210_v1-2026-ci-buildkite-no-prefix-rank-assignment.log:14'),
    ),
    'load_shards': (
        Sample('Loading safetensors checkpoint shards:   0% Completed | 0/3 [00:00<?, ?it/s]',
               {},
               'fixtures/real/036_v1-enginecore-futurewarning-interleaved-shard-load.log:14'),
    ),
    'load_start_mrv2': (
        Sample('(EngineCore pid=18508) INFO 09-16 13:47:33 [model_runner.py:396] Loading model from scratch...',
               {},
               'fixtures/real/211_v1-2026-09-newest-wording-combined-kv-line-free-memory.log:15'),
    ),
    'load_done_v0': (
        Sample('INFO 08-19 07:51:03 model_runner.py:732] Loading model weights took 2.3463 GB',
               {},
               'fixtures/real/015_v0-0.5.x-gemma2-9b-8xl4-gpublocks-cudagraph.log:11'),
    ),
    'load_done_v1': (
        Sample('INFO 07-29 19:12:52 [model_runner.py:1203] Model loading took 2.8764 GiB and 9.005007 seconds',
               {},
               'fixtures/real/048_v0-0.9x-whisper-encdec-a100-40g-model-loading-cuda-blocks.log:12'),
    ),
    'profiled_v1': (
        Sample('(Worker_TP0 pid=118) INFO 05-04 01:05:57 [gpu_worker.py:440] Available KV cache memory: 9.74 GiB',
               {},
               'fixtures/real/008_v1-nightly-dual4090-dflash-kvpool-specdecode-runtime.log:11'),
    ),
    'profiled_v0': (
        Sample('INFO 03-22 18:53:23 [worker.py:267] model weights take 18.38GiB; non_torch_memory takes 0.15GiB; PyTorch activation peak memory takes 0.79GiB; the rest of the memory reserved for KV Cache is 2.96GiB.',
               {},
               'fixtures/real/003_v0-deepseek-r1-gguf-3090-multiworker-profiling.log:17'),
    ),
    'profiled_064': (
        Sample('Memory profiling results: total_gpu_memory=23.69GiB initial_memory_usage=15.43GiB peak_torch_memory=16.22GiB memory_usage_post_profile=15.48Gib non_torch_memory=0.45GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90',
               {},
               "tests/test_vllm_wordings.py:25 (vLLM's format)"),
    ),
    'profiled_reserved': (
        Sample("(EngineCore pid=316) INFO 08-21 18:37:44 [gpu_worker.py:492] Initial free memory 31.16 GiB, reserved 4.25 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not respect the gpu_memory_utilization config. Only use kv_cache_memory_bytes config when you want manual control of KV cache memory size. If OOM'ed, check the difference of initial free memory between the current run and the previous run where kv_cache_memory_bytes is suggested and update it correspondingly.",
               {},
               'fixtures/real/017_v1-0.27.2rc1-xpu-arc-b70-mtp-fp8kv-kv-too-small.log:16'),
    ),
    'kv_sized_v1': (
        Sample('INFO 07-08 01:14:18 [kv_cache_utils.py:716] GPU KV cache size: 811,008 tokens',
               {},
               'fixtures/real/217_tpu-inference-v6e-tp4-hbm-kv-tokens.log:12'),
    ),
    'kv_sized_v0': (
        Sample('INFO 04-23 14:48:44 [executor_base.py:112] # cuda blocks: 7299, # CPU blocks: 2048',
               {},
               'fixtures/real/016_v0-0.8x-rtx5090-cuda-blocks-concurrency.log:15'),
    ),
    'capture_v0_old': (
        Sample("    INFO 07-17 23:41:30 model_runner.py:847] Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is not static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI.",
               {},
               'fixtures/real/046_v0-0.5.2-indented-tp4-gpu-blocks-cudagraph.log:15'),
    ),
    'capture_v0': (
        Sample("(VllmWorkerProcess pid=12897) INFO 04-23 14:48:46 [model_runner.py:1465] Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI. If out-of-memory error occurs during cudagraph capture, consider decreasing `gpu_memory_utilization` or switching to eager mode. You can also reduce the `max_num_seqs` as",
               {},
               'fixtures/real/016_v0-0.8x-rtx5090-cuda-blocks-concurrency.log:17'),
    ),
    'capture_v1': (
        Sample('Capturing CUDA graphs (PIECEWISE): 100%|█████████████████████████████████████████████████| 3/3 [00:03<00:00,  1.04s/it]',
               {},
               'fixtures/real/033_v1-windows-build-cudagraph-capture-finished-kv-profiling-notice.log:13'),
    ),
    'ready_init_engine': (
        Sample('(EngineCore_DP0 pid=188893) INFO 10-21 09:12:04 [core.py:210] init engine (profile, create kv cache, warmup model) took 25.99 seconds',
               {},
               'fixtures/real/209_v1-0.11-boot-tail-kv-graph-capture-init-engine.log:19'),
    ),
    'ready_graphs': (
        Sample('(EngineCore pid=5744) INFO 09-22 12:15:35 [model_runner.py:960] Graph capturing finished in 4 secs, took 0.11 GiB',
               {},
               'fixtures/real/033_v1-windows-build-cudagraph-capture-finished-kv-profiling-notice.log:18'),
    ),
    'ready_api_server': (
        Sample('Starting vLLM API server 0 on http://0.0.0.0:8000',
               {},
               'docs/vllm-log-lines.md §2.10'),
    ),
    'ready_server': (
        Sample('(APIServer pid=1) INFO 07-21 04:58:58 [api_server.py:616] Starting vLLM server on http://0.0.0.0:8000',
               {},
               'docs/vllm-log-lines.md §1.1'),
    ),
    'ready_uvicorn': (
        Sample('INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)',
               {},
               'docs/vllm-log-lines.md §1.4'),
    ),
    'stop_api_server': (
        Sample('(APIServer pid=9589) INFO 12-03 16:20:42 [launcher.py:254] [shutdown] API server: shutdown triggered',
               {},
               'fixtures/live/vllm-0.32.0/ready-served-sigterm.log:175'),
    ),
    'stop_engine_signal': (
        Sample('(EngineCore pid=9652) INFO 12-03 16:20:42 [core.py:1454] [shutdown] EngineCore: trigger received signal=SIGTERM',
               {},
               'fixtures/live/vllm-0.32.0/ready-served-sigterm.log:182'),
    ),
    'stop_uvicorn': (
        Sample('INFO:     Shutting down',
               {},
               'fixtures/live/vllm-0.32.0/ready-served-sigterm.log:195'),
    ),
    'stop_uvicorn_done': (
        Sample('INFO:     Application shutdown complete.',
               {},
               'fixtures/live/vllm-0.32.0/ready-served-sigterm.log:197'),
    ),
    'ready_startup': (
        Sample('Application startup complete.',
               {},
               'docs/vllm-log-lines.md §2.10'),
    ),
    'traceback_header': (
        Sample('ERROR 06-15 13:57:57 [core.py:517] Traceback (most recent call last):',
               {},
               'fixtures/real/414_v1-0.9x-dump-input-scheduler-output-enginecore-fatal-timeout.log:15'),
    ),
    'traceback_frame': (
        Sample('(EngineCore pid=171) ERROR 07-16 08:23:49 [core.py:1242]   File "/usr/lib/python3.12/concurrent/futures/_base.py", line 449, in result',
               {},
               'fixtures/real/410_v1-0.2x-dgx-spark-gb10-rpc-sample-tokens-timeout-frames.log:15'),
    ),
    'traceback_frame_cut': (
        Sample('(VllmWorker rank=0 pid=2699411) ERROR 08-11 10:45:36 [multiproc_executor.py:511]   File "/environments/venv/lib64/python3.11/site-packages/vllm/distributed/parallel_state.py"',
               {},
               'fixtures/real/608_v1-0.9x-vllmworker-rank0-rank1-interleaved-frames-storage-wrapped-file-lines.log:12'),
    ),
    'frame_load_model': (
        Sample('(VllmWorker rank=5 pid=3073)   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py", line 136, in load_model',
               {},
               'fixtures/real/042_v1-0.8x-tp8-vllmworker-rank5-load-model-traceback-oom.log:20'),
    ),
    'frame_get_model': (
        Sample('(VllmWorker rank=0 pid=3068)   File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/model_loader/__init__.py", line 14, in get_model',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_load_weights': (
        Sample('(VllmWorker rank=0 pid=3068)   File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/llama.py", line 594, in load_weights',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_determine_available_memory': (
        Sample('(EngineCore_DP0 pid=269)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 243, in determine_available_memory',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_profile_run': (
        Sample('(EngineCore_DP0 pid=269)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2528, in profile_run',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_determine_num_available_blocks': (
        Sample('ERROR 08-19 07:51:27 multiproc_worker_utils.py:226]   File "/usr/local/lib/python3.12/dist-packages/vllm/worker/worker.py", line 222, in determine_num_available_blocks',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_initialize_kv_cache': (
        Sample('(EngineCore_DP0 pid=269)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2902, in initialize_kv_cache',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame__initialize_kv_caches': (
        Sample('(EngineCore_DP0 pid=269)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 146, in _initialize_kv_caches',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_initialize_from_config': (
        Sample('(EngineCore_DP0 pid=269)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 276, in initialize_from_config',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame__allocate_kv_cache': (
        Sample('ERROR 08-19 07:51:27 multiproc_worker_utils.py:226]   File "/usr/local/lib/python3.12/dist-packages/vllm/worker/cache_engine.py", line 86, in _allocate_kv_cache',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_get_kv_cache_config': (
        Sample('(EngineCore_DP0 pid=269)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 1102, in get_kv_cache_config',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame__check_enough_kv_cache_memory': (
        Sample('(EngineCore_DP0 pid=494)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 641, in _check_enough_kv_cache_memory',
               {},
               'fixtures/real/214_v1-kv-too-small-estimated-max-len-xinference.log:14'),
    ),
    'frame_initialize_cache': (
        Sample('(VllmWorkerProcess pid=13107) ERROR 08-19 07:51:27 multiproc_worker_utils.py:226]   File "/local_disk0/.ephemeral_nfs/envs/pythonEnv-203728e4-b8a6-4791-b5f1-975f27b82372/lib/python3.11/site-packages/vllm/worker/worker.py", line 222, in initialize_cache',
               {},
               'fixtures/real/015_v0-0.5.x-gemma2-9b-8xl4-gpublocks-cudagraph.log:21'),
    ),
    'frame_capture_model': (
        Sample('(Worker_TP2 pid=99)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 3440, in capture_model',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame__capture_cudagraphs': (
        Sample('(Worker_TP2 pid=99)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 3519, in _capture_cudagraphs',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame__warm_up_model': (
        Sample('(VllmWorkerProcess pid=13107) ERROR 08-19 07:51:27 multiproc_worker_utils.py:226]   File "/local_disk0/.ephemeral_nfs/envs/pythonEnv-203728e4-b8a6-4791-b5f1-975f27b82372/lib/python3.11/site-packages/vllm/worker/worker.py", line 238, in _warm_up_model',
               {},
               'fixtures/real/015_v0-0.5.x-gemma2-9b-8xl4-gpublocks-cudagraph.log:23'),
    ),
    'frame_compile_or_warm_up_model': (
        Sample('(Worker_TP2 pid=99) ERROR 04-09 20:31:10 [multiproc_executor.py:949]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 588, in compile_or_warm_up_model',
               {},
               'fixtures/real/213_v1-kimi-k25-tp4-oom-cuda-graph-capture.log:19'),
    ),
    'frame_output_handler': (
        Sample('ERROR 06-26 23:10:17 [async_llm.py:420]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", line 379, in output_handler',
               {},
               'fixtures/real/056_v1-0.9x-enginedead-requests-failed-500-custom-allreduce.log:11'),
    ),
    'frame_generate': (
        Sample('(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", line 387, in generate',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_step': (
        Sample('(EngineCore_DP0 pid=269)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 284, in step',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_execute_model': (
        Sample('(Worker_TP0 pid=118)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 447, in execute_model',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'frame_run_busy_loop': (
        Sample('(EngineCore_DP0 pid=269)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 701, in run_busy_loop',
               {},
               "Python's traceback frame (vLLM's module path; line number illustrative), function per ref §2.11 / facts.md phases"),
    ),
    'oom': (
        Sample("(EngineCore pid=837) ERROR 09-02 15:15:12 [core.py:1348] RuntimeError: Worker failed with error 'CUDA out of memory. Tried to allocate 80.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 33.94 MiB is free. Including non-PyTorch memory, this process has 23.44 GiB memory in use. Of the allocated memory 22.01 GiB is allocated by PyTorch, with 17.88 MiB allocated in private pools (e.g., CU",
               {'tried_to_allocate_bytes': 83886080, 'gpu_index': 0, 'total_capacity_bytes': 25297357373, 'free_bytes': 35588669, 'in_use_bytes': 25168508355, 'allocated_by_pytorch_bytes': 23633057546},
               'fixtures/real/060_v1-qwen38-flash-next-2x3090-worker-failed-cuda-oom.log:19'),
    ),
    'kv_too_small_v0': (
        Sample("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (85632). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
               {'max_model_len': 131072, 'kv_cache_tokens': 85632},
               'docs/vllm-log-lines.md §2.6 (its f-string with figures)'),
    ),
    'kv_too_small_v1': (
        Sample("▎ ValueError: To serve at least one request with the model's max seq len (196608),",
               {'max_model_len': 196608},
               'fixtures/real/204_v1-0.29-quoted-message-only-kv-too-small.log:13'),
    ),
    'no_kv_memory': (
        Sample('No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.',
               {},
               "tests/test_vllm_wordings.py:106 (vLLM's format)"),
    ),
    'dcp_kv_heads': (
        Sample("ValueError: Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` (4) to be greater than the model's total number of KV heads (8). Increase `--tensor-parallel-size` or set `--decode-context-parallel-size 1`.",
               {'message': "Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` (4) to be greater than the model's total number of KV heads (8). Increase `--tensor-parallel-size` or set `--decode-context-parallel-size 1`."},
               'docs/vllm-log-lines.md §2.11 (0.27-0.33; its f-string with figures)'),
    ),
    'dcp_kv_heads_assert': (
        Sample('AssertionError: tensor parallel size 2 must be greater than total num kv heads 2 when enable decode context parallel for GQA/MQA',
               {'message': 'tensor parallel size 2 must be greater than total num kv heads 2 when enable decode context parallel for GQA/MQA'},
               "tests/test_vllm_wordings.py:109 (vLLM's format)"),
    ),
    'dcp_too_large': (
        Sample('ValueError: `--decode-context-parallel-size` (4) exceeds the maximum supported value (2) for `--tensor-parallel-size` (8) and 4 model KV heads.',
               {'message': '`--decode-context-parallel-size` (4) exceeds the maximum supported value (2) for `--tensor-parallel-size` (8) and 4 model KV heads.'},
               'docs/vllm-log-lines.md §2.11 (its f-string with figures)'),
    ),
    'heads_not_divisible': (
        Sample('ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (6).',
               {'message': 'Total number of attention heads (40) must be divisible by tensor parallel size (6).'},
               "tests/test_vllm_wordings.py:108 (vLLM's format)"),
    ),
    'max_model_len_too_large': (
        Sample("ValueError: [address=127.0.0.1:37657, pid=3125985] User-specified max_model_len (4096) is greater than the derived max_model_len (seq_length=2048 or model_max_length=None in model's config.json). This may lead to incorrect model outputs or CUDA errors. Make sure the value is correct and within the model context size.",
               {'message': "User-specified max_model_len (4096) is greater than the derived max_model_len (seq_length=2048 or model_max_length=None in model's config.json). This may lead to incorrect model outputs or CUDA errors. Make sure the value is correct and within the model context size."},
               'fixtures/real/613_v0-xinference-max-model-len-greater-than-derived-valueerror-wrapper-traceback.log:11'),
    ),
    'heads_per_kv_not_divisible': (
        Sample("ValueError: The model's number of query heads per KV head (6) must be divisible by `--decode-context-parallel-size` (4).",
               {'message': "The model's number of query heads per KV head (6) must be divisible by `--decode-context-parallel-size` (4)."},
               "docs/vllm-log-lines.md §2.11 (its f-string with figures; the divisor's wording after 'by' is the reference's '…')"),
    ),
    'pydantic_validation': (
        Sample('(APIServer pid=2994609) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig',
               {'message': '1 validation error for ModelConfig'},
               'fixtures/real/062_v1-0.10.2-pydantic-validationerror-modelconfig.log:13'),
    ),
    'pydantic_value_error': (
        Sample("(APIServer pid=2994609)   Value error, Expecting value: line 1 column 1 (char 0) [type=value_error, input_value=ArgsKwargs((), {'model': ...rocessor_plugin': None}), input_type=ArgsKwargs]",
               {'message': 'Expecting value: line 1 column 1 (char 0)'},
               'fixtures/real/062_v1-0.10.2-pydantic-validationerror-modelconfig.log:14'),
    ),
    'engine_core_failed': (
        Sample('(EngineCore pid=316) ERROR 08-21 18:37:44 [core.py:1344] EngineCore failed to start.',
               {},
               'fixtures/real/017_v1-0.27.2rc1-xpu-arc-b70-mtp-fp8kv-kv-too-small.log:18'),
    ),
    'engine_core_init_failed': (
        Sample('RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}',
               {},
               "tests/test_vllm_wordings.py:101 (vLLM's format)"),
    ),
    'workerproc_failed': (
        Sample('2026-03-11T17:57:10.976518836Z (EngineCore_DP0 pid=469) ERROR 03-11 17:57:10 [multiproc_executor.py:783] WorkerProc failed to start.',
               {},
               'fixtures/real/005_v1-runpod-iso-timestamps-gptoss120b-workerproc-failed.log:14'),
    ),
    'workerproc_init_failed': (
        Sample('2026-03-11T17:57:32.372168462Z (EngineCore_DP0 pid=269) ERROR 03-11 17:57:32 [core.py:1006] Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.',
               {},
               'fixtures/real/005_v1-runpod-iso-timestamps-gptoss120b-workerproc-failed.log:20'),
    ),
    'v0_engine_process_failed': (
        Sample('Engine process failed to start. See stack trace for the root cause.',
               {},
               "tests/test_vllm_wordings.py:102 (vLLM's format)"),
    ),
    'worker_proc_died': (
        Sample('Worker proc VllmWorker-1 died unexpectedly, shutting down executor.',
               {},
               "tests/test_vllm_wordings.py:103 (vLLM's format)"),
    ),
    'workerproc_exception': (
        Sample('(Worker_TP2 pid=99) ERROR 04-09 20:31:10 [multiproc_executor.py:949] WorkerProc hit an exception.',
               {},
               'fixtures/real/213_v1-kimi-k25-tp4-oom-cuda-graph-capture.log:11'),
    ),
    'engine_core_died': (
        Sample('Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.',
               {},
               "tests/test_vllm_wordings.py:104 (vLLM's format)"),
    ),
    'engine_core_exited': (
        Sample('(APIServer pid=11503) WARNING 12-03 16:22:16 [core_client.py:817] [shutdown] MPClient: engine core exited unexpectedly; starting cleanup',
               {},
               'fixtures/live/vllm-0.32.0/engine-core-killed.log:152'),
    ),
    'engine_dead_error': (
        Sample('ERROR 06-26 23:10:17 [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.',
               {},
               'fixtures/real/056_v1-0.9x-enginedead-requests-failed-500-custom-allreduce.log:16'),
    ),
    'engine_fatal': (
        Sample('Processed prompts:   6%|█▋                            | 29/512 [00:08<02:31,  3.19it/s, est. speed input: 1680.77 toks/s, output: 7.16 toks/s](EngineCore_DP0 pid=10311) ERROR 10-25 11:17:27 [core.py:720] EngineCore encountered a fatal error.',
               {},
               'fixtures/real/216_v1-tqdm-glued-fatal-error-during-generate.log:13'),
    ),
    'output_handler': (
        Sample('(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] AsyncLLM output_handler failed.',
               {},
               'fixtures/real/058_v1-nightly-3090-runtime-oom-enginecore-asyncllm-output-handler.log:12'),
    ),
    'mq_engine_dead': (
        Sample('ERROR 11-05 08:12:44 [client.py:301] MQLLMEngine is already dead, terminating client engine',
               {},
               "V0 engine/multiprocessing/client.py (0.6-0.10, not in ref): its RuntimeError text 'MQLLMEngine is already dead'"),
    ),
    'engine_core_hit_exception': (
        Sample('(EngineCore_3 pid=2095494) ERROR 04-17 23:05:06 [core.py:390] EngineCore hit an exception: Traceback (most recent call last):',
               {},
               'fixtures/real/207_v1-0.8x-dp-enginecore-n-interleaved-traceback.log:11'),
    ),
    'worker_method_load': (
        Sample('^[[1;36m(VllmWorkerProcess pid=176029)^[[0;0m ERROR 04-17 15:30:42 [multiproc_worker_utils.py:238] Exception in worker VllmWorkerProcess while processing method load_model.^M',
               {},
               'fixtures/real/220_ascend-910b-dp2-tp8-caret-escapes-hccl-error.log:11'),
    ),
    'worker_method_profile': (
        Sample('(VllmWorkerProcess pid=13107) ERROR 08-19 07:51:27 multiproc_worker_utils.py:226] Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks.',
               {},
               "V0 multiproc_worker_utils.py's 'Exception in worker %s while processing method %s.' (not in ref)"),
    ),
    'worker_method_kv_alloc': (
        Sample('(VllmWorkerProcess pid=13107) ERROR 08-19 07:51:27 multiproc_worker_utils.py:226] Exception in worker VllmWorkerProcess while processing method initialize_cache.',
               {},
               "V0 multiproc_worker_utils.py's 'Exception in worker %s while processing method %s.' (not in ref)"),
    ),
    'worker_method_graph_capture': (
        Sample('(VllmWorkerProcess pid=13107) ERROR 08-19 07:51:27 multiproc_worker_utils.py:226] Exception in worker VllmWorkerProcess while processing method _warm_up_model.',
               {},
               "V0 multiproc_worker_utils.py's 'Exception in worker %s while processing method %s.' (not in ref)"),
    ),
    'worker_method_runtime': (
        Sample('Exception in worker VllmWorkerProcess while processing method execute_model.',
               {},
               "tests/test_vllm_wordings.py:115 (vLLM's format)"),
    ),
    'worker_method_other': (
        Sample('Exception in worker VllmWorkerProcess while processing method init_device.',
               {},
               "tests/test_vllm_wordings.py:114 (vLLM's format)"),
    ),
    'executor_fatal_signal': (
        Sample('(EngineCore_1 pid=382867) CRITICAL 04-22 17:08:49 [multiproc_executor.py:49] MulitprocExecutor got fatal signal from worker processes, shutting down. See stack trace above for root cause issue.',
               {},
               'fixtures/real/220_ascend-910b-dp2-tp8-caret-escapes-hccl-error.log:32'),
    ),
    'core_client_fatal_signal': (
        Sample('CRITICAL 04-22 17:08:49 [core_client.py:359] Got fatal signal from worker processes, shutting down. See stack trace above for root cause issue.',
               {},
               'fixtures/real/220_ascend-910b-dp2-tp8-caret-escapes-hccl-error.log:33'),
    ),
    'worker_signal': (
        Sample('(EngineCore_DP0 pid=742) (RayWorkerWrapper pid=233, ip=10.20.1.125) *** SIGSEGV received at time=1762945937 on cpu 6 ***',
               {},
               'fixtures/real/208_v1-0.11.1-rocm-r9700-ray-multinode-sigsegv.log:35'),
    ),
    'rocm_hw_exception': (
        Sample('HW Exception by GPU node-1 (Agent handle: 0x2f0fbb70) reason :GPU Hang',
               {'message': 'GPU Hang'},
               'fixtures/real/219_rocm-strix-halo-0.11.1-gpu-hang-after-compile.log:56'),
    ),
    'cuda_error': (
        Sample('vllm-mxfp4  |   what():  CUDA error: an illegal memory access was encountered',
               {'message': 'an illegal memory access was encountered'},
               'fixtures/real/055_v1-dgx-spark-compose-enginedead-illegal-memory-access.log:20'),
    ),
    'cuda_error_custom_ar': (
        Sample('Failed: Cuda error /workspace/csrc/custom_all_red',
               {'message': '/workspace/csrc/custom_all_red'},
               'fixtures/real/056_v1-0.9x-enginedead-requests-failed-500-custom-allreduce.log:23'),
    ),
    'oom_driver': (
        Sample('(Worker_TP0 pid=118) ERROR 05-04 01:06:10 [multiproc_executor.py:597] RuntimeError: CUDA driver error: out of memory',
               {},
               "torch's 'CUDA driver error: out of memory' (the rule's comment; tests/test_failure_kinds.py)"),
    ),
    'startup_memory': (
        Sample('[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940) ValueError: Free memory on device cuda:1 (19.77/22.05 GiB) on startup is less than desired GPU memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.',
               {'free_bytes': 21227875860, 'total_capacity_bytes': 23676007219, 'gpu_memory_utilization': 0.9, 'requested_bytes': 21303037788},
               'fixtures/real/401_v1-ci-iso-timestamp-free-memory-on-device-valueerror.log:11'),
    ),
    'nccl_error': (
        Sample('(VllmWorkerProcess pid=232) ERROR 08-23 08:25:25 multiproc_worker_utils.py:226] Exception in worker VllmWorkerProcess while processing method init_device: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), Traceback (most recent call last):',
               {'message': 'NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)'},
               'fixtures/real/405_v0-0.5.4-tp8-nccl-unhandled-system-error-in-exception-header.log:11'),
    ),
    'nccl_ncclInternalError': (
        Sample('(Worker_TP1 pid=97) ERROR 05-04 01:06:10 [multiproc_executor.py:597] ncclInternalError: Internal check failed.',
               {'message': 'ncclInternalError: Internal check failed.'},
               "NCCL's ncclGetErrorString text after the code's name, as torch states it (the rule's comment)"),
    ),
    'nccl_ncclUnhandledCudaError': (
        Sample('(Worker_TP1 pid=97) ERROR 05-04 01:06:10 [multiproc_executor.py:597] ncclUnhandledCudaError: Call to CUDA function failed.',
               {'message': 'ncclUnhandledCudaError: Call to CUDA function failed.'},
               "NCCL's ncclGetErrorString text after the code's name, as torch states it (the rule's comment)"),
    ),
    'nccl_ncclSystemError': (
        Sample('(Worker_TP1 pid=97) ERROR 05-04 01:06:10 [multiproc_executor.py:597] ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.',
               {'message': 'ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.'},
               "NCCL's ncclGetErrorString text after the code's name, as torch states it (the rule's comment)"),
    ),
    'nccl_ncclRemoteError': (
        Sample('(Worker_TP1 pid=97) ERROR 05-04 01:06:10 [multiproc_executor.py:597] ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.',
               {'message': 'ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.'},
               "NCCL's ncclGetErrorString text after the code's name, as torch states it (the rule's comment)"),
    ),
    'nccl_ncclInvalidUsage': (
        Sample('(Worker_TP1 pid=97) ERROR 05-04 01:06:10 [multiproc_executor.py:597] ncclInvalidUsage: This usually reflects invalid usage of NCCL library.',
               {'message': 'ncclInvalidUsage: This usually reflects invalid usage of NCCL library.'},
               "NCCL's ncclGetErrorString text after the code's name, as torch states it (the rule's comment)"),
    ),
    'nccl_watchdog': (
        Sample('[rank1]:[E1101 09:14:02.512000 97 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.',
               {'message': 'Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.'},
               "torch's ProcessGroupNCCL watchdog line (the rule's comment; figures illustrative)"),
    ),
    'nccl_watchdog_frame': (
        Sample('(RayWorkerWrapper pid=2667395) /root/project/sglang/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so(+0xe427c9) [0x7fd15b3007c9] c10d::ProcessGroupNCCL::ncclCommWatchdog()',
               {},
               'fixtures/real/417_v0-ray-rayworkerwrapper-nccl-watchdog-cxx-backtrace-bare-prefix.log:12'),
    ),
    'hccl_error': (
        Sample('^[[1;36m(VllmWorkerProcess pid=176029)^[[0;0m ERROR 04-17 15:30:42 [multiproc_worker_utils.py:238] RuntimeError: create:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:89 HCCL function error: HcclCommInitRootInfo(numRanks, &rootInfo, rank, &(comm->hcclComm_)), error code is 7^M',
               {'message': 'HCCL function error: HcclCommInitRootInfo(numRanks, &rootInfo, rank, &(comm->hcclComm_)), error code is 7'},
               'fixtures/real/220_ascend-910b-dp2-tp8-caret-escapes-hccl-error.log:24'),
    ),
    'gloo_error': (
        Sample('RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error',
               {'message': 'Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error'},
               "gloo's 'Gloo connectFullMesh failed with [file:line] …' (the rule's comment)"),
    ),
    'c10d_DistStoreError': (
        Sample('torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients joined.',
               {'message': 'Timed out after 601 seconds waiting for clients. 1/2 clients joined.'},
               "torch.distributed's store error (the rule's comment; figures illustrative)"),
    ),
    'c10d_DistNetworkError': (
        Sample('torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).',
               {'message': 'The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).'},
               "torch.distributed's TCPStore error (the rule's comment)"),
    ),
    'c10d_DistBackendError': (
        Sample('torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5',
               {'message': 'NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5'},
               "torch.distributed's backend error (the rule's comment; file and version illustrative)"),
    ),
    'rpc_timeout': (
        Sample('(EngineCore_DP0 pid=32080) ERROR 03-08 17:31:28 [core.py:1102] TimeoutError: RPC call to sample_tokens timed out.',
               {'message': 'RPC call to sample_tokens timed out'},
               "fixtures/real/409 and 410: the exception line their issues quote (cut from the excerpts), in 409's header"),
    ),
    'timeout_error': (
        Sample('(EngineCore_DP0 pid=32080) ERROR 03-08 17:31:28 [core.py:1102] TimeoutError: RPC call to sample_tokens timed out.',
               {'message': 'RPC call to sample_tokens timed out.'},
               "fixtures/real/409 and 410: the exception line their issues quote (cut from the excerpts), in 409's header"),
    ),
    'shell_killed': (
        Sample('Killed',
               {},
               'fixtures/real/413_v0-0.6.3-jetson-orin-nx-gguf-gpu-blocks-then-killed.log:17'),
    ),
    'worker_exit_signal': (
        Sample('(EngineCore_DP0 pid=269) ERROR 03-11 17:57:32 [multiproc_executor.py:154] Worker proc VllmWorker-1 died unexpectedly (exit code: -9), shutting down executor.',
               {'signal': 9},
               "docs/vllm-log-lines.md §2.11 (0.26+ 'Worker proc %s died unexpectedly (exit code: %s), shutting down executor.')"),
    ),
    'error_executing_method': (
        Sample('(RayWorkerWrapper pid=5) ERROR 05-10 16:00:15 worker_base.py:464] Error executing method determine_num_available_blocks. This might cause deadlock in distributed execution.',
               {},
               "V0 worker_base.py's 'Error executing method %s. This might cause deadlock in distributed execution.' (the rule's comment)"),
    ),
    'exception_ipython': (
        Sample('RuntimeError                              Traceback (most recent call last)',
               {'exception': 'RuntimeError'},
               'fixtures/real/201_v1-colab-ipython-traceback-bare-info.log:14'),
    ),
    'exception_error': (
        Sample('ERROR 06-26 23:10:17 [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.',
               {'exception': 'EngineDeadError', 'message': 'EngineCore encountered an issue. See stack trace (above) for the root cause.'},
               'fixtures/real/056_v1-0.9x-enginedead-requests-failed-500-custom-allreduce.log:16'),
    ),
    'exception_exception': (
        Sample('(APIServer pid=1) ERROR 05-04 01:09:12 [serving_chat.py:1114] starlette.exceptions.HTTPException: 400: Bad Request',
               {'exception': 'HTTPException', 'message': '400: Bad Request'},
               "an exception class ending in Exception as a traceback states it (Starlette's; wording illustrative)"),
    ),
    'engine_stats': (
        Sample('INFO 07-28 06:42:09 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 240.8 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 93.9%, Prefix cache hit rate: 0.0%',
               {'kind': 'engine_stats', 'engine': 0, 'values': {'prompt_throughput_tps': 0.0, 'generation_throughput_tps': 240.8, 'running_reqs': 8, 'waiting_reqs': 0, 'gpu_kv_cache_usage_pct': 93.9, 'prefix_cache_hit_rate_pct': 0.0}},
               'fixtures/real/225_v1-0.10-engine-stats-kv-usage-94-96.log:11'),
    ),
    'v0_prefix_hit': (
        Sample('INFO 09-12 14:02:31 metrics.py:455] Prefix cache hit rate: GPU: 45.31%, CPU: 0.00%',
               {'kind': 'engine_stats_extra', 'engine': None, 'values': {'prefix_cache_hit_rate_pct': 45.31}},
               "docs/vllm-log-lines.md §2.8 (0.5.5-0.11 V0: 'Prefix cache hit rate: GPU: %.2f%%, CPU: %.2f%%')"),
    ),
    'spec_decode_v1': (
        Sample('(APIServer pid=1) INFO 05-04 01:06:43 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.91, Accepted throughput: 63.19 tokens/s, Drafted throughput: 165.49 tokens/s, Accepted: 632 tokens, Drafted: 1655 tokens, Per-position acceptance rate: 0.770, 0.523, 0.329, 0.181, 0.106, Avg Draft acceptance rate: 38.2%',
               {'kind': 'spec_decode', 'engine': None, 'values': {'spec_mean_acceptance_length': 2.91, 'spec_accepted_tokens': 632, 'spec_drafted_tokens': 1655, 'spec_draft_acceptance_rate_pct': 38.2, 'spec_per_position_acceptance': [0.77, 0.523, 0.329, 0.181, 0.106]}},
               'fixtures/real/008_v1-nightly-dual4090-dflash-kvpool-specdecode-runtime.log:14'),
    ),
    'spec_decode_v0': (
        Sample('INFO 07-24 04:00:31 metrics.py:316] Speculative metrics: Draft acceptance rate: 0.000, System efficiency: 0.059, Number of speculative tokens: 16, Number of accepted tokens: 0, Number of draft tokens tokens: 42272, Number of emitted tokens tokens: 2642.',
               {'kind': 'spec_decode', 'engine': None, 'values': {'spec_draft_acceptance_rate_pct': 0.0, 'spec_accepted_tokens': 0, 'spec_drafted_tokens': 42272}},
               'fixtures/real/043_v0-0.5.x-medusa-speculative-metrics-tokens-tokens-typo.log:11'),
    ),
    'access_line': (
        Sample('INFO:     ::1:50352 - "POST /v1/completions HTTP/1.1" 200 OK',
               None,
               'fixtures/real/043_v0-0.5.x-medusa-speculative-metrics-tokens-tokens-typo.log:12'),
    ),
    'request_line': (
        Sample("(APIServer pid=1) INFO 05-04 01:06:21 [logger.py:41] Received request chatcmpl-5e1f0c9d2b7a4f3e8c6d1a0b9e8f7c6d: prompt: '<|im_start|>user\\nhello<|im_end|>', params: SamplingParams(n=1, temperature=0.7), prompt_token_ids: None, lora_request: None.",
               None,
               "entrypoints/logger.py's 'Received request %s: prompt: %r, params: %s, …' (--enable-log-requests; not in ref)"),
    ),
    'request_failed': (
        Sample('INFO 06-26 23:10:17 [async_llm.py:346] Request chatcmpl-f745bb35fc2b437c92035bf14a2a8cfa failed (engine dead).',
               {},
               'fixtures/real/056_v1-0.9x-enginedead-requests-failed-500-custom-allreduce.log:17'),
    ),
    'request_error': (
        Sample('(APIServer pid=1) ERROR 05-04 01:09:12 [serving_chat.py:1114] Error in chat completion stream generator.',
               {},
               "serving_chat.py's logger.exception('Error in chat completion stream generator.') (not in ref)"),
    ),
    'dump_input_serving': (
        Sample("(EngineCore pid=23935) ERROR 05-21 04:01:32 [dump_input.py:72] Dumping input data for V1 LLM engine (v0.21.0) with config: model='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', speculative_config=SpeculativeConfig(method='mtp', model='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', num_spec_tokens=3), tokenizer='/data/cache/model_scope/ZhipuAI/GLM-5-FP8', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=200000, download_dir=None, load_format=auto, tensor_parallel_size=8, pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=ag_rs, disable_custom_all_reduce=False, quantization=fp8, quantization_config=None, enforce_eager=False, enable_return_routed_experts=False, kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='glm4",
               {},
               'fixtures/real/607_v1-0.21.0-worker-proc-died-dump-input-banner-split-in-storage.log:12'),
    ),
}
