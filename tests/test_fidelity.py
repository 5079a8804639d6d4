"""Logs nobody here wrote (issue 12): message-only pastes, bare tracebacks and other engines'
logs, failures read where they are stated and with the rank of the worker that stated them,
outcome and phase from what the text shows, pastes out of time order, data-parallel engines
printing at once.  Built on the real fixtures where one shows the case; the synthetic lines
are in the exact format vLLM prints."""

from __future__ import annotations

import pytest
from conftest import REAL

from ledger import parsers


def real(prefix: str):
    return next(REAL.glob(f"{prefix}_*.log"))


def parse(path) -> list[parsers.Boot]:
    return parsers.parse_file(str(path), year=2026)


# -- class 1: message-only text, bare tracebacks, and what stays refused ------------------------------


def test_a_message_only_paste_is_read_with_rank_and_process_null():
    (boot,) = parse(real("204"))
    (fact,) = boot.facts
    assert (fact.name, fact.line, fact.rank, fact.process) == ("available_kv_cache_bytes", 12, None, None)


def test_a_hand_wrapped_message_only_failure_is_read_whole_at_the_line_that_states_it():
    (boot,) = parse(real("204"))
    (failure,) = boot.failures
    assert (failure.kind, failure.line, failure.rank, boot.outcome) == ("kv_too_small", 13, None, "failed")
    assert failure.figures["estimated_max_model_len"] == 190272  # on the third physical line


@pytest.mark.parametrize("prefix", ["202", "203", "418"])
def test_a_bare_traceback_through_vllm_code_is_a_vllm_log(prefix):
    (boot,) = parse(real(prefix))
    assert boot.facts == [] and len(boot.failures) == 1


@pytest.mark.parametrize("prefix", ["203", "418"])
def test_a_bare_traceback_cut_before_its_exception_is_an_exception_with_class_and_message_null(prefix):
    (boot,) = parse(real(prefix))
    (failure,) = boot.failures
    assert (failure.kind, failure.line, failure.figures) == ("exception", 11, {})


def test_a_bare_start_up_traceback_cut_before_its_exception_fails_the_boot():
    (boot,) = parse(real("203"))
    assert (boot.outcome, boot.failures[0].phase) == ("failed", "unknown")


def test_a_bare_traceback_through_generate_and_step_is_a_crash_at_runtime():
    (boot,) = parse(real("418"))
    assert (boot.outcome, boot.failures[0].phase) == ("crashed", "runtime")


def test_ipythons_traceback_header_names_the_exceptions_class():
    (boot,) = parse(real("202"))
    (failure,) = boot.failures
    assert (failure.kind, failure.line, failure.figures, boot.outcome) == (
        "exception", 12, {"exception": "RuntimeError"}, "failed")


@pytest.mark.parametrize("log", sorted((REAL / "sglang").glob("*.log")), ids=lambda p: p.name[:3])
def test_another_engines_log_stays_refused(log):
    with pytest.raises(parsers.SourceError, match="no vLLM log lines found"):
        parse(log)


def test_torchs_nccl_watchdog_lines_alone_are_no_vllm_log():
    """fixtures/real/no-vllm-line/618: a KServe vLLM deploy's excerpt, but every line is torch's
    '[rank1]:[E ProcessGroupNCCL.cpp:…]' (its one vLLM line was cut off): any torch.distributed
    program prints these, so they do not make a vLLM log."""
    (log,) = (REAL / "no-vllm-line").glob("618_*.log")
    with pytest.raises(parsers.SourceError, match="no vLLM log lines found"):
        parse(log)


def test_prose_stays_refused(tmp_path):
    log = tmp_path / "notes.log"
    log.write_text("We tried vLLM on two GPUs and it ran out of memory.\nAny idea why the server stops?\n")
    with pytest.raises(parsers.SourceError, match="no vLLM log lines found"):
        parse(log)


