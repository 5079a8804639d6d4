"""The line model: colour, paste wrappers, process prefixes and vLLM's header come off; the
message is what is left."""

from conftest import REAL

from ledger.parsers.lines import parse_line, rank_of

V1 = "(Worker_TP1 pid=147) INFO 05-14 00:04:17 [gpu_worker.py:460] Available KV cache memory: 15.72 GiB"


def test_v1_line_with_process_prefix():
    line = parse_line(7, V1)
    assert (line.process, line.pid, line.rank) == ("Worker_TP1", 147, 1)
    assert (line.level, line.timestamp, line.source_file) == ("INFO", "05-14 00:04:17", "gpu_worker.py")
    assert line.message == "Available KV cache memory: 15.72 GiB"
    assert line.number == 7


def test_pre_0_8_header_without_brackets():
    line = parse_line(1, "INFO 07-08 20:49:31 api_server.py:206] vLLM API server version 0.5.1")
    assert line.source_file == "api_server.py"
    assert line.message == "vLLM API server version 0.5.1"


def test_raw_ansi_and_caret_notation_colour_are_stripped():
    raw = "\x1b[1;36m(VllmWorkerProcess pid=2716901)\x1b[0;0m \x1b[32mINFO\x1b[0m 09-13 22:24:43 x.py:242] hi"
    caret = "^[[0;36m(EngineCore pid=43)^[[0;0m INFO 09-29 12:34:56 [core.py:1] hi"
    assert parse_line(1, raw).message == "hi"
    assert parse_line(1, raw).process == "VllmWorkerProcess"
    assert parse_line(1, caret).process == "EngineCore"


def test_trailing_carriage_return_and_padding_are_stripped():
    line = parse_line(1, "(EngineCore pid=1) INFO 06-02 00:51:39 [a.py:1] Loading weights took 26.93 seconds      \r\n")
    assert line.message == "Loading weights took 26.93 seconds"


def test_docker_compose_wrapper():
    line = parse_line(1, "qwen3-1  | INFO 04-29 01:09:49 [kv_cache_utils.py:634] GPU KV cache size: 198,784 tokens")
    assert line.message == "GPU KV cache size: 198,784 tokens"


def test_rfc3339_container_timestamp_gives_the_year():
    line = parse_line(1, "2026-03-11T17:57:10.584281362Z (EngineCore_DP0 pid=469) INFO 03-11 17:57:10 [p.py:1] x")
    assert line.year == 2026
    assert line.process == "EngineCore_DP0"


def test_journalctl_wrapper():
    line = parse_line(1, "Sep 28 21:06:20 rig vllm[4230]: (Worker_TP0 pid=4230) INFO 09-28 21:06:20 [g.py:1] hi")
    assert (line.process, line.message, line.year) == ("Worker_TP0", "hi", None)


def test_kubectl_prefix_wrapper():
    line = parse_line(1, "[pod/vllm-7c9f/vllm] INFO 01-28 16:08:46 [gpu_worker.py:358] Available KV cache memory: 18.78 GiB")
    assert line.message == "Available KV cache memory: 18.78 GiB"


def test_markdown_quote_and_list_markers():
    assert parse_line(1, "> (EngineCore_0 pid=114) INFO 08-10 12:14:42 [d.py:1] hi").message == "hi"
    assert parse_line(1, "- INFO 08-10 12:14:42 [d.py:1] hi").message == "hi"


def test_indented_code_block():
    assert parse_line(1, "    INFO 07-17 23:41:28 d.py:56] # GPU blocks: 10039, # CPU blocks: 1310").message == \
        "# GPU blocks: 10039, # CPU blocks: 1310"


def test_torchserve_wrapper():
    raw = ("2024-09-13T22:25:41,496 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - INFO 09-13 22:25:41 "
           "distributed_gpu_executor.py:57] # GPU blocks: 61913, # CPU blocks: 4096")
    line = parse_line(1, raw)
    assert line.year == 2024
    assert line.message == "# GPU blocks: 61913, # CPU blocks: 4096"


