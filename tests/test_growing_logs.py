"""A log that grows is read again without storing its boots twice (issue 15, item 8): a boot whose
evidence is a prefix of a new boot's (same source, same first line, same start) is superseded by
the longer one in one transaction; the same log with CRLF line ends is the same boot; a boot
repeated in one input is stored once, and the ingest says so."""

from __future__ import annotations

from pathlib import Path

from conftest import SYNTH
from dbutil import rows

RESTART = SYNTH / "journald-restart-capture-oom-then-ready.log"
LINES = RESTART.read_text().splitlines(keepends=True)
STATS = LINES[42]  # "Engine 000: Avg prompt throughput: …"


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines))
    return path


def test_an_incomplete_boot_is_superseded_by_its_ready_version(db, cli, tmp_path):
    log = _write(tmp_path / "vllm.log", LINES[:35])  # the second boot still starting
    cli("ingest", str(log), "--year", "2026")
    assert rows(db, "SELECT first_line, last_line, outcome FROM boot ORDER BY first_line")[-1] == (26, 35, "incomplete")
    _write(log, LINES)  # the file grew: the boot is ready
    r = cli("ingest", str(log), "--year", "2026")
    assert r.exit_code == 0, r.output
    assert rows(db, "SELECT first_line, last_line, outcome FROM boot ORDER BY first_line") == [
        (1, 25, "failed"), (26, 43, "ready")]
    assert rows(db, "SELECT count(*) FROM fact WHERE name = 'kv_cache_tokens'") == [(2,)]


def test_a_growing_runtime_log_keeps_one_boot_and_counts_each_sample_once(db, cli, tmp_path):
    log = _write(tmp_path / "vllm.log", LINES)
    cli("ingest", str(log), "--year", "2026")
    later = [STATS.replace("21:09:12", f"21:09:{22 + 10 * i}") for i in range(3)]
    _write(log, LINES + later)
    cli("ingest", str(log), "--year", "2026")
    assert rows(db, "SELECT count(*) FROM boot WHERE outcome = 'ready'") == [(1,)]
    assert rows(db, "SELECT count(*) FROM runtime_sample") == [(4,)]


def test_reading_the_older_version_after_the_newer_stores_nothing(db, cli, tmp_path):
    log = _write(tmp_path / "vllm.log", LINES)
    cli("ingest", str(log), "--year", "2026")
    _write(log, LINES[:35])  # e.g. an older copy put back
    r = cli("ingest", str(log), "--year", "2026")
    assert rows(db, "SELECT first_line, last_line FROM boot ORDER BY first_line") == [(1, 25), (26, 43)]
    assert "Traceback" not in r.output


def test_the_superseded_boot_s_reference_setting_follows_it(db, cli, tmp_path):
    log = _write(tmp_path / "vllm.log", LINES[:35])
    cli("ingest", str(log), "--year", "2026", "--label", "qwen")
    (old,) = rows(db, "SELECT id FROM boot WHERE first_line = 26")[0]
    cli("deploy", "set", "qwen", f"kv_reference_boot={old}")
    _write(log, LINES)
    cli("ingest", str(log), "--year", "2026", "--label", "qwen")
    (new,) = rows(db, "SELECT id FROM boot WHERE first_line = 26")[0]
    assert new != old
    assert rows(db, "SELECT value FROM deploy_setting WHERE key = 'kv_reference_boot'") == [(str(new),)]


def test_a_different_boot_at_the_same_place_is_not_superseded(db, cli, tmp_path):
    log = _write(tmp_path / "vllm.log", LINES[:35])
    cli("ingest", str(log), "--year", "2026")
    changed = LINES[:33] + [LINES[33].replace("71,920", "71,921")] + LINES[34:]
    _write(log, changed)
    cli("ingest", str(log), "--year", "2026")
    assert rows(db, "SELECT count(*) FROM boot WHERE first_line = 26") == [(2,)]


def test_the_same_log_with_crlf_line_ends_is_the_same_boots(db, cli, tmp_path):
    cli("ingest", str(RESTART), "--year", "2026")
    crlf = tmp_path / "restart-crlf.log"
    crlf.write_bytes(RESTART.read_bytes().replace(b"\n", b"\r\n"))
    r = cli("ingest", str(crlf), "--year", "2026")
    assert "already in the ledger" in r.output
    assert rows(db, "SELECT count(*) FROM boot") == [(2,)]


def test_three_identical_boots_in_one_file_are_stored_once_and_said(db, cli, tmp_path):
    log = _write(tmp_path / "thrice.log", LINES[25:41] * 3)
    r = cli("ingest", str(log), "--year", "2026")
    assert r.exit_code == 0
    assert rows(db, "SELECT count(*) FROM boot") == [(1,)]
    assert "2 boots identical to one before in the same input" in r.output
