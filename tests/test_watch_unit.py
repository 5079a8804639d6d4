"""``ledger watch --unit`` on a real journal file (the synthetic journald capture of a unit whose
first start fails and whose restart is ready, written by systemd-journal-remote as
``tests/test_unit_journal.py`` writes it), followed with ``journalctl --file … --follow``: the
failed start is told, both boots are stored under ``unit:NAME`` while the watch runs, and they
are what ``ledger ingest --unit`` of the same journal stores.  Skipped where the tools are
missing."""

from __future__ import annotations

import subprocess
import sys
import time

from conftest import ROOT
from dbutil import rows
from test_unit_journal import journal  # noqa: F401 (the fixture)
from test_watch import _same_as_ingest
from watchlog import Watch, wait_until


def test_a_units_journal_is_followed_and_its_start_ups_told(journal, db, tmp_path):  # noqa: F811
    """Asked with --since (journalctl's syntax), the journal's start-ups are told."""
    w = Watch(db, "--unit", "vllm.service", "--journal-file", str(journal), "--format", "jsonl",
              "--since", "2000-01-01")
    w.wait_line(lambda x: '"boot_failed"' in x, timeout=60)
    wait_until(lambda: rows(db, "SELECT outcome FROM boot ORDER BY first_line") == [("failed",), ("ready",)],
               timeout=30, what="both boots, while the watch runs")
    assert rows(db, "SELECT DISTINCT source_path FROM boot") == [("unit:vllm.service",)]
    assert w.stop() == 0
    plain = str(tmp_path / "plain.db")
    done = subprocess.run([sys.executable, "-m", "ledger", "ingest", "--db", plain, "--unit", "vllm.service",
                           "--journal-file", str(journal)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    _same_as_ingest(db, plain)


def test_the_first_watch_of_an_old_journal_tells_nothing_of_it(journal, db, tmp_path):  # noqa: F811
    """The first start on a journal that already holds a failed start (issue 38, item 6: the
    trial was told of a crash two months old): its boots are stored, nothing is told, and the
    ledger keeps the alert as backlog so a restart does not tell it either."""
    w = Watch(db, "--unit", "vllm.service", "--journal-file", str(journal), "--format", "jsonl")

    def outcomes() -> list[tuple]:
        try:
            return rows(db, "SELECT outcome FROM boot ORDER BY first_line")
        except Exception:  # noqa: BLE001 (the ledger is not created yet)
            return []

    wait_until(lambda: outcomes() == [("failed",), ("ready",)], timeout=60, what="both boots, while the watch runs")
    time.sleep(2)
    assert w.stop() == 0
    assert w.alerts() == []
    assert ("boot_failed", "backlog") in rows(db, "SELECT kind, state FROM watch_alert")