def test_ray_prefix_with_ip_and_repeat_suffix():
    raw = ("(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 [worker.py:267] "
           "Memory profiling takes 4.26 seconds [repeated 30x across cluster]")
    line = parse_line(1, raw)
    assert line.process == "RayWorkerWrapper"
    assert line.message == "Memory profiling takes 4.26 seconds"


def test_rank_from_every_worker_prefix_generation():
    cases = {
        "(VllmWorker rank=5 pid=3073) x": 5,
        "(VllmWorker TP1 pid=3) x": 1,
        "(VllmWorker PP0_TP1 pid=3) x": 1,
        "(Worker_TP2_EP2 pid=2709392) x": 2,
        # EP named: its index (issue 12's rule, facts.md "rank"; was the TP index, 3, before it)
        "(Worker_DP0_PP1_TP3_EP0 pid=9) x": 0,
        "(Worker pid=9) x": None,
        "(EngineCore_DP0 pid=9) x": None,
        "(VllmWorkerProcess pid=9) x": None,
    }
    for raw, rank in cases.items():
        assert parse_line(1, raw).rank == rank, raw


def test_vllm_omni_stage_tag_is_stripped():
    raw = "(EngineCore_DP0 pid=181642) [Stage-0] INFO 02-02 18:25:03 [gpu_worker.py:358] Available KV cache memory: 100.43 GiB"
    assert parse_line(1, raw).message == "Available KV cache memory: 100.43 GiB"


def test_header_found_behind_an_unknown_wrapper():
    raw = "myhost | app-7 | (APIServer pid=1) INFO 05-04 01:06:53 [loggers.py:271] Engine 000: hi"
    line = parse_line(1, raw)
    assert (line.process, line.message) == ("APIServer", "Engine 000: hi")


def test_traceback_line_with_only_a_process_prefix():
    line = parse_line(1, "(VllmWorker rank=5 pid=3073)     self.model_runner.load_model()")
    assert line.level is None and line.process == "VllmWorker rank=5"
    assert line.message == "self.model_runner.load_model()"


def test_a_paste_that_lost_the_opening_parenthesis():
    line = parse_line(1, "RayWorkerWrapper pid=1861983) INFO 03-27 10:29:03 [model_runner.py:1442] Capturing cudagraphs")
    assert line.process == "RayWorkerWrapper"
    assert line.message == "Capturing cudagraphs"


def _real_line(prefix: str, number: int) -> str:
    log = next(REAL.glob(f"{prefix}_*.log"))
    return log.read_text(encoding="utf-8").splitlines()[number - 1]


def test_rank_of_a_pipeline_parallel_worker():
    assert rank_of("Worker_PP2") == 2


def test_rank_of_a_data_and_expert_parallel_worker_is_its_ep_index():
    assert rank_of("Worker_DP6_EP6") == 6


def test_rank_of_a_worker_naming_tp_and_ep_is_the_ep_index():
    assert rank_of("Worker_DP0_TP3_EP3") == 3
    assert rank_of("Worker_DP1_TP1_EP3") == 3  # 205: "[EP Rank 3/4]" on that worker's own line


def test_rank_of_a_worker_naming_context_parallel_groups():
    assert rank_of("Worker_PCP1") == 1
    assert rank_of("Worker_DCP3") == 3
    assert rank_of("Worker_PP1_TP2_DCP1") == 1  # DCP is printed inside TP: the innermost named


def test_rank_of_a_data_parallel_worker_without_inner_groups():
    assert rank_of("Worker_DP5") == 5


def test_engine_wide_processes_have_no_rank():
    for name in ("EngineCore", "EngineCore_0", "EngineCore_DP1", "APIServer", "ApiServer_0",
                 "APIServer_DPRank_1", "DPSupervisor", "MainProcess"):
        assert rank_of(name) is None, name


