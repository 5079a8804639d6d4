"""The scenarios the lab records: each one whole log of the real server, made by starting,
driving, stopping or wounding it, and what the lab did to it, start by start.

A scenario's ``run`` gets a ``Run`` (the server, and the ``Start`` list it fills in): for each
start it says how that start must be read — its outcome and how it ended (facts.md, "Boot
outcome" and "How a boot ended"), the failure kinds it must carry — because the lab made it so,
not because ``ledger`` says so.  The figures (KV tokens, the pool, the stats lines) are found in
the log's text afterwards by ``record``'s own patterns.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import drive
from .server import LabError, Server


@dataclass
class Start:
    """What one start of the server was made to do."""

    outcome: str  # ready | failed | crashed
    ended: str  # stopped | crashed | failed | running
    failures: list[str] = field(default_factory=list)  # failure kinds it must carry (others may come too)
    args: list[str] = field(default_factory=list)  # the arguments after --model
    exit_status: int | None = None
    note: str = ""


@dataclass
class Run:
    server: Server
    starts: list[Start] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def begin(self, args: list[str] | None = None) -> None:
        if args is not None:
            self.server.args = args
        self.server.start()

    def record(self, outcome: str, ended: str, failures: list[str] | None = None, note: str = "") -> None:
        self.starts.append(Start(outcome, ended, failures or [], list(self.server.args),
                                 self.server.exits[-1], note))


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str  # one line: what the log shows
    model: str  # a lab.model geometry
    run: Callable[[Run], None]
    env: dict[str, str] = field(default_factory=dict)
    kv_space_gib: int = 1


BASE = ["--max-num-seqs", "4", "--max-model-len", "4096"]


def serve_for(run: Run, seconds: float, concurrency: int = 4, max_tokens: int = 128, prompt_words: int = 64) -> None:
    """Traffic for at least ``seconds`` (vLLM logs its stats every 10 s while it serves)."""
    deadline = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < deadline and rounds < 50:
        result = drive.load(run.server.url, concurrency, concurrency, prompt_words, max_tokens)
        if result.failed:
            raise LabError(f"requests failed while serving: {result.reason}\n{run.server.tail()}")
        rounds += 1


def wound_under_load(run: Run, wound: Callable[[], int], max_tokens: int = 2000) -> drive.Load:
    """Long requests in flight, then ``wound``; the load's result once every request ended."""
    result: list[drive.Load] = []
    t = threading.Thread(target=lambda: result.append(
        drive.load(run.server.url, 4, 4, 64, max_tokens, timeout=120)), daemon=True)
    t.start()
    time.sleep(4)  # the requests are decoding
    wound()
    t.join(timeout=150)
    return result[0] if result else drive.Load(failed=4, reason="still running")


def ready_served_sigterm(run: Run) -> None:
    run.begin(BASE)
    run.server.wait_ready()
    serve_for(run, 12)
    drive.metrics(run.server.url)
    time.sleep(11)  # the last stats line, after the traffic
    run.server.stop()
    run.record("ready", "stopped")


def sigterm_in_flight(run: Run) -> None:
    run.begin(BASE)
    run.server.wait_ready()
    serve_for(run, 11)
    load = wound_under_load(run, lambda: run.server.proc.send_signal(15) or 0)  # type: ignore[union-attr]
    run.server.wait_exit()
    run.record("ready", "stopped", note=f"SIGTERM with 4 requests decoding ({load.failed} of them cut off)")


def engine_core_killed(run: Run) -> None:
    run.begin(BASE)
    run.server.wait_ready()
    serve_for(run, 11)
    wound_under_load(run, run.server.kill_engine_core)
    run.server.wait_exit()
    run.record("crashed", "crashed", ["engine_dead"], note="SIGKILL of the engine core with 4 requests decoding")


def worker_killed(run: Run) -> None:
    run.begin(BASE)
    run.server.wait_ready()
    serve_for(run, 11)
    wound_under_load(run, run.server.kill_worker)
    try:
        run.server.wait_exit(timeout=90)
    except LabError:
        run.notes.append("the server did not exit after the worker's death within 90 s: the lab killed it")
    run.record("crashed", "crashed", note="SIGKILL of the model worker with 4 requests decoding")


def kv_too_small(run: Run) -> None:
    run.begin(["--max-num-seqs", "4", "--max-model-len", "4000000"])
    run.server.wait_exit()
    run.record("failed", "failed", ["kv_too_small"], note="a window of 4,000,000 tokens on a 1 GiB pool")


def config_error(run: Run) -> None:
    run.begin(["--max-num-seqs", "4", "--max-model-len", "100000"])
    run.server.wait_exit()
    run.record("failed", "failed", ["config_error"],
               note="--max-model-len above max_position_embeddings (8192) without VLLM_ALLOW_LONG_MAX_MODEL_LEN")


def kv_dtype(dtype: str) -> Callable[[Run], None]:
    def go(run: Run) -> None:
        run.begin([*BASE, "--kv-cache-dtype", dtype])
        run.server.wait_ready()
        serve_for(run, 11)
        run.server.stop()
        run.record("ready", "stopped")
    return go