def test_a_torch_wording_alone_does_not_make_a_vllm_log(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                   "capacity of 23.55 GiB of which 1.06 GiB is free.\n")
    with pytest.raises(parsers.SourceError, match="no vLLM log lines found"):
        parse(log)


# -- class 2: failures carry rank by the same rule, through any wrapper ---------------------------------


def test_an_oom_behind_a_ci_tag_keeps_its_workers_rank():
    text = ("[vllm-serve] (Worker_DP1_EP3 pid=5121) ERROR 06-01 10:00:07 [multiproc_executor.py:703] "
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity "
            "of 79.19 GiB of which 1.06 GiB is free.\n")
    (failure,) = parsers.parse_text(text, year=2026)[0].failures
    assert (failure.kind, failure.rank, failure.process) == ("oom", 3, "Worker_DP1_EP3")


def test_a_pipeline_worker_fact_behind_compose_has_its_rank():
    text = ("vllm-1  | (Worker_PP1 pid=88) INFO 06-01 10:00:07 [gpu_worker.py:358] "
            "Available KV cache memory: 3.00 GiB\n")
    (fact,) = parsers.parse_text(text, year=2026)[0].facts
    assert (fact.rank, fact.process) == (1, "Worker_PP1")


def test_a_nested_worker_fact_has_the_inner_workers_rank():
    text = ("(EngineCore_DP1 pid=112994) (Worker_DP1_TP1_EP3 pid=113015) INFO 11-06 16:15:01 [gpu_worker.py:358] "
            "Available KV cache memory: 3.00 GiB\n")
    (fact,) = parsers.parse_text(text, year=2026)[0].facts
    assert (fact.rank, fact.process) == (3, "Worker_DP1_TP1_EP3")


# -- class 3: a failure's line is the line that states it ---------------------------------------------

ECHOED = """\
(EngineCore_DP0 pid=494) ERROR 09-29 12:34:56 [core.py:708] EngineCore failed to start.
(EngineCore_DP0 pid=494) ERROR 09-29 12:34:56 [core.py:708]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 239, in initialize_from_config
(EngineCore_DP0 pid=494) ERROR 09-29 12:34:56 [core.py:708]     raise ValueError("No available memory for the cache blocks. "
(EngineCore_DP0 pid=494) ERROR 09-29 12:34:56 [core.py:708] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""


def test_the_echoed_raise_line_is_not_the_failures_line():
    boot = parsers.parse_text(ECHOED, year=2026)[0]
    assert [(f.kind, f.line) for f in boot.failures] == [("engine_init_failed", 1), ("no_kv_memory", 4)]


def test_the_stating_line_is_read_where_a_traceback_echoes_the_source_too():
    (boot,) = parse(real("214"))
    assert [(f.kind, f.line) for f in boot.failures] == [("kv_too_small", 16)]  # 15 is "raise ValueError("


# -- class 4: outcome and phase from what the text shows ----------------------------------------------

RUNTIME_OOM = """\
(EngineCore_DP0 pid=43) INFO 09-29 12:30:00 [kv_cache_utils.py:1087] GPU KV cache size: 425,424 tokens
Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:04<00:00, 14.21it/s]
Traceback (most recent call last):
  File "/app/run.py", line 12, in <module>
    outputs = llm.generate(prompts, params)
  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/llm.py", line 390, in generate
    outputs = self._run_engine(use_tqdm=use_tqdm)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 23.55 GiB of which 512.00 MiB is free.
