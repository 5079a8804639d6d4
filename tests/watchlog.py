"""Helpers of the ``ledger watch`` tests: a watch run as a real process, a writer that appends a
log at a set rate, and vLLM lines in the exact format vLLM 0.20 prints them (the format of
``bench/make_runtime_log.py``, whose boot they reuse)."""

from __future__ import annotations

import datetime as dt
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from make_runtime_log import BOOT  # noqa: E402  (the boot of a vLLM 0.20 runtime log)

T0 = dt.datetime(2026, 10, 1, 9, 0, 0)

# A watch tells nothing of what the source held when the first watch of it began (the backlog),
# unless asked with --since: the tests that write a log and then start a watch, or append while
# it starts (it takes a second), ask for all of it; the backlog's own tests do not
TOLD_FROM_START = ("--since", "2000-01-01")


def _md(t: dt.datetime) -> tuple[str, str]:
    return t.strftime("%m-%d"), t.strftime("%H:%M:%S")


def boot(t: dt.datetime, api_pid: int = 1, core_pid: int = 43) -> str:
    """A vLLM 0.20 start-up that ends ready (``Application startup complete.``)."""
    md, hms = _md(t)
    return BOOT.format(md=md, t=hms).replace("(APIServer pid=1)", f"(APIServer pid={api_pid})") \
        .replace("(EngineCore_DP0 pid=43)", f"(EngineCore_DP0 pid={core_pid})")


def failed_boot(t: dt.datetime, api_pid: int, core_pid: int) -> str:
    """A start-up that runs out of memory after the weights loaded (oom@profile)."""
    head = "".join(boot(t, api_pid, core_pid).splitlines(keepends=True)[:4])
    md, hms = _md(t)
    return head + (
        f"(EngineCore_DP0 pid={core_pid}) ERROR {md} {hms} [core.py:708] EngineCore failed to start.\n"
        f"(EngineCore_DP0 pid={core_pid}) ERROR {md} {hms} [core.py:708] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free. Including "
        "non-PyTorch memory, this process has 78.13 GiB memory in use. Of the allocated memory 76.02 GiB is allocated "
        "by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated.\n")


def stats(t: dt.datetime, tps: float = 130.0, running: int = 4, kv: float = 40.0, engine: int = 0,
          api_pid: int = 1) -> str:
    md, hms = _md(t)
    return (f"(APIServer pid={api_pid}) INFO {md} {hms} [loggers.py:271] Engine {engine:03d}: Avg prompt throughput: "
            f"900.0 tokens/s, Avg generation throughput: {tps:.1f} tokens/s, Running: {running} reqs, Waiting: 0 reqs, "
            f"GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 20.0%\n")


def crash(t: dt.datetime, api_pid: int = 1, core_pid: int = 43) -> str:
    """A runtime OOM that kills the engine (as make_runtime_log ends)."""
    md, hms = _md(t)
    return (f"(EngineCore_DP0 pid={core_pid}) ERROR {md} {hms} [core.py:1131] EngineCore encountered a fatal error.\n"
            f"(EngineCore_DP0 pid={core_pid}) ERROR {md} {hms} [core.py:1131] torch.OutOfMemoryError: CUDA out of "
            "memory. Tried to allocate 50.00 MiB. GPU 1 has a total capacity of 79.19 GiB of which 0 bytes is free. "
            "Including non-PyTorch memory, this process has 79.13 GiB memory in use. Of the allocated memory 77.02 GiB "
            "is allocated by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated.\n"
            f"(APIServer pid={api_pid}) ERROR {md} {hms} [async_llm.py:699] AsyncLLM output_handler failed.\n"
            f"(APIServer pid={api_pid}) ERROR {md} {hms} [async_llm.py:699] vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause.\n")


def served(t: dt.datetime, intervals: int, **kw: object) -> str:
    """``intervals`` stats lines, 10 s apart, after ``t``."""
    return "".join(stats(t + dt.timedelta(seconds=10 * (i + 1)), **kw) for i in range(intervals))  # type: ignore[arg-type]


class Watch:
    """``ledger watch`` as a process; its stdout lines are collected as they come."""

    def __init__(self, db: str, *args: str, env: dict[str, str] | None = None, stdin: int | None = None):
        self.proc = subprocess.Popen([sys.executable, "-m", "ledger", "watch", "--db", db, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=stdin, text=True,
                                     cwd=ROOT, env={**os.environ, **(env or {})})
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.stderr = ""

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def next_line(self, timeout: float = 20.0) -> str | None:
        try:
            line = self._q.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is not None:
            self.lines.append(line)
        return line

    def wait_line(self, want: Callable[[str], bool], timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        for seen in self.lines:
            if want(seen):
                return seen
        while time.monotonic() < deadline:
            line = self.next_line(max(0.05, deadline - time.monotonic()))
            if line is None:
                if self.proc.poll() is not None:
                    break
                continue
            if want(line):
                return line
        raise AssertionError(f"no such line within {timeout} s; got {self.lines}; stderr: {self._stderr_now()}")

    def alerts(self) -> list[dict]:
        """The --format jsonl alerts printed so far (after ``stop``: all of them)."""
        while self.next_line(0.01) is not None:
            pass
        return [json.loads(x) for x in self.lines if x.startswith("{")]

    def _stderr_now(self) -> str:
        if self.proc.poll() is None:
            return "(running)"
        return self.proc.stderr.read() if self.proc.stderr else ""

    def stop(self, timeout: float = 30.0) -> int:
        """Ctrl-C; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self.stderr = self.proc.stderr.read() if self.proc.stderr else ""
        while self.next_line(1.0) is not None:
            pass
        return self.proc.returncode

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait()


class Writer(threading.Thread):
    """Appends ``text`` to ``path`` a few lines at a time, ``rate`` lines a second (the way a
    server logs: each write a whole line or a few)."""

    def __init__(self, path: Path, text: str, rate: float = 2000.0, burst: int = 5):
        super().__init__(daemon=True)
        self.path, self.lines, self.rate, self.burst = path, text.splitlines(keepends=True), rate, burst
        self.done = threading.Event()

    def run(self) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            for i in range(0, len(self.lines), self.burst):
                f.write("".join(self.lines[i:i + self.burst]))
                f.flush()
                time.sleep(self.burst / self.rate)
        self.done.set()


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def wait_until(check: Callable[[], object], timeout: float = 20.0, what: str = "") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


class QuietHandler(BaseHTTPRequestHandler):
    """A test endpoint's request handler that logs nothing on the test's stderr."""

    def log_message(self, *_args: object) -> None:
        pass


class LocalHTTP:
    """An HTTP server on 127.0.0.1 (a free port) serving ``handler`` on a thread of its own, for
    the webhook tests; ``url`` is its ``path``; ``close`` stops it."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], path: str = "/alerts"):
        self.server = HTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}{path}"
        # shutdown() waits for serve_forever's next look at its flag: every 0.05 s, not its 0.5 s
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
