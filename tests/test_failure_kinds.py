"""The failure kinds of issue 22 on the real fixtures (facts.md "Failures"): startup_memory,
comm_error, timeout, killed, exception; oom's new wordings; the negative KV budget; and the
outcome rule — a failure of any kind makes a boot failed before ready and crashed after, and a
start-up whose text ends in a traceback is never incomplete."""

from __future__ import annotations

import pytest
from conftest import REAL

from ledger import parsers

G = 2**30


def boot_of(prefix: str):
    (log,) = REAL.glob(f"{prefix}_*.log")
    (boot,) = parsers.parse_file(str(log), year=2026)
    return boot


def kinds(boot) -> list[tuple[str, str, int, int | None]]:
    return [(f.kind, f.phase, f.line, f.rank) for f in boot.failures]


def text(*messages: str, hdr: str = "(EngineCore_DP0 pid=7) ERROR 05-10 16:00:15 [core.py:1] "):
    (boot,) = parsers.parse_text("".join(hdr + m + "\n" for m in messages), year=2026)
    return boot


# -- startup_memory --------------------------------------------------------------------------

def test_the_start_up_memory_check_is_startup_memory_with_its_figures():
    boot = boot_of("401")
    (failure,) = boot.failures
    assert (failure.kind, failure.line, failure.rank, boot.outcome) == ("startup_memory", 11, None, "failed")
    assert failure.figures == {"free_bytes": round(19.77 * G), "total_capacity_bytes": round(22.05 * G),
                               "gpu_memory_utilization": 0.9, "requested_bytes": round(19.84 * G)}


def test_the_start_up_memory_check_without_a_device_name_is_read_too():
    boot = text("ValueError: Free memory on device (10.5/79.11 GiB) on startup is less than desired GPU memory "
                "utilization (0.9, 71.2 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
                "processes.")
    assert [(f.kind, f.figures["requested_bytes"]) for f in boot.failures] == [("startup_memory", round(71.2 * G))]


# -- comm_error ------------------------------------------------------------------------------

def test_an_nccl_error_in_a_workers_exception_line_is_comm_error_beside_the_workers_failure():
    boot = boot_of("405")
    assert kinds(boot) == [("engine_init_failed", "unknown", 11, None), ("comm_error", "unknown", 11, None)]
    assert boot.failures[1].figures == {"message": "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"}


def test_the_nccl_watchdogs_frame_is_comm_error():
    assert kinds(boot_of("417")) == [("comm_error", "unknown", 12, None)]


def test_an_hccl_error_is_comm_error_with_the_phase_of_its_frames():
    (log,) = REAL.glob("220_*.log")
    first = parsers.parse_file(str(log), year=2026)[0]
    comm = [f for f in first.failures if f.kind == "comm_error"]
    assert [(f.line, f.phase) for f in comm] == [(24, "load")]
    assert comm[0].figures["message"].startswith("HCCL function error: HcclCommInitRootInfo")


# -- timeout ---------------------------------------------------------------------------------

def test_an_rpc_timeout_stated_is_timeout():
    boot = text("TimeoutError: RPC call to sample_tokens timed out.")
    assert [(f.kind, f.figures) for f in boot.failures] == [("timeout", {"message": "RPC call to sample_tokens timed out."})]


def test_a_bare_timeout_error_raised_in_the_serving_loop_is_a_runtime_crash():
    """609: shm_broadcast's acquire_read raises a bare 'TimeoutError' (no message), and the
    traceback it causes runs through run_engine_core -> run_busy_loop: the engine was serving."""
    boot = boot_of("609")
    assert (kinds(boot), boot.failures[0].figures, boot.outcome) == ([("timeout", "runtime", 13, None)], {}, "crashed")


def test_the_shm_broadcast_wait_alone_is_not_a_failure():
    boot = text("No available shared memory broadcast block found in 60 second. This typically happens when some "
                "processes are hanging or doing some time-consuming work (e.g. compilation).",
                hdr="(EngineCore_DP0 pid=7) INFO 05-10 16:00:15 [shm_broadcast.py:466] ")
    assert boot.failures == []


