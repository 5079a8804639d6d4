"""Where alerts go besides standard output: ``--exec CMD`` (run with the alert's JSON on its
standard input and as ``LEDGER_ALERT_*`` variables) and ``--webhook URL`` (the alert POSTed,
retried with back-off a bounded number of times; a ``user:password@`` in the URL is sent as a
Basic ``Authorization`` header, to the URL without it).  They run on a thread of their own, one alert
after another, so a slow endpoint never holds up the reading; a sink that fails is reported
(``on_note``) and the watch goes on.  ``close`` waits a bounded time for what is queued.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ledger.render.watch import alert_env, alert_json, webhook_request

from ..render import dumps

EXEC_TIMEOUT_S = 30.0
WEBHOOK_TIMEOUT_S = 10.0
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


class Sinks:
    """``--exec`` and ``--webhook``, fed alerts by ``send``."""

    def __init__(self, exec_cmd: str | None, webhook: str | None, webhook_format: str = "json",
                 on_note: Callable[[SinkFailure], None] | None = None, backoff: float = WEBHOOK_BACKOFF_S):
        self.exec_cmd, self.webhook, self.webhook_format = exec_cmd, webhook, webhook_format
        self.on_note = on_note or (lambda _text: None)
        self.backoff = backoff
        self.failures = 0
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        if exec_cmd or webhook:
            self._thread = threading.Thread(target=self._run, name="ledger-watch-sinks", daemon=True)
            self._thread.start()

    def send(self, alert: Any) -> None:
        if self._thread is not None:
            self._queue.put(alert)

    def _run(self) -> None:
        while True:
            alert = self._queue.get()
            try:
                if alert is None:
                    return
                if self.exec_cmd:
                    self._exec(alert)
                if self.webhook:
                    self._post(alert)
            finally:
                self._queue.task_done()

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
        url, auth = webhook_target(self.webhook)
        headers = {**headers, **auth}
        last = ""
        for attempt in range(WEBHOOK_TRIES):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as response:  # noqa: S310 (the user's URL)
                    if 200 <= response.status < 300:
                        return
                    last = f"HTTP {response.status}"
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
                if 400 <= exc.code < 500 and exc.code not in (408, 429):
                    break  # the endpoint refuses this request: trying again will not help
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last = str(reason)
        self._failed(SinkFailure("--webhook", self.webhook, last, attempt + 1))

    def _failed(self, failure: SinkFailure) -> None:
        self.failures += 1
        self.on_note(failure)

    def close(self, wait: float = CLOSE_WAIT_S) -> None:
        """Deliver what is queued (at most ``wait`` seconds), then stop."""
        if self._thread is None:
            return
        self._queue.put(None)
        self._thread.join(wait)
        self._thread = None
