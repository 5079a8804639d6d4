"""Where ``ledger watch``'s alerts go when the endpoint misbehaves (issue 38, item 7): a webhook
that redirects, one that answers a byte at a time, a URL that is no http(s) URL.  Real watch
processes, webhook servers of this test on 127.0.0.1; every wait bounded."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT
from watchlog import (
    T0,
    TOLD_FROM_START,
    LocalHTTP,
    QuietHandler,
    Watch,
    append,
    boot,
    failed_boot,
    wait_until,
)


class _Redirecting:
    """An endpoint that answers every POST with ``302 Found`` to another path of its own, and
    records every request (method, path, body)."""

    def __init__(self) -> None:
        self.got: list[tuple[str, str, bytes]] = []
        hook = self

        class Handler(QuietHandler):
            def _record(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                hook.got.append((self.command, self.path, self.rfile.read(length) if length else b""))

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self._record()
                self.send_response(302)
                self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                self._record()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()


        self.http = LocalHTTP(Handler)
        self.url = self.http.url

    def close(self) -> None:
        self.http.close()


class _Trickle:
    """An endpoint that reads a request and answers it one byte every ``every`` seconds, for as
    long as the test runs (each connection on a thread of its own, all stopped by ``close``)."""

    def __init__(self, every: float = 0.2) -> None:
        self.every = every
        self.connections = 0
        self.stopped = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/alerts"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + b" " * 10_000
        conn.settimeout(1.0)
        try:
            conn.recv(65536)  # the request (whatever of it came first)
            for i in range(len(answer)):
                if self.stopped.wait(self.every):
                    break
                conn.sendall(answer[i:i + 1])
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.sock.close()


def test_a_webhook_answering_302_is_a_failure_reported_not_a_get_counted_delivered(db, tmp_path):
    """Before: urllib followed the 302 as a GET without the alert's body and the watch took it
    for delivered (nothing on stderr)."""
    hook = _Redirecting()
    try:
        log = tmp_path / "vllm.log"
        log.write_text("")
        w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--webhook", hook.url, "--webhook-backoff", "50ms")
        append(log, failed_boot(T0, 1, 43))
        w.wait_line(lambda x: '"boot_failed"' in x)
        wait_until(lambda: hook.got, timeout=20, what="the POST")
        time.sleep(0.5)  # a GET that followed it would come now
        assert w.stop() == 0
    finally:
        hook.close()
    assert [(m, p) for m, p, _ in hook.got] == [("POST", "/alerts")]  # one try: a redirect is not retried
    assert json.loads(hook.got[0][2])["kind"] == "boot_failed"
    assert f"--webhook {hook.url}: HTTP 302 (a redirect: not followed) (after 1 try)" in w.stderr


def test_a_webhook_answering_a_byte_at_a_time_holds_neither_exec_nor_later_alerts(db, tmp_path):
    """Before: the POST's timeout was per read, a trickle never let it expire, and --exec ran on
    the same thread: the second alert's --exec never ran."""
    hook = _Trickle(every=0.2)
    try:
        log = tmp_path / "vllm.log"
        log.write_text("")
        got = tmp_path / "exec.txt"
        w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--webhook", hook.url, "--webhook-timeout", "1s",
                  "--webhook-backoff", "50ms", "--exec", f'echo "$LEDGER_ALERT_KIND" >> {got}')
        append(log, failed_boot(T0, 1, 43))
        w.wait_line(lambda x: '"boot_failed"' in x)
        started = time.monotonic()
        # the next boot comes up with its capacity contract broken: a second alert
        append(log, boot(T0.replace(minute=5), 2, 44))
        w.wait_line(lambda x: '"boot_verdict"' in x)
        wait_until(lambda: got.exists() and got.read_text().split() == ["boot_failed", "boot_verdict"], timeout=10,
                   what="--exec ran for both alerts while the webhook trickled")
        exec_took = time.monotonic() - started
        # each try of the POST ends at its deadline (1 s): four tries and the back-off, per alert;
        # the watch's exit waits for them (at most 30 s)
        assert w.stop(timeout=60) == 0
    finally:
        hook.close()
    assert exec_took < 5, exec_took
    assert f"--webhook {hook.url}: no answer within 1 s (after 4 tries)" in w.stderr
    assert hook.connections >= 4


@pytest.mark.parametrize("url, said", [
    ("file:///etc/passwd", "expected an http:// or https:// URL, not file:"),
    ("data:,hello", "expected an http:// or https:// URL, not data:"),
    ("ftp://127.0.0.1/x", "expected an http:// or https:// URL, not ftp:"),
    ("localhost/hook", "expected an http:// or https:// URL, not one without a scheme"),
    ("http://[::1/hook", "not a URL (Invalid IPv6 URL)"),
    ("http://127.0.0.1:99999/hook", "not a URL (Port out of range 0-65535)"),
    ("http:///hook", "the URL names no host"),
])
def test_a_webhook_url_that_is_not_http_is_refused_at_start_in_one_line(db, tmp_path, url, said):
    """Before: the watch started and the first alert killed the alert thread (then --exec ran
    for none of the next alerts)."""
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    done = subprocess.run([sys.executable, "-m", "ledger", "watch", "--db", db, str(log), "--webhook", url],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"Error: --webhook: {said}"]
    assert done.stdout == ""