"""


def test_an_oom_through_generate_after_graph_capture_is_a_runtime_crash():
    boot = parsers.parse_text(RUNTIME_OOM, year=2026)[0]
    (failure,) = boot.failures
    assert (failure.kind, failure.phase, boot.outcome) == ("oom", "runtime", "crashed")


V0_PROFILE_OOM = """\
INFO 03-27 10:29:01 worker.py:267] Memory profiling takes 4.26 seconds
ERROR 03-27 10:29:02 engine.py:400]   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/model_runner.py", line 1270, in profile_run
ERROR 03-27 10:29:02 engine.py:400]     self.execute_model(model_input, kv_caches, intermediate_tensors)
ERROR 03-27 10:29:02 engine.py:400]   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/model_runner.py", line 1710, in execute_model
ERROR 03-27 10:29:02 engine.py:400]     hidden_or_intermediate_states = model_executable(
ERROR 03-27 10:29:02 engine.py:400] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.
"""


def test_a_start_up_frame_wins_over_the_serving_frame_it_calls():
    boot = parsers.parse_text(V0_PROFILE_OOM, year=2026)[0]
    (failure,) = boot.failures
    assert (failure.phase, boot.outcome) == ("profile", "failed")


BUSY_LOOP = """\
(EngineCore_0 pid=2095494) ERROR 04-17 23:05:06 [core.py:390] EngineCore hit an exception: Traceback (most recent call last):
(EngineCore_0 pid=2095494) ERROR 04-17 23:05:06 [core.py:390]   File "/usr/local/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 383, in run_engine_core
(EngineCore_0 pid=2095494) ERROR 04-17 23:05:06 [core.py:390]     engine_core.run_busy_loop()
(EngineCore_0 pid=2095494) ERROR 04-17 23:05:06 [core.py:390]   File "/usr/local/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 405, in run_busy_loop
(EngineCore_0 pid=2095494) ERROR 04-17 23:05:06 [core.py:390]     outputs = step_fn()
"""


def test_an_engine_core_exception_in_the_busy_loop_is_the_engines_death():
    boot = parsers.parse_text(BUSY_LOOP, year=2026)[0]
    (failure,) = boot.failures
    assert (failure.kind, failure.phase, boot.outcome) == ("engine_dead", "runtime", "crashed")


def test_an_engine_core_exception_at_device_init_is_a_start_up_failure():
    (boot,) = parse(real("207"))
    (failure,) = boot.failures
    assert (failure.kind, failure.phase, boot.outcome) == ("engine_init_failed", "unknown", "failed")


def test_a_worker_signal_after_loading_fails_the_boot_in_profile():
    (boot,) = parse(real("208"))
    assert [(f.kind, f.line, f.phase) for f in boot.failures] == [("worker_died", 35, "profile")]  # 42 repeats it


# -- class 6: pastes out of time order -----------------------------------------------------------------

KV = "(EngineCore pid=43) INFO 09-29 12:40:00 [kv_cache_utils.py:1087] GPU KV cache size: 425,424 tokens\n"
ARGS = "(APIServer pid=1) INFO 09-29 {} [utils.py:233] non-default args: {{'model': 'm', 'max_model_len': 8192}}\n"
API_KV = "(APIServer pid=1) INFO 09-29 12:40:01 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, " \
         "Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, " \
         "Prefix cache hit rate: 0.0%\n"


def test_an_earlier_start_up_line_of_the_same_processes_is_no_restart():
    boots = parsers.parse_text(KV + API_KV + ARGS.format("12:39:00"), year=2026)
    assert len(boots) == 1
    assert boots[0].shape["max_model_len"].value == 8192


def test_a_later_start_up_line_is_a_restart():
    assert len(parsers.parse_text(KV + API_KV + ARGS.format("12:41:00"), year=2026)) == 2


def test_an_earlier_start_up_line_from_a_new_pid_is_a_restart():
    args = ARGS.format("12:39:00").replace("pid=1)", "pid=7)")
    assert len(parsers.parse_text(KV + API_KV + args, year=2026)) == 2


def test_two_runs_in_one_paste_days_apart_are_two_boots():
    boots = parse(real("220"))
    assert [(b.first_line, b.last_line, b.outcome) for b in boots] == [(11, 31, "failed"), (32, 43, "failed")]


# -- class 7: two data-parallel engines printing at once ----------------------------------------------

INIT = ("(EngineCore_DP{d} pid={pid}) INFO 10-01 09:00:0{s} [core.py:74] Initializing a V1 LLM engine (v0.11.0) "
        "with config: model='m', max_seq_len=8192, tensor_parallel_size=1, data_parallel_size=2\n")
AVAIL = "(EngineCore_DP{d} pid={pid}) INFO 10-01 09:00:1{s} [gpu_worker.py:298] Available KV cache memory: {gib} GiB\n"
STATS = ("(APIServer pid=1) INFO 10-01 09:01:0{s} [loggers.py:123] Engine 00{d}: Avg prompt throughput: 1.0 tokens/s, "
         "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.{d}%, "
         "Prefix cache hit rate: 0.0%\n")
DP_LOG = (INIT.format(d=0, pid=100, s=1) + AVAIL.format(d=0, pid=100, s=1, gib="10.00")
          + INIT.format(d=1, pid=101, s=2) + AVAIL.format(d=1, pid=101, s=2, gib="11.00")
          + STATS.format(d=0, s=1) + STATS.format(d=1, s=1) + STATS.format(d=0, s=2) + STATS.format(d=1, s=2))


def test_two_dp_engines_interleaved_are_one_boot():
    boots = parsers.parse_text(DP_LOG, year=2026)
    assert [(b.first_line, b.outcome) for b in boots] == [(1, "ready")]


def test_two_dp_engines_keep_their_figures_per_engine():
    (boot,) = parsers.parse_text(DP_LOG, year=2026)
    assert [(f.process, f.value) for f in boot.facts if f.name == "available_kv_cache_bytes"] == \
        [("EngineCore_DP0", 10 * 2**30), ("EngineCore_DP1", 11 * 2**30)]


def test_two_dp_engines_runtime_samples_keep_their_engine_index():
    (boot,) = parsers.parse_text(DP_LOG, year=2026)
    assert [s.engine for s in boot.runtime] == [0, 1, 0, 1]


def test_readme_fixture_tables():
    """The guide's tables of the real fixtures by class (docs/guide.md, "What is read")."""
    from conftest import ROOT
    from fixture_classes import render

    readme = (ROOT / "docs" / "guide.md").read_text()
    start, end = "<!-- fixture-classes:start -->\n", "<!-- fixture-classes:end -->"
    assert readme[readme.index(start) + len(start):readme.index(end)] == render()


