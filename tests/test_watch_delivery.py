"""What ``ledger watch`` tells, and that it is told (issue 38, item 6): an alert is delivered at
least once — recorded pending with the outcome it tells, resent by the next watch if a kill came
first — and told once: a restarted watch repeats none and keeps the incident it was in; the
backlog of a source watched for the first time is not told unless asked (``--since``); every
alert carries the log's time of its event; and a crash alert waits, briefly, for the line that
names its cause.  Real watch processes on files appended while they run; every wait bounded."""

from __future__ import annotations

import datetime as dt
import json
import time

from dbutil import rows
from watchlog import (
    T0,
    TOLD_FROM_START,
    Watch,
    append,
    boot,
    crash,
    failed_boot,
    served,
    wait_until,
)

MIN = dt.timedelta(minutes=1)


def _md(t: dt.datetime) -> tuple[str, str]:
    return t.strftime("%m-%d"), t.strftime("%H:%M:%S")


def _watching(db: str, n: int = 1) -> bool:
    try:
        return rows(db, "SELECT count(*) FROM watch")[0][0] >= n
    except Exception:  # noqa: BLE001 (not created yet)
        return False


def _outcomes(db: str) -> list[str]:
    try:
        return [r[0] for r in rows(db, "SELECT outcome FROM boot ORDER BY id")]
    except Exception:  # noqa: BLE001
        return []


def test_a_pending_alert_is_sent_again_by_the_next_watch_after_a_kill(db, tmp_path):
    """The crash alert is printed, and its --exec still runs, when the watch is killed: the
    ledger holds it pending, and the next watch sends it again (the same alert: its time of
    raising kept), then marks it delivered.  Before: a kill between storing the outcome and
    delivering its alert lost the alert for good (1 of 30 kills in the trial)."""
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0) + served(T0, 3))
    got = tmp_path / "exec.txt"
    slow = f'sleep 5; echo "$LEDGER_ALERT_KIND $LEDGER_ALERT_RAISED_AT" >> {got}'
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--exec", slow)
    wait_until(lambda: _outcomes(db) == ["ready"], what="the boot up")
    append(log, crash(T0 + MIN))
    first = json.loads(w.wait_line(lambda x: '"crashed"' in x))
    w.kill9()  # --exec is still sleeping: the alert is not delivered everywhere
    assert rows(db, "SELECT kind, state FROM watch_alert WHERE kind = 'crashed'") == [("crashed", "pending")]
    fast = f'echo "$LEDGER_ALERT_KIND $LEDGER_ALERT_RAISED_AT" >> {got}'
    again = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl", "--exec", fast)
    resent = json.loads(again.wait_line(lambda x: '"crashed"' in x))
    wait_until(lambda: rows(db, "SELECT state FROM watch_alert WHERE kind = 'crashed'") == [("delivered",)],
               what="the resent alert marked delivered")
    assert again.stop() == 0
    assert resent == first  # the same alert, sent again
    assert f"crashed {first['raised_at']}" in got.read_text().splitlines()
    # both alerts still pending at the kill (the verdict's --exec was sleeping too) are sent
    # again, in the order raised; nothing else is told again
    assert [a["kind"] for a in again.alerts()] == ["boot_verdict", "crashed"]


def test_a_restart_tells_nothing_again_and_keeps_the_restart_loop(db, tmp_path):
    """Two failed start-ups, the watch stopped and started again, then a third: it is the
    restart loop's third boot (one ``restart_loop``), not a new outage's first ``boot_failed``,
    and nothing told before is told again.  Before: the restarted watch had forgotten the outage
    and said ``boot_failed``."""
    log = tmp_path / "vllm.log"
    log.write_text("")
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    append(log, failed_boot(T0, 10, 50) + failed_boot(T0 + 20 * dt.timedelta(seconds=1), 11, 51))
    wait_until(lambda: _outcomes(db) == ["failed", "failed"], what="two failed boots")
    assert w.stop() == 0
    again = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    wait_until(lambda: _watching(db, 2), what="the second watch")
    time.sleep(1.5)  # it reads the file again
    append(log, failed_boot(T0 + 40 * dt.timedelta(seconds=1), 12, 52))
    again.wait_line(lambda x: '"restart_loop"' in x)
    time.sleep(0.5)
    assert again.stop() == 0
    assert [a["kind"] for a in w.alerts()] == ["boot_failed"]
    assert [a["kind"] for a in again.alerts()] == ["restart_loop"]


