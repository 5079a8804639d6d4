"""``ledger.origins`` without a runtime: where a container's runs begin in its ``logs
--timestamps`` stream (from the run ends its events give), and a unit's journal entries as
lines.  The real runtimes are in test_containers.py and test_unit_journal.py."""

from __future__ import annotations

import io
import json

from ledger import origins
from ledger.origins import Origin, rfc3339_ns


def _stamped(seconds: list[int]) -> bytes:
    return b"".join(f"2026-12-01T10:00:{s:02d}.000000001Z line at {s}\n".encode() for s in seconds)


def _container(ends: list[str]) -> Origin:
    return Origin(kind="container", name="vllm", source_name="container:vllm@0123456789ab", executable="podman",
                  runtime="podman", ident="0123", run_ends=[rfc3339_ns(e.encode()) or 0 for e in ends])


def test_a_container_run_begins_at_the_first_line_after_a_run_end(monkeypatch):
    monkeypatch.setattr(origins, "_BLOCK", 64)  # many blocks: the run end falls inside one
    out = io.BytesIO()
    starts, _ = origins._copy_container_log(_container(["2026-12-01T10:00:05.5Z"]), io.BytesIO(_stamped(list(range(10)))),
                                            out)
    assert starts == [(7, 1)] and out.getvalue() == _stamped(list(range(10)))


def test_a_run_that_printed_nothing_keeps_the_runs_numbered(monkeypatch):
    ends = ["2026-12-01T10:00:02.5Z", "2026-12-01T10:00:03.5Z"]  # the second run ended before printing
    starts, _ = origins._copy_container_log(_container(ends), io.BytesIO(_stamped([1, 2, 4, 5])), io.BytesIO())
    assert starts == [(3, 2)]


def test_a_log_of_one_run_has_no_run_start():
    starts, _ = origins._copy_container_log(_container([]), io.BytesIO(_stamped([1, 2, 3])), io.BytesIO())
    assert starts == []


def test_the_last_line_without_a_newline_is_kept():
    out = io.BytesIO()
    origins._copy_container_log(_container([]), io.BytesIO(b"2026-12-01T10:00:01Z last"), out)
    assert out.getvalue() == b"2026-12-01T10:00:01Z last\n"


def _entry(invocation: str, micros: int, message: object) -> bytes:
    return json.dumps({"_SYSTEMD_INVOCATION_ID": invocation, "__REALTIME_TIMESTAMP": str(micros),
                       "MESSAGE": message}).encode() + b"\n"


def test_a_unit_run_begins_where_the_invocation_changes():
    unit = Origin(kind="unit", name="vllm.service", source_name="unit:vllm.service", executable="journalctl")
    src = io.BytesIO(_entry("a", 1, "one") + _entry("a", 2, "two") + _entry("b", 3, "three"))
    out = io.BytesIO()
    starts, _ = origins._copy_journal(unit, src, out)
    assert starts == [(3, 1)]
    assert out.getvalue().splitlines()[2] == b"1970-01-01T00:00:00.000003Z three"


def test_a_journal_message_that_is_not_utf8_is_kept_as_bytes():
    unit = Origin(kind="unit", name="vllm.service", source_name="unit:vllm.service", executable="journalctl")
    assert list(unit.text_lines([_entry("a", 1, [0x66, 0xFF, 0x6F])])) == [b"1970-01-01T00:00:00.000001Z f\xffo\n"]
