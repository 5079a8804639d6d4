"""``ledger ingest --unit`` on real journal files: the synthetic journald capture (a unit whose
first start fails and whose restart is ready, ``Restart=always``) turned into journald's export
format, written into a journal file by systemd-journal-remote, and read back by journalctl
(``--journal-file`` / ``--journal-dir``).  Skipped, with the reason, where the tools are
missing (as root: apt-get install systemd-journal-remote)."""

from __future__ import annotations

import calendar
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import SYNTH

RESTART = SYNTH / "journald-restart-capture-oom-then-ready.log"
REMOTE = next((p for p in ("/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote")
               if Path(p).exists()), None)
# "Sep 28 21:04:09 rig vllm[4121]: message" (journalctl's short output, as the capture holds it)
_SHORT = re.compile(r"(\w{3} \d\d \d\d:\d\d:\d\d) (\S+) (\w+)\[(\d+)\]: (.*)")
BOOT_ID = "0123456789abcdef0123456789abcdef"
INVOCATIONS = ("1" * 32, "2" * 32)


def _export(lines: list[str], year: int = 2026) -> bytes:
    """The capture as journald's export format: one entry per line, the unit's processes under
    _SYSTEMD_UNIT, systemd's own lines about it under UNIT (pid 1), the invocation id changing
    where the unit is started again (the first line of pid 5012)."""
    out = []
    invocation = INVOCATIONS[0]
    for i, line in enumerate(lines):
        when, host, ident, pid, message = _SHORT.match(line.rstrip("\n")).groups()  # type: ignore[union-attr]
        if pid == "5012":
            invocation = INVOCATIONS[1]
        stamp = calendar.timegm(time.strptime(f"{year} {when}", "%Y %b %d %H:%M:%S")) * 1_000_000
        fields = {"__REALTIME_TIMESTAMP": stamp, "__MONOTONIC_TIMESTAMP": 1_000_000 + i, "_BOOT_ID": BOOT_ID,
                  "_HOSTNAME": host, "SYSLOG_IDENTIFIER": ident, "_PID": pid, "MESSAGE": message}
        if ident == "systemd":
            fields |= {"UNIT": "vllm.service", "_SYSTEMD_UNIT": "init.scope", "INVOCATION_ID": invocation}
        else:
            fields |= {"_SYSTEMD_UNIT": "vllm.service", "_SYSTEMD_INVOCATION_ID": invocation}
        out.append("".join(f"{k}={v}\n" for k, v in fields.items()))
    return ("\n".join(out) + "\n").encode()


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> Path:
    if REMOTE is None or shutil.which("journalctl") is None:
        pytest.skip("systemd-journal-remote and journalctl are needed (apt-get install systemd-journal-remote)")
    folder = tmp_path_factory.mktemp("journal")
    target = folder / "vllm.journal"
    made = subprocess.run([REMOTE, f"--output={target}", "-"], input=_export(RESTART.read_text().splitlines()),
                          capture_output=True, timeout=60, check=False)
    if made.returncode != 0 or not target.exists():
        pytest.skip(f"systemd-journal-remote cannot write a journal here: {made.stderr.decode()[-200:]}")
    return target


def _exported(cli, *args: str) -> list[dict]:
    r = cli("ingest", *args, "--format", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_each_start_of_the_unit_is_a_boot(journal, db, cli):
    boots = _exported(cli, "--unit", "vllm.service", "--journal-file", str(journal))
    assert [(b["source"]["first_line"], b["outcome"], b["origin"]["run"]) for b in boots] == [
        (1, "failed", "1"), (26, "ready", "2")]


def test_a_units_boots_are_named_after_it(journal, db, cli):
    boots = _exported(cli, "--unit", "vllm.service", "--journal-file", str(journal))
    assert {b["source"]["path"] for b in boots} == {"unit:vllm.service"}


def test_a_unit_gives_the_facts_its_capture_gives(journal, db, cli, tmp_path):
    boots = _exported(cli, "--unit", "vllm.service", "--journal-dir", str(journal.parent))
    from_file = _exported(cli, str(RESTART), "--year", "2026", "--db", str(tmp_path / "file.db"))
    assert [[(f["name"], f["value"]) for f in b["facts"]] for b in boots] == \
        [[(f["name"], f["value"]) for f in b["facts"]] for b in from_file]


def test_until_is_passed_to_journalctl(journal, db, cli):
    boots = _exported(cli, "--unit", "vllm.service", "--journal-file", str(journal),
                      "--until", "2026-09-28 21:06:40 UTC")
    assert [b["outcome"] for b in boots] == ["failed"]


def test_the_same_unit_again_stores_nothing(journal, db, cli):
    cli("ingest", "--unit", "vllm.service", "--journal-file", str(journal))
    r = cli("ingest", "--unit", "vllm.service", "--journal-file", str(journal))
    assert "already in the ledger (2 boots in deploy:1 (unnamed)" in r.output


def test_a_unit_with_no_entries_is_one_line(journal, db, cli):
    r = cli("ingest", "--unit", "other.service", "--journal-file", str(journal))
    assert r.exit_code == 2 and r.output == "Error: unit:other.service: is empty\n"


def test_copy_keeps_a_boots_origin(journal, db, cli, tmp_path):
    cli("ingest", "--unit", "vllm.service", "--journal-file", str(journal))
    other = str(tmp_path / "other.db")
    assert cli("copy", db, other).exit_code == 0
    assert [b["origin"] for b in json.loads(cli("export", "--db", other).output)] == [
        {"origin": "unit", "unit": "vllm.service", "run": "1"}, {"origin": "unit", "unit": "vllm.service", "run": "2"}]


def test_a_journal_journalctl_cannot_read_is_one_line_and_no_ledger(journal, cli, tmp_path):
    ledger = tmp_path / "new.db"
    r = cli("ingest", "--unit", "vllm.service", "--journal-file", str(tmp_path / "missing.journal"), "--db", str(ledger))
    assert r.exit_code == 2
    assert r.output == "Error: unit:vllm.service: journalctl could not read the log: Failed to open files: No such " \
                       "file or directory\n"
    assert not ledger.exists()
