"""Write a realistic vLLM runtime log of a given size, for the ingest benchmark.

One boot in vLLM 0.20's format (TP 2, DP 4 engines, MTP speculative decoding), then serving:
every 10 s a stats line per engine and a spec-decode report, and between them the requests of
that interval — a "Received request … prompt: '<long prompt>'" line, an "Added request" line,
the uvicorn access line and a "Finished request" line — and at the end a runtime OOM that kills
a worker and the engine.  Deterministic for a given size.

Usage: python bench/make_runtime_log.py OUT.log --mb 500
       python bench/make_runtime_log.py OUT.log --hours 10   (ten hours of serving, whatever the size)
"""

from __future__ import annotations

import argparse
import datetime as dt
import random

BOOT = """\
(APIServer pid=1) INFO {md} {t} [api_utils.py:339] vLLM server version 0.20.2, serving model Qwen/Qwen3-32B-FP8
(APIServer pid=1) INFO {md} {t} [api_utils.py:273] non-default args: {{'model_tag': 'Qwen/Qwen3-32B-FP8', 'model': 'Qwen/Qwen3-32B-FP8', 'max_model_len': 65536, 'tensor_parallel_size': 2, 'data_parallel_size': 4, 'gpu_memory_utilization': 0.92, 'kv_cache_dtype': 'fp8', 'max_num_seqs': 64, 'enable_log_requests': True, 'speculative_config': {{'method': 'mtp', 'num_speculative_tokens': 3}}}}
(EngineCore_DP0 pid=43) INFO {md} {t} [core.py:109] Initializing a V1 LLM engine (v0.20.2) with config: model='Qwen/Qwen3-32B-FP8', speculative_config=SpeculativeConfig(method='mtp', model='Qwen/Qwen3-32B-FP8', num_spec_tokens=3), tokenizer='Qwen/Qwen3-32B-FP8', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=65536, download_dir=None, load_format=auto, tensor_parallel_size=2, pipeline_parallel_size=1, data_parallel_size=4, disable_custom_all_reduce=False, quantization=fp8, enforce_eager=False, kv_cache_dtype=fp8, device_config=cuda, seed=0, enable_prefix_caching=True, compilation_config={{"level":3}}
(EngineCore_DP0 pid=43) INFO {md} {t} [gpu_model_runner.py:4879] Model loading took 16.8 GiB memory and 69.771233 seconds
(EngineCore_DP0 pid=43) INFO {md} {t} [monitor.py:48] torch.compile took 24.61 s in total
(EngineCore_DP0 pid=43) INFO {md} {t} [gpu_worker.py:440] Available KV cache memory: 41.39 GiB
(EngineCore_DP0 pid=43) INFO {md} {t} [kv_cache_utils.py:1713] GPU KV cache size: 1,356,080 tokens
(EngineCore_DP0 pid=43) INFO {md} {t} [kv_cache_utils.py:1718] Maximum concurrency for 65,536 tokens per request: 20.69x
(EngineCore_DP0 pid=43) INFO {md} {t} [gpu_model_runner.py:3480] Graph capturing finished in 9 secs, took 0.61 GiB
(EngineCore_DP0 pid=43) INFO {md} {t} [core.py:273] init engine (profile, create kv cache, warmup model) took 98.43 s
(APIServer pid=1) INFO {md} {t} [api_server.py:1822] Starting vLLM server on http://0.0.0.0:8000
(APIServer pid=1) INFO:     Started server process [1]
(APIServer pid=1) INFO:     Waiting for application startup.
(APIServer pid=1) INFO:     Application startup complete.
"""