def test_the_first_watch_of_an_old_log_tells_its_backlog_only_when_asked(db, tmp_path):
    """A log that already holds a crash two months old: the first watch of it stores the boot
    and tells nothing of it (the watch_alert row says backlog), tells what comes while it runs
    — with the log's time in the message — and a restart tells the old crash no more.  With
    --since, the backlog from that time is told.  Before: the first start alerted about the
    old crash, with no date in the message."""
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0) + served(T0, 3) + crash(T0 + MIN))
    w = Watch(db, str(log), "--format", "jsonl")
    wait_until(lambda: _outcomes(db) == ["crashed"], what="the old boot stored")
    time.sleep(1.5)  # an alert would come now
    later = T0 + 10 * MIN
    append(log, failed_boot(later, 2, 44))
    line = w.wait_line(lambda x: '"boot_failed"' in x)
    assert w.stop() == 0
    assert [a["kind"] for a in w.alerts()] == ["boot_failed"]
    assert json.loads(line)["message"].endswith("; logged at 2026-10-01 09:10:00")
    assert rows(db, "SELECT kind, state FROM watch_alert ORDER BY id") == [
        ("boot_verdict", "backlog"), ("crashed", "backlog"), ("boot_failed", "delivered")]
    again = Watch(db, str(log), "--format", "jsonl")
    wait_until(lambda: _watching(db, 2), what="the second watch")
    time.sleep(2)
    assert again.stop() == 0
    assert again.alerts() == []
    # asked: a new ledger, the backlog from 09:00 on
    asked_db = str(tmp_path / "asked.db")
    asked = Watch(asked_db, "--since", "2026-10-01T09:00", str(log), "--format", "jsonl")
    crashed = json.loads(asked.wait_line(lambda x: '"crashed"' in x))
    wait_until(lambda: _outcomes(asked_db) == ["crashed", "failed"], what="both boots")
    time.sleep(1)
    assert asked.stop() == 0
    assert crashed["message"].endswith("; logged at 2026-10-01 09:01:00")
    # the failed start-up 9 minutes later is the same outage: not told again (once per incident)
    assert [a["kind"] for a in asked.alerts()] == ["boot_verdict", "crashed"]


def test_a_crash_alert_waits_for_the_line_that_names_its_cause(db, tmp_path):
    """``Worker proc … died unexpectedly``, then, 0.6 s later, the CUDA OOM that killed it: the
    crash alert names both.  Before: it went out 0.25 s after the first line, naming
    worker_died alone (1 of 2 runs in the trial)."""
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0) + served(T0, 3))
    w = Watch(db, *TOLD_FROM_START, str(log), "--format", "jsonl")
    wait_until(lambda: _outcomes(db) == ["ready"], what="the boot up")
    md, hms = _md(T0 + MIN)
    append(log, f"(EngineCore_DP0 pid=43) ERROR {md} {hms} [multiproc_executor.py:283] Worker proc VllmWorker-0 "
                "died unexpectedly, shutting down executor.\n")
    time.sleep(0.6)
    append(log, crash(T0 + MIN))
    alert = json.loads(w.wait_line(lambda x: '"crashed"' in x))
    assert w.stop() == 0
    kinds = [f["kind"] for f in alert["figures"]["failures"]]
    assert "worker_died" in kinds and "oom" in kinds, kinds
