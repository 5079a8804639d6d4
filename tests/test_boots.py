"""Boot assembly: splitting a log at each start-up, outcomes and failure phases (facts.md)."""

from __future__ import annotations

from conftest import REAL, SYNTH

from ledger import parsers

RESTART = SYNTH / "journald-restart-capture-oom-then-ready.log"

HDR = "(EngineCore pid=43) INFO 09-29 12:34:{s:02d} [x.py:1] "
API = "(APIServer pid=1) INFO 09-29 12:34:{s:02d} [x.py:1] "


def lines(*messages: str, prefix: str = HDR) -> str:
    return "\n".join(prefix.format(s=i) + m for i, m in enumerate(messages)) + "\n"


def boots_of(text: str) -> list[parsers.Boot]:
    return parsers.parse_text(text, year=2026)


def test_a_restarted_unit_gives_two_boots_each_with_its_outcome():
    boots = parsers.parse_file(str(RESTART), year=2026)
    assert [(b.first_line, b.last_line, b.outcome) for b in boots] == [(1, 25, "failed"), (26, 43, "ready")]


def test_the_capture_oom_has_its_figures_rank_and_phase():
    first = parsers.parse_file(str(RESTART), year=2026)[0]
    oom = next(f for f in first.failures if f.kind == "oom")
    assert (oom.line, oom.rank, oom.phase) == (21, 1, "graph_capture")
    assert oom.figures == {
        "tried_to_allocate_bytes": 76 * 2**20, "gpu_index": 1, "total_capacity_bytes": round(23.56 * 2**30),
        "free_bytes": 0, "in_use_bytes": round(23.28 * 2**30), "allocated_by_pytorch_bytes": round(22.47 * 2**30),
        "reserved_unallocated_bytes": round(312.54 * 2**20),
    }


def test_boot_summary_takes_the_smallest_rank_for_capacity_and_largest_for_cost():
    second = parsers.parse_file(str(RESTART), year=2026)[1]
    assert second.summary("available_kv_cache_bytes").value == round(4.39 * 2**30)  # TP0 4.39 < TP1 4.41
    assert second.summary("model_load_seconds").value == 12.402117  # TP0 12.40 > TP1 12.39
    assert second.summary("kv_cache_tokens").value == 71920


def test_journald_has_no_year_so_it_is_inferred():
    boots = parsers.parse_file(str(RESTART), year=2031)
    assert boots[1].started_at == "2031-09-28 21:06:47" and boots[1].year_inferred


def test_kv_sizing_alone_is_not_ready():
    boot = boots_of(lines("GPU KV cache size: 1,000 tokens",
                          "Maximum concurrency for 1,000 tokens per request: 1.00x"))[0]
    assert boot.outcome == "incomplete"


def test_init_engine_line_makes_a_boot_ready():
    boot = boots_of(lines("GPU KV cache size: 1,000 tokens",
                          "init engine (profile, create kv cache, warmup model) took 12.50 seconds"))[0]
    assert boot.outcome == "ready"
    assert boot.summary("init_engine_seconds").value == 12.5


def test_failure_after_ready_is_a_crash_at_runtime():
    boot = boots_of(lines("init engine (profile, create kv cache, warmup model) took 12.50 s",
                          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a "
                          "total capacity of 23.56 GiB of which 0 bytes is free."))[0]
    assert boot.outcome == "crashed"
    assert boot.failures[0].phase == "runtime"


def test_a_failure_with_nothing_before_it_is_failed_with_unknown_phase():
    boot = boots_of(lines("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 6 has a "
                          "total capacity of 44.53 GiB of which 448.00 KiB is free."))[0]
    assert (boot.outcome, boot.failures[0].phase) == ("failed", "unknown")


def test_failure_during_load_takes_the_load_phase():
    boot = boots_of(lines("Starting to load model Qwen/Qwen3-8B...",
                          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a "
                          "total capacity of 14.57 GiB of which 1.58 GiB is free."))[0]
    assert boot.failures[0].phase == "load"


def test_a_second_banner_after_figures_starts_a_new_boot():
    text = lines("vLLM server version 0.20.2, serving model m", "GPU KV cache size: 1,000 tokens",
                 "vLLM server version 0.20.2, serving model m", "GPU KV cache size: 2,000 tokens", prefix=API)
    boots = boots_of(text)
    assert [b.summary("kv_cache_tokens").value for b in boots] == [1000, 2000]
    assert [(b.first_line, b.last_line) for b in boots] == [(1, 2), (3, 4)]


def test_the_same_args_line_twice_is_one_boot():
    args = "non-default args: {'model': 'm', 'max_model_len': 4096}"
    boots = boots_of(lines(args, "Some warning", args, prefix=API) +
                     lines("Initializing a V1 LLM engine (v0.20.2) with config: model='m', max_seq_len=4096, "))
    assert len(boots) == 1


def test_a_new_engine_core_pid_after_progress_is_a_new_boot():
    text = ("(EngineCore_DP0 pid=10) ERROR 03-11 17:57:10 [c.py:1] EngineCore failed to start.\n"
            "(EngineCore_DP0 pid=20) ERROR 03-11 17:58:10 [c.py:1] EngineCore failed to start.\n")
    assert len(boots_of(text)) == 2


def test_defaults_fill_only_after_a_complete_args_dump():
    complete = boots_of(lines("non-default args: {'model': 'm'}", prefix=API))[0]
    cut = boots_of(lines("non-default args: {'model': 'm', 'port': 80", prefix=API))[0]
    assert complete.shape["tensor_parallel_size"].source == "default"
    assert "tensor_parallel_size" not in cut.shape


