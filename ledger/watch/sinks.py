"""Where alerts go besides standard output: ``--exec CMD`` (run with the alert's JSON on its
standard input and as ``LEDGER_ALERT_*`` variables) and ``--webhook URL`` (the alert POSTed,
retried with back-off a bounded number of times; a ``user:password@`` in the URL is sent as a
Basic ``Authorization`` header, to the URL without it).

Each sink has a queue and a thread of its own, so a slow or broken one holds up neither the
reading nor the other sink (a webhook that answers a byte at a time does not keep ``--exec``
waiting).  Every delivery is bounded: a command runs at most ``EXEC_TIMEOUT_S``, each try of a
POST at most ``timeout`` seconds in all — connecting, sending and reading the answer, however
slowly the server trickles it (the socket is shut at the deadline) — and a redirect (3xx) is
not followed: it is a failure, reported, not a POST turned into a GET that drops the alert.  A
sink that fails is reported (``on_note``) and the watch goes on; nothing an alert or a URL can
do ends a sink's thread.  ``check_webhook_url`` refuses, before the watch starts, a URL that is
not ``http://`` or ``https://`` with a host.  ``close`` waits a bounded time for what is queued.
``on_done(alert)`` hears of each alert every sink has finished with (delivered, or given up
on): the watch marks it delivered in the ledger then.
"""

from __future__ import annotations

import http.client
import os
import queue
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ledger.render.watch import alert_env, alert_json, webhook_request

from ..errors import LedgerError
from ..render import dumps

EXEC_TIMEOUT_S = 30.0
WEBHOOK_TIMEOUT_S = 10.0  # one try of a POST, all of it (--webhook-timeout)
WEBHOOK_TRIES = 4  # one try and three retries: after 1 s, 2 s and 4 s
WEBHOOK_BACKOFF_S = 1.0  # the first retry's wait (--webhook-backoff), doubled before each next one
CLOSE_WAIT_S = 30.0  # at exit, how long the alerts still queued may take


@dataclass
class SinkFailure:
    """An alert a sink could not deliver (words: ``ledger.render.watch.note_text``)."""

    sink: str  # "--exec" or "--webhook"
    target: str  # the command or the URL
    reason: str  # "exit 3: <its last line of stderr>", "HTTP 500", "timed out", …
    tries: int = 1


def webhook_target(url: str) -> tuple[str, dict[str, str]]:
    """The URL to POST to and the headers its userinfo stands for: ``http://user:pw@host/x`` is
    ``http://host/x`` with ``Authorization: Basic base64(user:pw)`` (percent-escapes undone, as
    curl does); a URL without userinfo is itself, with no header."""
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, {}
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=host)), {"Authorization": f"Basic {token}"}


def check_webhook_url(url: str) -> str:
    """``url`` if it is an ``http://`` or ``https://`` URL with a host (and a port, if any, that is
    a number); else one ``LedgerError`` that does not repeat the URL (it may hold a secret)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # raises on a port that is not a number or past 65535
    except ValueError as exc:
        raise LedgerError(f"--webhook: not a URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        scheme = f"{parts.scheme}:" if parts.scheme else "one without a scheme"
        raise LedgerError(f"--webhook: expected an http:// or https:// URL, not {scheme}")
    if not parts.hostname:
        raise LedgerError("--webhook: the URL names no host")
    if any(c in url for c in " \t\r\n") or (port is not None and port == 0):
        raise LedgerError("--webhook: not a URL (a space, a line break or port 0 in it)")
    return url


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is the answer, not a new request: urllib would follow a 302 to a POST as a GET
    without the alert and report success."""

    def redirect_request(self, *_args: Any, **_kw: Any) -> None:
        return None


class _Deadline:
    """The sockets of one try, shut when its deadline passes (a server that answers a byte at a
    time never lets a per-read timeout expire)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self._timer.cancel()

    def add(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._socks.append(sock)
            if self.expired:
                self._shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # an SSL socket's own shutdown would unwrap it
        except OSError:
            pass


_local = threading.local()  # the deadline of the try being made on this thread


def _connected(conn: http.client.HTTPConnection) -> None:
    deadline = getattr(_local, "deadline", None)
    if deadline is not None:
        deadline.add(conn.sock)


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _connected(self)


class _HTTPSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _connected(self)


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: Any) -> Any:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: Any) -> Any:
        return self.do_open(_HTTPSConnection, req)


_OPENER = urllib.request.build_opener(_NoRedirect, _HTTPHandler, _HTTPSHandler)


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """One POST, done within ``timeout`` seconds in all: (the HTTP status, "") or (None, why it
    failed).  A redirect is returned as its status, not followed."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with _Deadline(timeout) as deadline:
        _local.deadline = deadline
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                response.read(65536)  # the answer's start; the rest is not waited for
                return response.status, ""
        except urllib.error.HTTPError as exc:
            exc.close()
            return exc.code, ""
        except Exception as exc:  # noqa: BLE001 (whatever the URL or the server did: a failed try)
            if deadline.expired:
                return None, f"no answer within {timeout:g} s"
            reason = getattr(exc, "reason", None) or exc
            return None, str(reason) or type(exc).__name__
        finally:
            _local.deadline = None


