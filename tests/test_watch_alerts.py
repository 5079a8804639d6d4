"""``ledger watch``'s alerts, one kind at a time, on lines in the format vLLM 0.20 prints
(``tests/watchlog.py``), and where they go: stdout, ``--exec``, ``--webhook`` (a server of
this test on 127.0.0.1, failing and retried)."""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest
from dbutil import rows
from watchlog import (
    T0,
    TOLD_FROM_START,
    LocalHTTP,
    QuietHandler,
    Watch,
    append,
    boot,
    crash,
    failed_boot,
    served,
    stats,
    wait_until,
)

MIN = dt.timedelta(minutes=1)


def _kinds(alerts: list[dict]) -> list[str]:
    return [a["kind"] for a in alerts]


def _ready(db: str, n: int = 1) -> bool:
    try:
        return rows(db, "SELECT count(*) FROM boot WHERE outcome = 'ready'")[0][0] >= n
    except Exception:  # noqa: BLE001 (not created yet)
        return False


def test_a_failed_start_up_is_one_alert_with_kind_at_phase_and_figures(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("")
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    append(log, failed_boot(T0, 1, 43))
    line = w.wait_line(lambda x: '"boot_failed"' in x)
    alert = json.loads(line)
    assert [f"{f['kind']}@{f['phase']}" for f in alert["figures"]["failures"]] == [
        "engine_init_failed@profile", "oom@profile"]
    assert alert["figures"]["failures"][1]["figures"]["tried_to_allocate_bytes"] == 2 * 1024 ** 3
    assert alert["message"].startswith(f"boot {alert['boot']} (deploy:1) failed: engine_init_failed@profile, "
                                       f"oom@profile (tried_to_allocate 2.00 GiB")
    assert w.stop() == 0


def test_a_boot_up_with_its_contract_broken_says_so_once_for_the_deploy(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("")
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    append(log, boot(T0))  # 1,356,080 KV tokens for 64 x 65,536
    line = w.wait_line(lambda x: '"boot_verdict"' in x)
    verdicts = json.loads(line)["figures"]["verdicts"]
    assert [(v["what"], v["verdict"]) for v in verdicts] == [("capacity contract", "broken")]
    append(log, crash(T0 + MIN) + boot(T0 + 5 * MIN, 2, 44))  # the next boot: the same contract
    wait_until(lambda: rows(db, "SELECT outcome FROM boot ORDER BY id") == [("crashed",), ("ready",)],
               what="the second boot")
    assert w.stop() == 0
    assert _kinds(w.alerts()) == ["boot_verdict", "crashed"]


def test_a_restart_loop_is_one_incident_not_an_alert_per_boot(db, tmp_path):
    log = tmp_path / "vllm.log"
    loop = "".join(failed_boot(T0 + i * 20 * dt.timedelta(seconds=1), 10 + i, 50 + i) for i in range(5))
    # then a boot that comes up and serves for two minutes: the outage is over
    log.write_text(loop + boot(T0 + 2 * MIN, 20, 60) + served(T0 + 2 * MIN, 12))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    w.wait_line(lambda x: '"recovered"' in x)
    assert w.stop() == 0
    alerts = w.alerts()
    assert _kinds(alerts) == ["boot_failed", "restart_loop", "boot_verdict", "recovered"]
    loop_alert = alerts[1]
    assert loop_alert["figures"]["failed_boots"] == 3
    assert loop_alert["message"].startswith("restart loop: 3 boots failed in")
    assert alerts[3]["figures"]["failed_boots"] == 5


def test_kv_cache_usage_above_the_threshold_for_long_enough_then_back(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--kv-usage-above", "95%", "--for", "30s")
    wait_until(lambda: _ready(db))
    append(log, served(T0, 5, kv=97.5))  # 40 s above 95 %
    line = w.wait_line(lambda x: '"kv_usage"' in x)
    assert json.loads(line)["figures"]["for_seconds"] >= 30
    append(log, served(T0 + MIN, 2, kv=60.0))
    w.wait_line(lambda x: '"recovered"' in x)
    assert w.stop() == 0
    assert _kinds(w.alerts()) == ["boot_verdict", "kv_usage", "recovered"]


def test_kv_usage_above_for_less_than_the_duration_says_nothing(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0))
    # samples committed every 0.1 s (not 5 s): their rows say the watch has read the lines
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--kv-usage-above", "95%", "--for", "5m", "--commit-every", "100ms")
    wait_until(lambda: _ready(db))
    append(log, served(T0, 6, kv=99.0) + served(T0 + MIN, 2, kv=50.0))
    wait_until(lambda: rows(db, "SELECT count(*) FROM runtime_sample")[0][0] >= 7)
    assert w.stop() == 0
    assert "kv_usage" not in _kinds(w.alerts())


def test_decode_below_the_deploys_previous_boot_is_a_drop(db, tmp_path):
    log = tmp_path / "vllm.log"
    # the deploy's previous boot decoded at 130 t/s; this one comes up and decodes at 100
    log.write_text(boot(T0) + served(T0, 6, tps=130.0) + crash(T0 + 2 * MIN) + boot(T0 + 10 * MIN, 2, 44))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--decode-drop", "10%", "--decode-window", "1m")
    wait_until(lambda: _ready(db))
    append(log, served(T0 + 10 * MIN, 5, tps=100.0, api_pid=2))
    line = w.wait_line(lambda x: '"decode_drop"' in x)
    figures = json.loads(line)["figures"]
    assert (figures["median_tps"], figures["previous_median_tps"]) == (100.0, 130.0)
    assert round(figures["drop_pct"], 1) == 23.1
    assert w.stop() == 0


def test_no_stats_line_while_requests_ran_is_hung_then_recovered(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--silent-for", "1s")
    wait_until(lambda: _ready(db))
    append(log, served(T0, 2, running=4))
    line = w.wait_line(lambda x: '"hung"' in x, timeout=15)
    assert json.loads(line)["figures"]["running_reqs"] == 4
    append(log, stats(T0 + 5 * MIN, running=4))
    w.wait_line(lambda x: '"recovered"' in x)
    assert w.stop() == 0
    assert _kinds(w.alerts()).count("hung") == 1


def test_an_idle_server_is_not_hung(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0))
    # samples committed every 0.1 s (not 5 s): their rows say the watch has read the lines
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--silent-for", "500ms", "--commit-every", "100ms")
    wait_until(lambda: _ready(db))
    append(log, served(T0, 3, running=0))
    wait_until(lambda: rows(db, "SELECT count(*) FROM runtime_sample")[0][0] >= 2)
    time.sleep(1.5)  # three times --silent-for: a hung alert would have come
    assert w.stop() == 0
    assert "hung" not in _kinds(w.alerts())


def test_table_format_is_one_line_per_alert(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    w = Watch(db, *TOLD_FROM_START, str(log))
    line = w.wait_line(lambda x: "boot_failed" in x)
    assert "failed: engine_init_failed@profile, oom@profile (tried_to_allocate 2.00 GiB" in line
    assert line.endswith(f"[{log}:5]")  # "EngineCore failed to start."
    assert w.stop() == 0


# -- --exec ------------------------------------------------------------------------------------


def test_exec_gets_the_alert_on_stdin_and_as_variables(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    got = tmp_path / "got"
    script = tmp_path / "record.sh"
    script.write_text(f'#!/bin/sh\ncat > "{got}.json"\necho "$LEDGER_ALERT_KIND|$LEDGER_ALERT_BOOT|'
                      f'$LEDGER_ALERT_MESSAGE" > "{got}.env"\n')
    script.chmod(0o755)
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--exec", str(script))
    line = w.wait_line(lambda x: '"boot_failed"' in x)
    wait_until(lambda: (tmp_path / "got.env").exists(), what="the script ran")
    assert w.stop() == 0
    assert json.loads((tmp_path / "got.json").read_text()) == json.loads(line)
    kind, bid, message = (tmp_path / "got.env").read_text().strip().split("|")
    assert (kind, bid) == ("boot_failed", json.loads(line)["boot"])
    assert message.startswith(f"boot {bid} (deploy:1) failed: engine_init_failed@profile, oom@profile")


def test_a_failing_exec_is_reported_and_the_watch_goes_on(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--exec", "echo no > /dev/stderr; exit 3")
    w.wait_line(lambda x: '"boot_failed"' in x)
    append(log, boot(T0 + MIN, 2, 44))
    wait_until(lambda: _ready(db), what="the next boot, stored")
    assert w.stop() == 0
    assert "--exec 'echo no > /dev/stderr; exit 3': exit 3: no" in w.stderr


# -- --webhook ---------------------------------------------------------------------------------


class _Hook:
    """An HTTP endpoint on 127.0.0.1 that answers 500 to its first ``failures`` requests;
    ``at`` holds when each request came (time.monotonic)."""

    def __init__(self, failures: int = 0):
        self.failures, self.got, self.at = failures, [], []
        hook = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.at.append(time.monotonic())
                hook.got.append((dict(self.headers), body))
                code = 500 if len(hook.got) <= hook.failures else 200
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()


        self.http = LocalHTTP(Handler)
        self.url = self.http.url

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def hook(request):
    h = _Hook(getattr(request, "param", 0))
    yield h
    h.close()


@pytest.mark.parametrize("hook", [2], indirect=True)
def test_the_webhook_is_retried_after_failures_and_gets_the_alert_once(db, tmp_path, hook):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    # the back-off shortened (its default is 1 s): the retries are what is tested, not the wait
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--webhook", hook.url, "--webhook-backoff", "200ms")
    line = w.wait_line(lambda x: '"boot_failed"' in x)
    wait_until(lambda: len(hook.got) == 3, timeout=20, what="two failures, then delivered")
    assert w.stop() == 0
    assert [json.loads(body) for _, body in hook.got] == [json.loads(line)] * 3
    # each retry waited its back-off, doubled: 0.2 s, then 0.4 s
    gaps = [b - a for a, b in zip(hook.at, hook.at[1:], strict=False)]
    assert gaps[0] >= 0.2 and gaps[1] >= 0.4, gaps
    assert "--webhook" not in w.stderr


@pytest.mark.parametrize("hook", [99], indirect=True)
def test_a_webhook_that_keeps_failing_is_tried_a_bounded_number_of_times(db, tmp_path, hook):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--webhook", hook.url, "--webhook-backoff", "50ms")
    w.wait_line(lambda x: '"boot_failed"' in x)
    wait_until(lambda: len(hook.got) == 4, timeout=30, what="four tries")
    assert w.stop() == 0
    assert len(hook.got) == 4
    assert f"--webhook {hook.url}: HTTP 500 (after 4 tries)" in w.stderr


def test_the_ntfy_format_posts_the_message_with_a_title(db, tmp_path, hook):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--webhook", hook.url, "--webhook-format", "ntfy")
    line = w.wait_line(lambda x: '"boot_failed"' in x)
    wait_until(lambda: hook.got, what="the post")
    assert w.stop() == 0
    headers, body = hook.got[0]
    assert body.decode() == json.loads(line)["message"]
    assert (headers["Title"], headers["Priority"]) == ("ledger watch: boot_failed", "high")


def test_the_slack_format_posts_a_text_object(db, tmp_path, hook):
    log = tmp_path / "vllm.log"
    log.write_text(failed_boot(T0, 1, 43))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--webhook", hook.url, "--webhook-format", "slack")
    line = w.wait_line(lambda x: '"boot_failed"' in x)
    wait_until(lambda: hook.got, what="the post")
    assert w.stop() == 0
    text = json.loads(hook.got[0][1])["text"]
    assert text.startswith("*boot_failed* ") and json.loads(line)["message"] in text