def test_every_real_fixture_has_a_class():
    from fixture_classes import CLASSES

    assert sorted(CLASSES) == sorted(p.name[:3] for p in REAL.glob("*.log"))


DEAD = ("(APIServer pid=1) ERROR 06-26 23:10:{s} [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.\n")


ACCESS = '(APIServer pid=1) INFO:     127.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'


def test_a_figureless_failure_repeated_later_by_the_same_process_is_one_failure():
    text = DEAD.format(s="17") + ACCESS * 5 + DEAD.format(s="29") + ACCESS * 5 + DEAD.format(s="41")
    boot = parsers.parse_text(text, year=2026)[0]
    assert [f.line for f in boot.failures] == [1]


def test_each_dp_engine_reporting_the_fatal_signal_is_a_failure_of_its_own():
    (_, boot) = parse(real("220"))
    assert [(f.kind, f.line) for f in boot.failures] == \
        [("worker_died", 32), ("engine_dead", 33), ("worker_died", 41), ("engine_dead", 42)]


REQUEST_ERROR = """\
(APIServer pid=1) ERROR 10-14 16:59:25 [serving_chat.py:1145] Error in chat completion stream generator.
(APIServer pid=1) ERROR 10-14 16:59:25 [serving_chat.py:1145] Traceback (most recent call last):
(APIServer pid=1) ERROR 10-14 16:59:25 [serving_chat.py:1145] RuntimeError: CUDA error: an illegal memory access was encountered
"""


def test_an_error_inside_a_request_shows_the_engine_had_come_up():
    boot = parsers.parse_text(REQUEST_ERROR, year=2026)[0]
    (failure,) = boot.failures
    assert (failure.kind, failure.phase, boot.outcome) == ("cuda_error", "runtime", "crashed")