class _Sink(threading.Thread):
    """One sink's queue and thread: ``deliver(alert)`` for each alert, one after another."""

    def __init__(self, name: str, deliver: Callable[[Any], None], done: Callable[[Any], None]):
        super().__init__(name=f"ledger-watch-{name}", daemon=True)
        self.deliver, self.done = deliver, done
        self.queue: queue.Queue[Any] = queue.Queue()

    def run(self) -> None:
        while True:
            alert = self.queue.get()
            if alert is None:
                return
            try:
                self.deliver(alert)
            except Exception:  # noqa: BLE001,S110 (never the end of the thread; deliver reports its failures)
                pass
            finally:
                self.done(alert)


class Sinks:
    """``--exec`` and ``--webhook``, fed alerts by ``send``."""

    def __init__(self, exec_cmd: str | None, webhook: str | None, webhook_format: str = "json",
                 on_note: Callable[[SinkFailure], None] | None = None, backoff: float = WEBHOOK_BACKOFF_S,
                 timeout: float = WEBHOOK_TIMEOUT_S, on_done: Callable[[Any], None] | None = None):
        if webhook is not None:
            check_webhook_url(webhook)
        self.exec_cmd, self.webhook, self.webhook_format = exec_cmd, webhook, webhook_format
        self.on_note = on_note or (lambda _text: None)
        self.on_done = on_done or (lambda _alert: None)
        self.backoff, self.timeout = backoff, timeout
        self.failures = 0
        self._lock = threading.Lock()
        self._left: dict[int, int] = {}  # id(alert) -> sinks still to finish with it
        self._sinks: list[_Sink] = []
        if exec_cmd:
            self._sinks.append(_Sink("exec", self._exec, self._finished))
        if webhook:
            self._sinks.append(_Sink("webhook", self._post, self._finished))
        for sink in self._sinks:
            sink.start()

    def send(self, alert: Any) -> None:
        if not self._sinks:
            self.on_done(alert)
            return
        with self._lock:
            self._left[id(alert)] = len(self._sinks)
        for sink in self._sinks:
            sink.queue.put(alert)

    def _finished(self, alert: Any) -> None:
        with self._lock:
            left = self._left.get(id(alert), 1) - 1
            if left > 0:
                self._left[id(alert)] = left
                return
            self._left.pop(id(alert), None)
        try:
            self.on_done(alert)
        except Exception:  # noqa: BLE001,S110 (a ledger lost meanwhile: the alert stays pending there)
            pass

    def _exec(self, alert: Any) -> None:
        assert self.exec_cmd is not None
        env = {**os.environ, **alert_env(alert)}
        try:
            done = subprocess.run(self.exec_cmd, shell=True, input=dumps(alert_json(alert)).encode("utf-8"),
                                  env=env, capture_output=True, timeout=EXEC_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            self._failed(SinkFailure("--exec", self.exec_cmd, f"still running after {EXEC_TIMEOUT_S:g} s; stopped"))
            return
        except OSError as exc:
            self._failed(SinkFailure("--exec", self.exec_cmd, f"cannot be run ({exc.strerror or exc})"))
            return
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
            self._failed(SinkFailure("--exec", self.exec_cmd,
                                     f"exit {done.returncode}" + (f": {err[-1][:200]}" if err else "")))

    def _post(self, alert: Any) -> None:
        assert self.webhook is not None
        body, headers = webhook_request(alert, self.webhook_format)
        url, auth = webhook_target(self.webhook)  # user:password@ as a Basic Authorization header
        last = ""
        tries = 0
        for attempt in range(WEBHOOK_TRIES):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            tries += 1
            status, why = post(url, body, {**headers, **auth}, self.timeout)
            if status is not None and 200 <= status < 300:
                return
            if status is None:
                last = why
                continue
            last = f"HTTP {status}"
            if 300 <= status < 400:
                last += " (a redirect: not followed)"
                break
            if 400 <= status < 500 and status not in (408, 429):
                break  # the endpoint refuses this request: trying again will not help
        self._failed(SinkFailure("--webhook", self.webhook, last, tries))

    def _failed(self, failure: SinkFailure) -> None:
        with self._lock:
            self.failures += 1
        self.on_note(failure)

    def close(self, wait: float = CLOSE_WAIT_S) -> None:
        """Deliver what is queued (at most ``wait`` seconds in all), then stop."""
        deadline = time.monotonic() + wait
        for sink in self._sinks:
            sink.queue.put(None)
        for sink in self._sinks:
            sink.join(max(0.0, deadline - time.monotonic()))
        self._sinks = []
