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


# -- issue 38, item 9: a name that starts with "-" is an option to the runtime, not a name ---------------


def _recording_runtimes(tmp_path, monkeypatch):
    """docker, podman and journalctl on PATH that record their arguments and know nothing."""
    import os

    seen = tmp_path / "argv"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for exe in ("docker", "podman", "journalctl"):
        script = bin_dir / exe
        script.write_text(f'#!/bin/sh\necho "{exe} $*" >> {seen}\necho "no such container" >&2\nexit 1\n')
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return seen


def test_a_container_or_unit_name_that_starts_with_a_dash_is_refused(db, cli, tmp_path, monkeypatch):
    """``ingest --container -l`` ran ``podman container inspect -l``: podman's --latest, so
    the last container started was ingested instead.  Now no runtime is run."""
    seen = _recording_runtimes(tmp_path, monkeypatch)
    for args in (["ingest", "--container", "-l"], ["ingest", "--container=--latest"],
                 ["ingest", "--container", "-l", "--runtime", "podman"], ["ingest", "--container", "-"],
                 ["ingest", "--unit", "--since=2020-01-01"], ["ingest", "--unit", "-x"],
                 ["watch", "--container", "-l"], ["watch", "--container=--latest", "--runtime", "docker"],
                 ["watch", "--unit", "-x"], ["watch", "--unit", "-x", "--journal-dir", str(tmp_path)]):
        r = cli(*args)
        assert r.exit_code == 2, (args, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and "-" in lines[0], (args, r.output)
        assert "starts with" in lines[0], (args, r.output)
    assert not seen.exists(), seen.read_text()
