"""kill -9 of ``ledger watch`` at random moments while a writer appends a runtime log
(``bench/make_runtime_log.py`` output: two served boots, each ending in a runtime OOM), then a
restart: the ledger holds what a plain ``ingest`` of the final file holds — every boot and every
sample once (issue 26: at least 20 kills).  Small logs and short batches keep it to about
a minute on a loaded machine (each watch takes about a second to start)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import defaultdict

import pytest
from conftest import ROOT
from dbutil import rows
from test_watch import _ingested, _rows, _same_as_ingest
from watchlog import Watch, Writer, wait_until

KILLS = 20


def _runtime_log(tmp_path) -> str:
    parts = []
    for hours, seed in ((0.04, 1), (0.03, 2)):
        out = tmp_path / f"part{seed}.log"
        subprocess.run([sys.executable, str(ROOT / "bench" / "make_runtime_log.py"), str(out), "--hours", str(hours),
                        "--seed", str(seed)], check=True)
        parts.append(out.read_text())
    return "".join(parts)


@pytest.mark.heavy
def test_kill_9_at_random_moments_then_a_restart_loses_nothing_and_stores_nothing_twice(db, tmp_path):
    rnd = random.Random(26)
    text = _runtime_log(tmp_path)
    log = tmp_path / "vllm.log"
    log.write_text("")
    lines = text.splitlines(keepends=True)
    step = -(-len(lines) // KILLS)
    args = ("--format", "jsonl", "--commit-every", "0.3s", "--commit-samples", "40")
    said: list[dict] = []
    during_writes = 0
    for i in range(KILLS):
        w = Watch(db, str(log), *args)
        wait_until(lambda i=i: _rows(db, "SELECT count(*) FROM watch") == [(i + 1,)], timeout=30,
                   what="the watch started")
        # once it runs, a twentieth of the log is appended (over 1.5 s) and the watch is killed at
        # a random moment: reading, writing a batch, waiting for lines
        writer = Writer(log, "".join(lines[i * step:(i + 1) * step]), rate=step / 1.5, burst=10)
        writer.start()
        time.sleep(rnd.uniform(0.0, 1.2))
        during_writes += not writer.done.is_set()
        w.kill9()
        said += [json.loads(x) for x in w.lines if x.startswith("{")]
        while (line := w.next_line(0.05)) is not None:
            if line.startswith("{"):
                said.append(json.loads(line))
        writer.join(60)
    assert during_writes >= KILLS // 2  # most kills came while the log was being written
    plain = _ingested(tmp_path, log)
    total = rows(plain, "SELECT count(*) FROM runtime_sample_row")[0][0]
    w = Watch(db, str(log), *args)
    wait_until(lambda: rows(db, "SELECT count(*) FROM runtime_sample_row")[0][0] == total
               and rows(db, "SELECT count(*) FROM boot WHERE outcome = 'crashed'")[0][0] == 2,
               timeout=60, what="the restarted watch caught up")
    assert w.stop() == 0
    said += w.alerts()
    _same_as_ingest(db, plain)
    # an outcome is told once, whatever the kills cut short: an alert a kill left pending is sent
    # again by the next watch — the same alert, its raising time kept — never raised a second time
    told: dict[tuple, set[str]] = defaultdict(set)
    for a in said:
        if a["kind"] in ("crashed", "boot_verdict", "boot_failed"):
            told[(a["kind"], a["boot"])].add(a["raised_at"])
    assert told and all(len(times) == 1 for times in told.values()), told
    # and delivered at least once: each crash the ledger holds was told (issue 38, item 6)
    crashed = {str(r[0]) for r in rows(db, "SELECT id FROM boot WHERE outcome = 'crashed'")}
    assert {boot for kind, boot in told if kind == "crashed"} == crashed
    assert rows(db, "SELECT count(*) FROM watch_alert WHERE state = 'pending'") == [(0,)]