@pytest.mark.parametrize("prefix", ["409", "410"])
def test_a_timeout_whose_exception_line_is_cut_is_not_guessed(prefix):
    boot = boot_of(prefix)
    assert [(f.kind, f.figures) for f in boot.failures] == [("exception", {})]


# -- engine_init_failed ----------------------------------------------------------------------

def test_a_workers_failure_to_start_is_engine_init_failed_with_its_rank():
    boot = text("WorkerProc failed to start.", hdr="(VllmWorker rank=1 pid=9) ERROR 05-10 16:00:15 [multiproc_executor.py:435] ")
    assert (kinds(boot), boot.outcome) == ([("engine_init_failed", "unknown", 1, 1)], "failed")


# -- killed ----------------------------------------------------------------------------------

def test_the_shells_bare_killed_is_killed_at_how_far_the_boot_had_got():
    boot = boot_of("413")
    assert (kinds(boot), boot.outcome) == ([("killed", "kv_alloc", 17, None)], "failed")


def test_a_worker_dying_with_sigkill_is_killed_with_its_signal():
    boot = text("Worker proc VllmWorker-1 died unexpectedly (exit code: -9), shutting down executor.")
    assert [(f.kind, f.figures) for f in boot.failures] == [("worker_died", {}), ("killed", {"signal": 9})]


# -- exception -------------------------------------------------------------------------------

@pytest.mark.parametrize("prefix,line", [("404", 12), ("406", 12), ("409", 11), ("410", 12), ("416", 11)])
def test_a_start_up_or_engine_traceback_cut_before_its_exception_is_an_exception(prefix, line):
    boot = boot_of(prefix)
    assert (kinds(boot), boot.outcome) == ([("exception", "unknown", line, None)], "failed")
    assert boot.failures[0].figures == {}  # class and message are cut: null, not guessed


def test_a_start_up_that_ends_in_frames_cut_after_their_path_is_an_exception():
    """A paste's storage broke each frame line after its path ('", line N, in f' starts the next
    line, unprefixed): the lines are still the traceback the text ends in."""
    w0 = "(VllmWorker rank=0 pid=11) ERROR 08-11 10:45:36 [multiproc_executor.py:511] "
    w1 = "(VllmWorker rank=1 pid=12) ERROR 08-11 10:45:36 [multiproc_executor.py:511] "
    frame = '  File "/venv/lib/python3.11/site-packages/vllm/distributed/parallel_state.py"'
    (boot,) = parsers.parse_text(w0 + frame + "\n, line 1121, in ensure_model_parallel_initialized\n"
                                 + w1 + frame + "\n, line 257, in __init__\n"
                                 + w0 + "    initialize_model_parallel(tensor_model_parallel_size,\n", year=2026)
    assert (kinds(boot), boot.failures[0].figures, boot.outcome) == ([("exception", "unknown", 1, 0)], {}, "failed")


def test_a_traceback_that_is_not_shown_to_be_vllms_is_not_a_failure():
    boot = boot_of("407")  # torch._dynamo frames under a user's Ray actor, no vLLM line
    assert (boot.failures, boot.outcome) == ([], "incomplete")


def test_an_exception_stated_is_read_with_its_class_and_message():
    boot = text("KeyError: 'model.layers.0.mlp.experts.w13_weight'")
    assert [(f.kind, f.figures) for f in boot.failures] == [
        ("exception", {"exception": "KeyError", "message": "'model.layers.0.mlp.experts.w13_weight'"})]


def test_a_known_wording_on_the_line_names_the_failure_instead_of_exception():
    boot = boot_of("403")  # "ValueError: No available memory for the cache blocks. …"
    assert kinds(boot) == [("no_kv_memory", "kv_alloc", 18, None)]


def test_a_failure_stated_at_a_cut_tracebacks_head_adds_no_exception():
    assert kinds(boot_of("402")) == [("engine_init_failed", "kv_alloc", 14, None)]


# -- oom -------------------------------------------------------------------------------------

def test_vllms_sampler_warm_up_oom_is_oom():
    assert kinds(boot_of("415"))[0] == ("oom", "unknown", 13, 1)


