"""How a boot ended, in words: a survival object (``ledger.verdicts.Survival.to_json()``) as
the ``survival`` check's detail (``check``, ``show``, ``note``, the pages) and as the short
form ``predict``, ``note`` and ``sweep`` name a shape's boot by ("crashed at runtime after
0:03:41: oom")."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ledger.parsers.vocabulary import Phase, Verdict, telling_kind


def duration(seconds: float) -> str:
    """``0:03:41`` (whole seconds; days as ``1 day, 2:03:04``)."""
    return str(dt.timedelta(seconds=int(seconds)))


def kinds(s: dict[str, Any]) -> list[str]:
    """The failures' kinds, once each, in line order."""
    return list(dict.fromkeys(f["kind"] for f in s["failures"]))


def telling(s: dict[str, Any]) -> dict[str, Any] | None:
    """The failure that tells why (``vocabulary.telling_kind``: an OOM behind "WorkerProc hit an
    exception", a KV pool too small behind "EngineCore failed to start")."""
    kind = telling_kind([f["kind"] for f in s["failures"]])
    return next((f for f in s["failures"] if f["kind"] == kind), None)


def _came_up_before(s: dict[str, Any], first: dict[str, Any]) -> bool:
    """Whether the log shows the boot ready before its first failure (an excerpt that starts at
    a runtime traceback shows none, or only serving after it)."""
    return s["ready_line"] is not None and s["ready_line"] <= first["line"]


def _failure_words(s: dict[str, Any]) -> str:
    """``worker_died (line 17), then oom, engine_dead``: the first failure's kind and line, then
    the other kinds."""
    first = s["failures"][0]
    rest = [k for k in kinds(s) if k != first["kind"]]
    return f"{first['kind']} (line {first['line']})" + (f", then {', '.join(rest)}" if rest else "")


def _where(first: dict[str, Any]) -> str:
    return "at runtime" if first["phase"] == Phase.runtime else f"after ready (phase {first['phase']})"


def _when(s: dict[str, Any]) -> str:
    return ("at least " if s["at_least"] else "") + duration(s["seconds"])


def survival_text(s: dict[str, Any]) -> str:
    """How the boot ended, in words (the ``survival`` check's detail)."""
    first = s["failures"][0] if s["failures"] else None
    verdict = s["verdict"]
    if verdict == Verdict.crashed:
        if first is None:  # crashed with no failure stored: the outcome alone says it
            return "crashed after ready; no failure line stored"
        if not _came_up_before(s, first):
            return (f"crashed {_where(first)}: {_failure_words(s)}; the log shows no ready line before it (it starts "
                    "after start-up), so no time after ready is known")
        gate = f"passed every boot gate (ready at line {s['ready_line']}), "
        if s["seconds"] is None:
            return gate + f"crashed {_where(first)}: {_failure_words(s)}; no time of the crash is known (its lines carry none)"
        floor = " (the last stats line before it)" if s["at_least"] else ""
        return gate + f"crashed {_where(first)} after {_when(s)}{floor}: {_failure_words(s)}"
    if verdict == Verdict.failed:
        if first is None:
            return "did not come up; no failure line stored"
        phase = "in an unknown phase" if first["phase"] == Phase.unknown else f"at {first['phase']}"
        # from the boot's first stamped line (an excerpt's, if the log is one): zero says nothing
        when = f", {duration(s['seconds'])} after the boot's first line" if s["seconds"] else ""
        return f"did not come up: failed {phase}{when}: {_failure_words(s)}"
    ready = "no ready line stored" if s["ready_line"] is None else f"ready at line {s['ready_line']}"
    if verdict == Verdict.ok:
        after = "" if s["seconds"] is None else f" {duration(s['seconds'])} after ready"
        at = f" at line {s['stop_line']}" + ("," if after else "") if s.get("stop_line") else ""
        return f"stopped on request{at}{after} ({ready}), no failure before it"
    if verdict == Verdict.running:  # no failure seen, but no end shown either: no proof it survives
        if s["seconds"] is None:
            return f"running at the end of its log: no failure after ready ({ready}, last line {s['last_line']})"
        return f"running at the end of its log: no failure in {duration(s['seconds'])} after ready"
    return f"the log ends (line {s['last_line']}) before the boot came up or failed: nothing shows how it ended"


def survival_brief(s: dict[str, Any]) -> str:
    """The short form: ``crashed at runtime after 0:03:41: oom``, ``failed at kv_alloc: oom``,
    ``running at the end of its log``, ``stopped on request``."""
    first, why = (s["failures"][0], telling(s)) if s["failures"] else (None, None)
    verdict = s["verdict"]
    if verdict == Verdict.crashed:
        if first is None or why is None:
            return "crashed after ready"
        if not _came_up_before(s, first) or s["seconds"] is None:
            return f"crashed {_where(first)} (no time after ready known): {why['kind']}"
        return f"crashed {_where(first)} after {_when(s)}: {why['kind']}"
    if verdict == Verdict.failed:
        if first is None or why is None:
            return "did not come up"
        phase = "in an unknown phase" if first["phase"] == Phase.unknown else f"at {first['phase']}"
        return f"failed {phase}: {why['kind']}"
    if verdict == Verdict.ok:
        return "stopped on request"
    if verdict == Verdict.running:
        return "running at the end of its log"
    return "the log ends before it came up or failed"
