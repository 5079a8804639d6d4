"""A webhook URL's secrets (issue 38, finding 11): its ``user:password@`` becomes a Basic
Authorization header (the request goes to the URL without it), and no message of ``ledger
watch`` about the webhook prints the password or a ``?token=``/``?auth=`` value."""

from __future__ import annotations

import base64
import json
import time

import pytest
from watchlog import T0, TOLD_FROM_START, LocalHTTP, QuietHandler, Watch, failed_boot, wait_until

from ledger.render.redact import SECRET, secrets_hidden


class _Hook:
    """An HTTP endpoint on 127.0.0.1 answering ``code`` to every POST; ``got`` holds each
    request's path, headers and body."""

    def __init__(self, code: int = 200):
        self.got: list[tuple[str, dict[str, str], bytes]] = []
        hook = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.got.append((self.path, dict(self.headers), body))
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()


        self.http = LocalHTTP(Handler)
        self.port = self.http.port

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def hook(request):
    h = _Hook(getattr(request, "param", 200))
    yield h
    h.close()


def test_a_webhook_urls_userinfo_is_sent_as_basic_authorization(db, tmp_path, hook):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    url = f"http://alerts%40ops:p%3Ass@127.0.0.1:{hook.port}/hook?x=1"
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--webhook", url)
    line = w.wait_line(lambda x: '"boot_failed"' in x)
    wait_until(lambda: hook.got, what="the post")
    assert w.stop() == 0
    path, headers, body = hook.got[0]
    assert path == "/hook?x=1" and json.loads(body) == json.loads(line)
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"alerts@ops:p:ss").decode()
    assert "--webhook" not in w.stderr


@pytest.mark.parametrize("hook", [500], indirect=True)
def test_a_failing_webhooks_message_hides_its_password_and_tokens(db, tmp_path, hook):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    url = f"http://ops:hunter2@127.0.0.1:{hook.port}/hook?auth=s3cret&token=abc123&topic=vllm"
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--webhook", url, "--webhook-backoff", "50ms")
    w.wait_line(lambda x: '"boot_failed"' in x)
    wait_until(lambda: len(hook.got) == 4, timeout=30, what="four tries")
    time.sleep(0.2)
    assert w.stop() == 0
    assert all(h["Authorization"] == "Basic " + base64.b64encode(b"ops:hunter2").decode() for _, h, _ in hook.got)
    shown = f"http://{SECRET}@127.0.0.1:{hook.port}/hook?auth={SECRET}&token={SECRET}&topic=vllm"
    assert f"--webhook {shown}: HTTP 500 (after 4 tries)" in w.stderr
    assert not any(s in w.stderr for s in ("hunter2", "s3cret", "abc123")), w.stderr


def test_an_unreachable_webhooks_message_hides_its_password(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--webhook", "http://ops:hunter2@127.0.0.1:9/x?token=abc123",
              "--webhook-backoff", "10ms")
    w.wait_line(lambda x: '"boot_failed"' in x)
    time.sleep(1.5)  # four tries at a closed port: refused at once
    assert w.stop() == 0
    assert "--webhook http://<secret>@127.0.0.1:9/x?token=<secret>" in w.stderr, w.stderr
    assert "hunter2" not in w.stderr and "abc123" not in w.stderr


def test_secrets_hidden_keeps_the_rest_of_a_url():
    assert secrets_hidden("https://u:p@ntfy.example.org:8443/vllm?auth=x&topic=y") == \
        f"https://{SECRET}@ntfy.example.org:8443/vllm?auth={SECRET}&topic=y"
    assert secrets_hidden("http://192.168.1.5/home/ops/hook") == "http://192.168.1.5/home/ops/hook"