def test_a_cuda_driver_out_of_memory_is_oom():
    boot = text("RuntimeError: CUDA driver error: out of memory")
    assert [f.kind for f in boot.failures] == ["oom"]


# -- the negative KV budget ------------------------------------------------------------------

def test_a_negative_kv_budget_is_read_as_printed_per_rank():
    boot = boot_of("402")
    assert [(f.value, f.rank) for f in boot.facts] == [(round(-3.86 * G), 1), (round(9.90 * G), 0)]


def test_a_negative_kv_budget_alone_is_no_failure():
    boot = boot_of("419")
    assert (boot.summary("available_kv_cache_bytes").value, boot.failures, boot.outcome) == (
        round(-19.92 * G), [], "incomplete")


V0 = "INFO 05-10 16:00:15 worker.py:267] "


def test_a_negative_kv_budget_in_v0s_profiling_breakdown_is_read_as_printed():
    boot = text("model weights take 20.50GiB; non_torch_memory takes 0.20GiB; PyTorch activation peak memory takes "
                "1.60GiB; the rest of the memory reserved for KV Cache is -1.08GiB.", hdr=V0)
    assert {f.name: f.value for f in boot.facts} == {
        "model_weights_bytes": round(20.50 * G), "non_torch_memory_bytes": round(0.20 * G),
        "activation_peak_bytes": round(1.60 * G), "available_kv_cache_bytes": round(-1.08 * G)}


def test_a_negative_kv_cache_size_in_0_6_4s_profiling_results_is_read_as_printed():
    boot = text("Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=20.01GiB "
                "peak_torch_memory=22.40GiB memory_usage_post_profile=22.46Gib non_torch_memory=0.20GiB "
                "kv_cache_size=-1.08GiB gpu_memory_utilization=0.90", hdr=V0)
    assert boot.summary("available_kv_cache_bytes").value == round(-1.08 * G)


def test_a_negative_kv_cache_memory_in_use_in_the_suggestion_is_read_as_printed():
    boot = text("Free memory on device (23.1/23.56 GiB) on startup. Desired GPU memory utilization is (0.9, 21.2 "
                "GiB). Current kv cache memory in use is -0.5 GiB.")
    assert boot.summary("available_kv_cache_bytes").value == round(-0.5 * G)


def test_a_figure_printed_negative_whose_name_cannot_be_is_not_read_as_positive():
    boot = text("Free memory on device (23.1/23.56 GiB) on startup. Desired GPU memory utilization is (0.9, 21.2 "
                "GiB). Actual usage is -17.1 GiB for consumed memory (weights + non-torch), -2.1 GiB for peak "
                "activation, and -0.21 GiB for CUDAGraph memory.")
    names = {f.name for f in boot.facts}
    assert names == {"initial_free_memory_bytes", "total_gpu_memory_bytes", "requested_memory_bytes"}


def test_a_negative_weights_figure_is_not_read_and_the_load_time_beside_it_is():
    boot = text("Model loading took -0.12 GiB and 3.5 seconds")
    assert [(f.name, f.value) for f in boot.facts] == [("model_load_seconds", 3.5)]


def test_a_failure_figure_printed_negative_is_not_read_as_positive():
    boot = text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.74 GiB. GPU 1 has a total capacity "
                "of 23.57 GiB of which 605.88 MiB is free. Of the allocated memory 20.21 GiB is allocated by PyTorch, "
                "and -185.98 MiB is reserved by PyTorch but unallocated.")
    (failure,) = boot.failures
    assert "reserved_unallocated_bytes" not in failure.figures
    assert failure.figures["allocated_by_pytorch_bytes"] == round(20.21 * G)


def test_a_negative_kv_need_is_not_read_as_positive():
    boot = text("ValueError: To serve at least one request with the models's max seq len (32768), (-4.00 GiB KV "
                "cache is needed, which is larger than the available KV cache memory (1.50 GiB). Based on the "
                "available memory, the estimated maximum model length is 12288.")
    (failure,) = boot.failures
    assert "needed_bytes" not in failure.figures and failure.figures["available_bytes"] == round(1.5 * G)