def test_ray_worker_prefix_keeps_its_name_and_has_no_rank():
    line = parse_line(1, "(RayWorkerWrapper pid=233, ip=10.20.1.125) INFO 11-12 11:11:40 [a.py:1] hi")
    assert (line.process, line.pid, line.rank, line.message) == ("RayWorkerWrapper", 233, None, "hi")


def test_nested_prefix_gives_the_innermost_process_and_its_rank():
    line = parse_line(11, _real_line("205", 11))
    assert (line.process, line.pid, line.rank) == ("Worker_DP1_TP1_EP3", 113015, 3)
    assert (line.level, line.timestamp) == ("INFO", "11-06 16:15:01")
    assert line.message.startswith("[EP Rank 3/4] Expert parallelism is enabled.")


def test_nested_prefix_on_a_line_without_header():
    line = parse_line(35, _real_line("208", 35))
    assert (line.process, line.pid, line.rank) == ("RayWorkerWrapper", 233, None)
    assert line.message.startswith("*** SIGSEGV received at time=1762945937 on cpu 6 ***")


def test_quote_bars_are_a_wrapper():
    line = parse_line(12, _real_line("204", 12))
    assert line.message == "Available KV cache memory: 22.5 GiB"
    assert (line.process, line.rank, line.level) == (None, None, None)


def test_a_lone_quote_bar_is_an_empty_line():
    assert parse_line(11, _real_line("204", 11)).message == ""


def test_ci_timestamp_wrapper_gives_the_year_and_keeps_the_rank():
    line = parse_line(11, _real_line("223", 11))
    assert (line.year, line.process, line.rank, line.level) == (2025, "Worker_TP0", 0, "ERROR")


def test_ci_tag_wrapper_in_front_of_a_prefixed_record():
    line = parse_line(1, "[vllm-server] (Worker_PP1 pid=5) INFO 06-01 10:00:00 [gpu_worker.py:1] "
                         "Available KV cache memory: 3.00 GiB")
    assert (line.process, line.rank) == ("Worker_PP1", 1)
    assert line.message == "Available KV cache memory: 3.00 GiB"


def test_failure_line_keeps_its_rank_behind_a_ci_tag():
    line = parse_line(1, "[vllm] (Worker_DP1_EP3 pid=5) torch.OutOfMemoryError: CUDA out of memory. "
                         "Tried to allocate 2.00 GiB.")
    assert (line.process, line.pid, line.rank) == ("Worker_DP1_EP3", 5, 3)
    assert line.message.startswith("torch.OutOfMemoryError: CUDA out of memory.")


def test_failure_line_keeps_its_rank_behind_compose_and_kubectl_wrappers():
    compose = parse_line(1, "vllm-1  | (Worker_DP6_EP6 pid=9) torch.OutOfMemoryError: CUDA out of memory.")
    kubectl = parse_line(1, "[pod/vllm-0/vllm] (Worker_PP2 pid=9) torch.OutOfMemoryError: CUDA out of memory.")
    assert (compose.process, compose.rank) == ("Worker_DP6_EP6", 6)
    assert (kubectl.process, kubectl.rank) == ("Worker_PP2", 2)


def test_failure_line_keeps_its_rank_behind_an_unknown_wrapper():
    line = parse_line(1, "node-3 stderr: (Worker_DP0_TP3_EP3 pid=9) torch.OutOfMemoryError: CUDA out of memory.")
    assert (line.process, line.rank) == ("Worker_DP0_TP3_EP3", 3)
    assert line.message == "torch.OutOfMemoryError: CUDA out of memory."


def test_a_process_named_inside_a_message_is_not_a_prefix():
    line = parse_line(1, "ValueError: worker(x pid=3) is gone")
    assert line.process is None
    assert line.message == "ValueError: worker(x pid=3) is gone"
