"""The seeds' workflow against the real vLLM (the lab: PyPI's CPU build, ``lab/``), end to end.

An fp8 control and a bf16 candidate of the tiny model are booted one after the other, each
followed by ``ledger watch`` as it runs and serves; ``diff`` and ``note`` show the cost of a
token going 256 -> 512 B from the printed pool; a ladder of ``--max-model-len`` on the wide model
meets its first KV-too-small rung and ``sweep`` names it; ``check --against`` holds the
candidate's decode against the control's; then the candidate's engine core is SIGKILLed under
load, the watch alerts (its latency measured) and ``check`` exits 1.  The ``kv formula`` is
``ok`` on every boot that came up.

Runs where vLLM is installed (``pip install -e '.[live]'``, or ``LEDGER_LAB_PYTHON`` naming a
Python that has it; ``.ci/run`` does the latter); elsewhere it skips and says why.  One server
at a time: the whole module is about six minutes on two cores.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lab import scenarios
from lab.record import make_model
from lab.server import Server, base_env, vllm_python, vllm_version

# one workflow, one server at a time: with xdist, run it with --dist loadgroup to keep it on one worker
pytestmark = [pytest.mark.live, pytest.mark.heavy, pytest.mark.xdist_group("live-lab")]

VERSION = vllm_version()
if VERSION is None:
    pytest.skip(f"no vLLM in {vllm_python()} (pip install -e '.[live]', or set LEDGER_LAB_PYTHON): "
                "the recorded logs of fixtures/live are tested without it", allow_module_level=True)

BASE = ["--max-num-seqs", "4", "--max-model-len", "4096"]


def ledger(db: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ledger", *args, "--db", str(db)], capture_output=True, text=True,
                          timeout=timeout)


class Watch:
    """``ledger watch FILE`` with its stdout read line by line, each line's arrival timed."""

    def __init__(self, log: Path, db: Path, label: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "ledger", "watch", str(log), "--db", str(db),
                                      "--label", label, "--format", "jsonl"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[tuple[float, dict]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.put((time.monotonic(), json.loads(line)))
            except ValueError:
                continue

    def alert(self, kind: str, timeout: float) -> tuple[float, dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                at, alert = self.lines.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                break
            if alert.get("kind") == kind:
                return at, alert
        raise AssertionError(f"no {kind} alert within {timeout} s")

    def stop(self) -> str:
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


def _stored_stats(db: Path, label: str) -> int:
    out = ledger(db, "sql", "select count(*) as n from runtime_sample s join boot b on b.id = s.boot_id "
                 f"join deploy d on d.id = b.deploy_id where d.label = '{label}' and s.kind = 'engine_stats' "
                 "and s.running_reqs > 0", "--format", "json")
    return int(json.loads(out.stdout)[0]["n"]) if out.returncode == 0 else 0


def _wait_for_stats(db: Path, label: str, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while _stored_stats(db, label) < n:
        assert time.monotonic() < deadline, f"the watch stored fewer than {n} busy stats intervals of {label}"
        time.sleep(1)


def _served_under_watch(servers: list[Server], model: Path, db: Path, label: str,
                        args: list[str]) -> tuple[Server, Watch]:
    """A server started on ``model`` with ``args`` and followed by ``ledger watch --label``, up and
    served for 32 s, until the watch has stored two busy stats intervals."""
    server = Server(model, db.parent / f"{label}.log", args)
    servers.append(server)
    watch = Watch(server.log, db, label)
    server.start()
    server.wait_ready()
    scenarios.serve_for(scenarios.Run(server), 32)
    _wait_for_stats(db, label, 2)
    return server, watch


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The whole workflow, once: what each step printed and measured."""
    work = tmp_path_factory.mktemp("lab")
    db = work / "ledger.db"
    tiny = make_model(work, "tiny", vllm_python())
    wide = make_model(work, "wide", vllm_python())
    out: dict = {"db": db}
    servers: list[Server] = []
    try:
        # the control: fp8 KV, served, then stopped
        control, watch = _served_under_watch(servers, tiny, db, "fp8-control", [*BASE, "--kv-cache-dtype", "fp8"])
        control.stop()
        watch.stop()
        # the candidate: bf16, served; decode held against the control; then its engine core killed
        candidate, watch = _served_under_watch(servers, tiny, db, "bf16-candidate", BASE)
        out["check_against"] = ledger(db, "check", "bf16-candidate", "--against", "fp8-control",
                                      "--max-decode-drop", "50%", "--format", "json")
        out["check_before_kill"] = ledger(db, "check", "bf16-candidate")
        killed: list[float] = []

        def kill() -> int:
            pid = candidate.kill_engine_core()
            killed.append(time.monotonic())
            return pid

        scenarios.wound_under_load(scenarios.Run(candidate), kill)
        alerted, out["crash_alert"] = watch.alert("crashed", timeout=60)
        out["alert_latency_s"] = alerted - killed[0]
        candidate.wait_exit()
        out["exit_status"] = candidate.exits[-1]
        out["watch_stderr"] = watch.stop()
        # the ladder: the wide model's window up to the first rung its 1 GiB pool cannot hold
        env = base_env()
        env["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = "1"
        ladder = Server(wide, work / "ladder.log", ["--max-num-seqs", "2", "--max-model-len", "32768"], env=env)
        servers.append(ladder)
        ladder.start()
        ladder.wait_ready()
        ladder.stop()
        ladder.args = ["--max-num-seqs", "2", "--max-model-len", "73728"]
        ladder.start()
        out["ladder_failed_status"] = ladder.wait_exit()
        out["ladder_ingest"] = ledger(db, "ingest", str(ladder.log), "--label", "wide-ladder")
    finally:
        for s in servers:
            s.kill_all()
    return out


def test_the_watch_stored_one_boot_per_start(lab):
    rows = json.loads(ledger(lab["db"], "history", "--format", "json").stdout)
    by_deploy: dict[str, list[str]] = {}
    for r in rows:
        by_deploy.setdefault(r["deploy"], []).append(r["outcome"])
    assert by_deploy == {"fp8-control": ["ready"], "bf16-candidate": ["crashed"], "wide-ladder": ["failed", "ready"]}


def test_diff_shows_the_token_cost_doubling_from_the_printed_pool(lab):
    d = json.loads(ledger(lab["db"], "diff", "fp8-control", "bf16-candidate", "--format", "json").stdout)
    cost = next(r for r in d["derived"] if r["key"] == "bytes_per_token")
    assert (cost["a"], cost["b"]) == (256, 512)
    pool = next(r for r in d["derived"] if r["key"] == "kv_budget_bytes")
    assert pool["a"] == pool["b"] == 2**30


def test_note_says_256_to_512_bytes_a_token(lab):
    note = ledger(lab["db"], "note", "bf16-candidate", "--against", "fp8-control")
    assert note.returncode == 0, note.stderr
    # the pool is printed to the hundredth of a GiB: ± 1.28 and ± 2.56 B/token
    assert re.search(r"256\.00 B/token ± 1\.28 -> 512\.00 B/token ± 2\.56 per rank", note.stdout), note.stdout
    assert "available_kv_cache_bytes" in note.stdout  # the printed pool, not an argument


def test_sweep_names_the_first_kv_too_small_rung(lab):
    assert lab["ladder_failed_status"] != 0
    assert lab["ladder_ingest"].returncode == 0, lab["ladder_ingest"].stderr
    sweep = ledger(lab["db"], "sweep", "max_model_len", "--deploy", "wide-ladder")
    assert sweep.returncode == 0, sweep.stderr
    assert "largest passing 32,768" in sweep.stdout
    assert "smallest failing 73,728 (kv_too_small" in sweep.stdout


def test_check_against_the_control_gives_a_decode_verdict(lab):
    rows = json.loads(lab["check_against"].stdout)
    decode = [c for d in rows for c in d["checks"] if c["what"] == "decode vs control"]
    # measured on both sides, with the noise it measured: a verdict, never 'insufficient'
    assert len(decode) == 1 and decode[0]["verdict"] in ("ok", "slower"), decode
    assert "busy intervals" in decode[0]["detail"] and "noise" in decode[0]["detail"], decode


def test_kv_formula_is_ok_on_every_boot_that_came_up(lab):
    rows = json.loads(ledger(lab["db"], "history", "--format", "json").stdout)
    came_up = [r for r in rows if r["outcome"] in ("ready", "crashed")]
    assert len(came_up) == 3
    assert {r["formula_check"] for r in came_up} == {"ok"}


def test_check_passes_before_the_kill_and_fails_after(lab):
    assert lab["check_before_kill"].returncode == 0, lab["check_before_kill"].stdout
    after = ledger(lab["db"], "check", "bf16-candidate")
    assert after.returncode == 1, after.stdout
    assert "crashed" in after.stdout


def test_the_killed_engine_is_a_crash_the_api_server_exits_0_from(lab):
    assert lab["exit_status"] == 0  # the seeds' lesson: a supervisor's on-failure never fires
    assert lab["crash_alert"]["figures"]["failures"][0]["kind"] == "engine_dead"


def test_the_watch_alerts_the_kill_within_two_seconds(lab):
    print(f"watch alert latency after SIGKILL of the engine core: {lab['alert_latency_s']:.2f} s")
    assert lab["alert_latency_s"] < 2.0