# -- the outcome rule ------------------------------------------------------------------------

@pytest.mark.parametrize("prefix,outcome", [("411", "crashed"), ("414", "crashed"), ("418", "crashed")])
def test_a_failure_shown_to_follow_serving_is_a_crash(prefix, outcome):
    boot = boot_of(prefix)
    assert boot.outcome == outcome and all(f.phase == "runtime" for f in boot.failures)


def test_the_fatal_error_dump_of_a_step_shows_the_engine_was_serving():
    """vLLM dumps its config ("Dumping input data for V1 LLM engine (v…) with config: …") when a
    model-execution step raised: a worker death stated before it is a runtime crash."""
    hdr = "(EngineCore pid=23935) ERROR 05-21 04:01:29 [multiproc_executor.py:283] "
    dump = ("(EngineCore pid=23935) ERROR 05-21 04:01:32 [dump_input.py:72] Dumping input data for V1 LLM engine "
            "(v0.21.0) with config: model='/models/GLM-5-FP8', max_seq_len=200000, tensor_parallel_size=8, ")
    (boot,) = parsers.parse_text(hdr + "Worker proc VllmWorker-5 died unexpectedly, shutting down executor.\n"
                                 + dump + "\n", year=2026)
    assert (boot.outcome, kinds(boot), boot.engine_version) == ("crashed", [("worker_died", "runtime", 1, None)], "0.21.0")
    assert {k: v.value for k, v in boot.shape.items()} == {"model": "/models/GLM-5-FP8", "max_model_len": 200000,
                                                           "tensor_parallel_size": 8}


def test_a_failure_of_a_new_kind_after_ready_is_a_crash():
    boot = text("init engine (profile, create kv cache, warmup model) took 12.50 seconds",
                "NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
                hdr="(EngineCore_DP0 pid=7) INFO 05-10 16:00:15 [core.py:1] ")
    assert (boot.outcome, [(f.kind, f.phase) for f in boot.failures]) == ("crashed", [("comm_error", "runtime")])


@pytest.mark.parametrize("prefix", ["015", "042", "203", "222", "223", "404", "406", "416"])
def test_a_start_up_that_ends_in_a_traceback_is_never_incomplete(prefix):
    assert boot_of(prefix).outcome == "failed"


def test_serving_activity_alone_is_ready():
    boot = boot_of("420")  # a request received and answered, then the excerpt is cut
    assert (boot.outcome, boot.request_lines, boot.access_lines, boot.failures) == ("ready", 1, 1, [])


def test_a_requests_exception_the_engine_serves_on_after_is_no_failure():
    stats = ("(APIServer pid=1) INFO 10-14 17:00:48 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
             "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, "
             "Prefix cache hit rate: 0.0%\n")
    err = ("(APIServer pid=1) ERROR 10-14 17:00:49 [serving_chat.py:251] ValueError: This model's maximum context "
           "length is 4096 tokens. However, you requested 5000 tokens.\n")
    (boot,) = parsers.parse_text(stats + err + stats.replace("17:00:48", "17:00:58"), year=2026)
    assert (boot.outcome, boot.failures) == ("ready", [])


def test_an_exception_that_ends_the_served_engine_is_a_crash():
    stats = ("(APIServer pid=1) INFO 10-14 17:00:48 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
             "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, "
             "Prefix cache hit rate: 0.0%\n")
    err = "(EngineCore_DP0 pid=7) ERROR 10-14 17:00:49 [core.py:1] AssertionError: block table overflow\n"
    (boot,) = parsers.parse_text(stats + err, year=2026)
    assert (boot.outcome, [(f.kind, f.phase, f.figures["exception"]) for f in boot.failures]) == (
        "crashed", [("exception", "runtime", "AssertionError")])


def test_v0s_error_executing_method_is_an_exception():
    boot = text("Error executing method determine_num_available_blocks. This might cause deadlock in distributed "
                "execution.", hdr="(RayWorkerWrapper pid=5) ERROR 05-10 16:00:15 worker_base.py:464] ")
    assert [(f.kind, f.phase) for f in boot.failures] == [("exception", "unknown")]