def test_args_beat_engine_config_for_the_same_key():
    boot = boots_of(lines("non-default args: {'model': 'm', 'max_model_len': 4096}", prefix=API)
                    + lines("Initializing a V1 LLM engine (v0.20.2) with config: model='m', max_seq_len=4096, "))[0]
    assert boot.shape["max_model_len"].source == "args"


def test_engine_commit_comes_from_the_version_string():
    boot = boots_of(lines("Initializing a V1 LLM engine (v0.20.2rc1.dev9+g01d4d1ad3) with config: model='m', "))[0]
    assert (boot.engine_version, boot.engine_commit) == ("0.20.2rc1.dev9+g01d4d1ad3", "01d4d1ad3")


def test_image_digests_printed_anywhere_are_kept():
    digest = "sha256:" + "ab" * 32
    boot = boots_of(lines(f"Using image {digest}", "GPU KV cache size: 1,000 tokens"))[0]
    assert boot.image_digests == [digest]


def test_merged_kv_line_of_0_28_gives_both_facts():
    boot = boots_of(lines("GPU KV cache size: 922,496 tokens, Maximum concurrency for 40,000 tokens per request: 23.06x"))[0]
    assert boot.summary("kv_cache_tokens").value == 922496
    assert boot.summary("max_concurrency").value == 23.06
    assert boot.summary("max_concurrency_tokens").value == 40000


def test_0_30_device_name_in_kv_line():
    boot = boots_of(lines("XPU KV cache size: 10,000 tokens, Maximum concurrency for 1,000 tokens per request: 10.00x"))[0]
    assert boot.summary("kv_cache_tokens").value == 10000


def test_v0_kv_too_small_error_figures():
    boot = boots_of(lines("ValueError: The model's max seq len (29000) is larger than the maximum number of tokens "
                          "that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or "
                          "decreasing `max_model_len` when initializing the engine."))[0]
    f = boot.failures[0]
    assert (f.kind, f.phase, f.figures) == ("kv_too_small", "kv_alloc", {"max_model_len": 29000, "kv_cache_tokens": 23648})


def test_v1_kv_too_small_with_estimate():
    boot = boots_of(lines("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB "
                          "KV cache is needed, which is larger than the available KV cache memory (0.71 GiB). Based on "
                          "the available memory, the estimated maximum model length is 5632. Try increasing"))[0]
    assert boot.failures[0].figures == {"max_model_len": 131072, "needed_bytes": 16 * 2**30,
                                        "available_bytes": round(0.71 * 2**30), "estimated_max_model_len": 5632}


def test_kv_cache_memory_bytes_line_of_0_10_2():
    boot = boots_of(lines("Initial free memory 78.6787109375 GiB, reserved 4.25GiB memory for KV Cache as specified by "
                          "kv_cache_memory_bytes config and skipped memory profiling. This does does not respect"))[0]
    assert boot.summary("kv_cache_reserved_bytes").value == round(4.25 * 2**30)
    assert boot.summary("initial_free_memory_bytes").value == round(78.6787109375 * 2**30)


def test_old_torch_oom_wording():
    boot = boots_of(lines("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.70 GiB total "
                          "capacity; 21.86 GiB already allocated; 9.69 MiB free; 22.01 GiB reserved in total by PyTorch)"))[0]
    f = boot.failures[0].figures
    assert f["gpu_index"] == 0 and f["free_bytes"] == round(9.69 * 2**20)
    assert f["total_capacity_bytes"] == round(23.70 * 2**30)
    assert f["allocated_by_pytorch_bytes"] == round(21.86 * 2**30)


def test_dcp_config_error_from_the_seed():
    boot = boots_of(lines("ValueError: Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` (2) "
                          "to be greater than the model's total number of KV heads (2). Increase "
                          "`--tensor-parallel-size` or set `--decode-context-parallel-size 1`.", prefix=API))[0]
    assert boot.failures[0].kind == "config_error"
    assert "total number of KV heads (2)" in boot.failures[0].figures["message"]


# -- run starts: a restarted process's runs, as its runtime tells them (ingest --container) ----------


def test_a_run_start_ends_a_boot_whatever_its_lines_say(tmp_path):
    from ledger.parsers import start

    lines = (REAL / "008_v1-nightly-dual4090-dflash-kvpool-specdecode-runtime.log").read_text().splitlines(True)
    log = tmp_path / "twice.log"
    log.write_text("".join(lines + lines))  # the excerpt printed by two runs: no start-up line in it
    boots = start(str(log), year=2026, run_starts=[len(lines) + 1]).run().boots
    # the first boot after the excerpt's header (lines 1-10); the second from its run's first line
    assert [(b.first_line, b.last_line, b.outcome) for b in boots] == [
        (11, len(lines), "ready"), (len(lines) + 1, 2 * len(lines), "ready")]


def test_a_run_start_cuts_a_run_of_stats_lines(tmp_path):
    from ledger.parsers import start

    log = tmp_path / "stats.log"
    log.write_text((REAL / "028_v1-mtp-runtime-engine-stats-high-kv-usage-waiting.log").read_text())
    boots = start(str(log), year=2026, run_starts=[13]).run().boots  # lines 11-15: five stats lines
    assert [[s.line for s in b.runtime] for b in boots] == [[11, 12], [13, 14, 15]]