def ignored_argument(run: Run) -> None:
    run.begin([*BASE, "--kv-cache-memory-bytes", "268435456"])
    run.server.wait_ready()
    run.server.stop()
    run.record("ready", "stopped",
               note="--kv-cache-memory-bytes 268435456 (256 MiB) asked; the CPU worker sizes the pool from VLLM_CPU_KVCACHE_SPACE (1 GiB)")


def ladder(knob: str, rungs: list[int], fixed: list[str], fails_from: int) -> Callable[[Run], None]:
    """One start per rung, appended to one log, as a ladder script run in a loop writes it; a
    rung at or past ``fails_from`` fails its start-up."""
    def go(run: Run) -> None:
        for rung in rungs:
            run.begin([*fixed, f"--{knob.replace('_', '-')}", str(rung)])
            if rung >= fails_from:
                run.server.wait_exit()
                run.record("failed", "failed", note=f"{knob} {rung}")
            else:
                run.server.wait_ready()
                run.server.stop()
                run.record("ready", "stopped", note=f"{knob} {rung}")
    return go


def restart_loop(run: Run) -> None:
    """A supervisor's Restart=always: the engine core dies under load twice, the API server exits
    0 each time and is started again with the same command; the third start is stopped."""
    for _ in range(2):
        run.begin(BASE)
        run.server.wait_ready()
        wound_under_load(run, run.server.kill_engine_core)
        run.server.wait_exit()
        run.record("crashed", "crashed", ["engine_dead"], note="engine core SIGKILLed under load")
    run.begin(BASE)
    run.server.wait_ready()
    run.server.stop()
    run.record("ready", "stopped")


def ngram_spec_decode(run: Run) -> None:
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 2}
    run.begin([*BASE, "--speculative-config", json.dumps(spec)])
    run.server.wait_ready()
    serve_for(run, 22)
    time.sleep(11)
    run.server.stop()
    run.record("ready", "stopped")


def plain(args: list[str], serve: bool = True) -> Callable[[Run], None]:
    def go(run: Run) -> None:
        run.begin(args)
        run.server.wait_ready()
        if serve:
            serve_for(run, 11)
        run.server.stop()
        run.record("ready", "stopped")
    return go


WIDE = ["--max-num-seqs", "2"]
LONG = {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}

SCENARIOS: list[Scenario] = [
    Scenario("ready-served-sigterm", "a boot that serves 4 streams, then a requested stop (SIGTERM)", "tiny",
             ready_served_sigterm),
    Scenario("sigterm-in-flight", "SIGTERM with requests decoding: the stop races the output handler", "tiny",
             sigterm_in_flight),
    Scenario("engine-core-killed", "the engine core SIGKILLed under load; the API server exits 0", "tiny",
             engine_core_killed),
    Scenario("worker-killed", "the model worker SIGKILLed under load", "tiny", worker_killed),
    Scenario("kv-too-small", "a 4,000,000-token window that a 1 GiB pool cannot hold", "tiny", kv_too_small, LONG),
    Scenario("config-error", "a window longer than the model's without the override: a config error", "tiny",
             config_error),
    Scenario("bf16-kv", "the default KV dtype (bf16): 512 B a token", "tiny", kv_dtype("auto")),
    Scenario("fp8-kv", "--kv-cache-dtype fp8: 256 B a token, twice the tokens", "tiny", kv_dtype("fp8")),
    Scenario("ignored-argument", "--kv-cache-memory-bytes printed among the arguments and ignored", "tiny",
             ignored_argument),
    Scenario("max-model-len-ladder", "the wide model, --max-model-len 16k to 72k: the frontier at 64k",
             "wide", ladder("max_model_len", [16384, 32768, 49152, 65536, 73728], WIDE, 65536), LONG),
    Scenario("max-num-seqs-ladder", "--max-num-seqs 4 to 512 then a rung past max_num_batched_tokens",
             "tiny", ladder("max_num_seqs", [4, 64, 512, 8192], ["--max-model-len", "4096"], 8192)),
    Scenario("restart-loop", "three starts appended to one log: two engine deaths, then a stop", "tiny",
             restart_loop),
    Scenario("ngram-spec-decode", "n-gram speculative decoding under load: SpecDecoding metrics", "tiny",
             ngram_spec_decode),
    Scenario("enforce-eager", "--enforce-eager: no compilation", "tiny", plain([*BASE, "--enforce-eager"])),
    Scenario("prefix-caching-off", "--no-enable-prefix-caching", "tiny", plain([*BASE, "--no-enable-prefix-caching"])),
    Scenario("wide-model", "a second geometry: 8 layers, 8 KV heads of 64 (16,384 B a token)", "wide",
             plain(["--max-num-seqs", "2", "--max-model-len", "8192"])),
    Scenario("gqa-model", "a third geometry: 4 layers, grouped-query attention 6:2, head 64 (2,048 B a token)",
             "gqa", plain(["--max-num-seqs", "4", "--max-model-len", "8192"])),
]

BY_NAME = {s.name: s for s in SCENARIOS}


def model_dir(root: Path, geometry: str) -> Path:
    return root / "models" / geometry