WORDS = ("the of and to in is that for it as was with be by on not he this are or his from at which but have an they "
         "you were her she there been one all we their has would when if so no what up out more said about into them "
         "can only other new some could time these two may then do first any my now such like our over man me even "
         "most made after also did many before must through back years where much your way well down should because "
         "each just those people how too little state good very make world still own see men work long get here "
         "between both life being under never day same another know while last might us great old year off come "
         "since against go came right used take three kv cache tokens gpu tensor parallel decode prefill").split()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=500)
    ap.add_argument("--hours", type=float, help="write this many hours of serving instead of --mb")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    target = int(args.mb * 1e6)
    prompts = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(40, 160))) for _ in range(64)]
    t = dt.datetime(2026, 10, 1, 9, 0, 0)
    end = t + dt.timedelta(hours=args.hours) if args.hours else None
    written = 0
    with open(args.out, "w", encoding="utf-8") as f:
        def out(text: str) -> None:
            nonlocal written
            f.write(text)
            written += len(text)

        md, hms = t.strftime("%m-%d"), t.strftime("%H:%M:%S")
        out(BOOT.format(md=md, t=hms))
        n = 0
        while (t < end) if end else (written < target):
            t += dt.timedelta(seconds=10)
            md, hms = t.strftime("%m-%d"), t.strftime("%H:%M:%S")
            for _ in range(rnd.randint(30, 70)):
                n += 1
                rid = f"chatcmpl-{n:032x}"
                prompt = rnd.choice(prompts)
                out(f"(APIServer pid=1) INFO {md} {hms} [logger.py:41] Received request {rid}: prompt: "
                    f"'<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n', params: SamplingParams(n=1, "
                    f"temperature=0.7, top_p=0.8, top_k=20, max_tokens={rnd.randint(256, 4096)}), prompt_token_ids: None, "
                    f"prompt_embeds shape: None, lora_request: None.\n")
                out(f"(APIServer pid=1) INFO {md} {hms} [async_llm.py:323] Added request {rid}.\n")
                out(f"(APIServer pid=1) INFO:     10.0.0.{rnd.randint(2, 250)}:{rnd.randint(30000, 60000)} - "
                    f"\"POST /v1/chat/completions HTTP/1.1\" 200 OK\n")
            for e in range(4):
                out(f"(APIServer pid=1) INFO {md} {hms} [loggers.py:271] Engine {e:03d}: Avg prompt throughput: "
                    f"{rnd.uniform(0, 9000):.1f} tokens/s, Avg generation throughput: {rnd.uniform(20, 140):.1f} tokens/s, "
                    f"Running: {rnd.randint(0, 16)} reqs, Waiting: {rnd.randint(0, 4)} reqs, GPU KV cache usage: "
                    f"{rnd.uniform(0, 95):.1f}%, Prefix cache hit rate: {rnd.uniform(0, 80):.1f}%\n")
            acc = rnd.randint(200, 900)
            out(f"(APIServer pid=1) INFO {md} {hms} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
                f"{1 + acc / 400:.2f}, Accepted throughput: {acc / 10:.2f} tokens/s, Drafted throughput: 120.00 tokens/s, "
                f"Accepted: {acc} tokens, Drafted: 1200 tokens, Per-position acceptance rate: 0.812, 0.601, 0.433, "
                f"Avg Draft acceptance rate: {acc / 12:.1f}%\n")
        md, hms = t.strftime("%m-%d"), t.strftime("%H:%M:%S")
        out(f"(EngineCore_DP0 pid=43) ERROR {md} {hms} [core.py:1131] EngineCore encountered a fatal error.\n")
        out(f"(EngineCore_DP0 pid=43) ERROR {md} {hms} [core.py:1131] torch.OutOfMemoryError: CUDA out of memory. "
            "Tried to allocate 50.00 MiB. GPU 1 has a total capacity of 79.19 GiB of which 0 bytes is free. Including "
            "non-PyTorch memory, this process has 79.13 GiB memory in use. Of the allocated memory 77.02 GiB is allocated "
            "by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated.\n")
        out(f"(APIServer pid=1) ERROR {md} {hms} [async_llm.py:699] AsyncLLM output_handler failed.\n")
        out(f"(APIServer pid=1) ERROR {md} {hms} [async_llm.py:699] vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause.\n")


if __name__ == "__main__":
    main()
