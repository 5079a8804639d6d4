"""The reconciliation views read back: their rows, each boot's verdicts, and the lines
``ledger check`` and ``ledger show`` print for them; and how each boot ended (``survival``).

The arithmetic lives in SQL views (``ledger/migrations/versions/0002_*``) so that ``sqlite3``, pandas
and Datasette see the same numbers; ``VIEWS`` names them, here only.  Survival is read from the
boot's stored outcome, its failures and its timestamps (no view: it needs no arithmetic beyond
the time between two stamps).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from ledger.parsers.units import format_bytes
from ledger.parsers.vocabulary import FAILING_VERDICTS, Outcome, Verdict

from .db.connect import Ledger
from .db.reader import in_list
from .errors import LedgerError
from .render.survival import survival_text
from .render.values import boot_id, iso

# what reconciles a boot (the notebooks' ``ledger.frames.view`` offers these), and the views
# they are built on
RECONCILIATION_VIEWS = ("kv_cost_per_token", "kv_reconciliation", "capacity_contract", "budget_ceilings",
                        "kv_formula")  # kv_formula: ledger.kvformula
VIEWS = ("boot_figures", "boot_kv", "kv_reference", *RECONCILIATION_VIEWS)
FAILING = FAILING_VERDICTS  # slower: decode dropped beyond the bound (check --against)


def view_rows(ledger: Ledger, view: str, boot_ids: list[int] | None = None) -> list[dict[str, Any]]:
    if view not in VIEWS:
        raise LedgerError(f"no view {view!r}")
    q = f"SELECT * FROM {view}"  # view names come from the fixed list above
    params: dict[str, Any] = {}
    if boot_ids is not None:
        if not boot_ids:
            return []
        q += f" WHERE boot_id IN {in_list('ids', list(boot_ids), params)}"
    with ledger.reading() as r:
        return r.rows(q, params)


def verdicts(ledger: Ledger, boot_ids: list[int]) -> dict[int, dict[str, str]]:
    """Per boot: the KV reconciliation, capacity contract and ceiling verdicts."""
    out: dict[int, dict[str, str]] = {bid: {} for bid in boot_ids}
    for r in view_rows(ledger, "kv_reconciliation", boot_ids):
        out[r["boot_id"]]["kv"] = r["verdict"]
    for r in view_rows(ledger, "capacity_contract", boot_ids):
        out[r["boot_id"]]["capacity"] = r["verdict"]
    for r in view_rows(ledger, "budget_ceilings", boot_ids):
        out[r["boot_id"]]["vram"] = r["vram_verdict"]
        out[r["boot_id"]]["host"] = r["host_verdict"]
    return out


@dataclass
class CheckLine:
    what: str
    verdict: str
    detail: str


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x * 100:+.3f}%"


def kv_line(r: dict[str, Any] | None) -> CheckLine:
    if r is None or r["verdict"] == Verdict.insufficient:
        why = "no KV budget with a token count" if not r or r["measured_tokens"] is None or \
            r["kv_budget_bytes"] is None else "no comparable ready boot to predict from"
        return CheckLine("kv reconciliation", Verdict.insufficient, why)
    if r["verdict"] == Verdict.reference:  # predicted from itself: true by construction, so no "ok"
        return CheckLine(
            "kv reconciliation", Verdict.reference,
            f"the group's reference ({r['ref_chosen_by']}): {r['kv_budget_bytes']:,.0f} B / "
            f"{r['measured_tokens']:,.0f} tokens = {r['ref_bytes_per_token']:,.2f} B/token; "
            "the other boots of its group are predicted from it")
    ref = f"boot {r['ref_boot_id']}"
    return CheckLine(
        "kv reconciliation", r["verdict"],
        f"predicted {r['predicted_tokens']:,.0f} tokens from {ref} at {r['ref_bytes_per_token']:,.2f} B/token, "
        f"measured {r['measured_tokens']:,.0f}: {_pct(r['relative_error'])} "
        f"(tolerance {r['tolerance'] * 100:.3f}%, {r['tolerance_note']})")


def capacity_line(r: dict[str, Any] | None) -> CheckLine:
    if r is None or r["verdict"] == Verdict.insufficient:
        return CheckLine("capacity contract", Verdict.insufficient,
                         "needs kv_cache_tokens, max_num_seqs and max_model_len")
    margin_bytes = "" if r["margin_bytes"] is None else f" ({format_bytes(r['margin_bytes'])})"
    return CheckLine(
        "capacity contract", r["verdict"],
        f"{r['kv_cache_tokens']:,.0f} tokens vs {r['max_num_seqs']} x {r['max_model_len']:,} = "
        f"{r['contract_tokens']:,}: margin {r['margin_tokens']:+,.0f} tokens{margin_bytes}")


def ceiling_lines(r: dict[str, Any] | None) -> list[CheckLine]:
    if r is None:
        return [CheckLine("vram ceiling", Verdict.insufficient, ""), CheckLine("host ceiling", Verdict.insufficient, "")]
    if r["vram_verdict"] == Verdict.insufficient:
        vram = CheckLine("vram ceiling", Verdict.insufficient,
                         "needs weights, KV pool and a card ceiling (ledger deploy set D card_ceiling_bytes=…)")
    else:
        vram = CheckLine("vram ceiling", r["vram_verdict"],
                         f"{r['weights_source']} {format_bytes(r['weights_bytes'])} + KV pool "
                         f"{format_bytes(r['kv_pool_bytes'])} = {format_bytes(r['vram_bytes'])} vs ceiling "
                         f"{format_bytes(r['card_ceiling_bytes'])} ({r['card_ceiling_source']}): margin "
                         f"{format_bytes(r['vram_margin_bytes'])}")
    if r["host_verdict"] == Verdict.insufficient:
        host = CheckLine("host ceiling", Verdict.insufficient,
                         "needs pinned host figures and a cap (ledger deploy set D host_cap_bytes=…)")
    else:
        host = CheckLine("host ceiling", r["host_verdict"],
                         f"pinned {format_bytes(r['host_pinned_bytes'])} vs cap {format_bytes(r['host_cap_bytes'])}: "
                         f"margin {format_bytes(r['host_margin_bytes'])}")
    return [vram, host]


# -- survival: how the boot ended ------------------------------------------------------------------

SURVIVAL = "survival"  # the check's name (``check``, ``show``, the pages), and history's column

# the survival verdict of a boot by its stored outcome: a failure before ready is ``failed``, a
# failure after it ``crashed`` (the seeds: "boot is not proof of runtime survivability"); a ready
# boot with no failure is ``running`` where its log ends, which shows no end, so no test passed;
# a log that ends before either says nothing of it
_BY_OUTCOME: dict[str, str] = {Outcome.failed: Verdict.failed, Outcome.crashed: Verdict.crashed,
                               Outcome.ready: Verdict.running, Outcome.incomplete: Verdict.insufficient}
# how a boot ended, once the ingest stores it (facts.md "How a boot ended": stopped, crashed,
# failed, running; the parser does not store it yet). A requested stop with no failure before it is
# the one end that shows survival: ``ok``. Until then ``end`` is None and the outcome decides.
STOPPED = "stopped"


def survival_verdict(outcome: str, end: str | None = None) -> str:
    """A boot's survival verdict from its stored outcome and how it ended (``boot.ended``): only
    a stop that was asked for is ``ok``; a boot serving at the end of its log is ``running``."""
    if outcome == Outcome.ready and end == STOPPED:
        return Verdict.ok
    return _BY_OUTCOME.get(outcome, Verdict.insufficient)


def seconds_between(a: str | None, b: str | None) -> float | None:
    """Seconds from stored timestamp ``a`` to ``b`` (``2026-09-30 02:11:33[.123]``); None when
    either is missing or not a time."""
    if not a or not b:
        return None
    try:
        return (dt.datetime.fromisoformat(b) - dt.datetime.fromisoformat(a)).total_seconds()
    except ValueError:
        return None


@dataclass
class Survival:
    """How one boot ended, from what the ledger stores: its outcome, its failures in line order
    (kind, phase, line, the failure line's time), where it came up and its last line; and the
    seconds of it: for a crash from ready to the first failure's line (or, when that line has no
    time, to the last runtime sample before it: ``at_least``), for a failure from the boot's
    first stamped line, for a boot that came up from ready to its last stamped line.
    ``ledger.render.survival`` words it."""

    boot: int
    outcome: str
    verdict: str
    ready_line: int | None
    last_line: int
    failures: list[dict[str, Any]] = field(default_factory=list)  # kind, phase, line, logged_at
    seconds: float | None = None
    at_least: bool = False  # ``seconds`` is a floor: the time of the last stats line before the failure
    end: str | None = None  # how it ended (boot.ended: stopped, crashed, failed, running)
    stop_line: int | None = None  # the first line of a requested stop (boot.stop_line)

    def to_json(self) -> dict[str, Any]:
        """The output contract's survival object (docs/output-contract.md)."""
        return {"boot": boot_id(self.boot), "verdict": self.verdict, "outcome": self.outcome, "end": self.end,
                "stop_line": self.stop_line,
                "ready_line": self.ready_line, "last_line": self.last_line,
                "failures": [{"kind": f["kind"], "phase": f["phase"], "line": f["line"],
                              "logged_at": iso(f["logged_at"])} for f in self.failures],
                "seconds": self.seconds, "at_least": self.at_least}


def survival(ledger: Ledger, boot_ids: list[int], end: dict[int, str] | None = None) -> dict[int, Survival]:
    """Per boot, how it ended: ``end`` where given, else what the ingest stored (``boot.ended``:
    stopped, crashed, failed, running; null for boots stored before it knew)."""
    out: dict[int, Survival] = {}
    if not boot_ids:
        return out
    params: dict[str, Any] = {}
    ids = in_list("ids", list(boot_ids), params)
    with ledger.reading() as r:
        failures: dict[int, list[dict[str, Any]]] = {}
        for f in r.rows(f"SELECT boot_id, kind, phase, line, logged_at FROM failure WHERE boot_id IN {ids} "
                        "ORDER BY boot_id, line, id", params):
            failures.setdefault(f["boot_id"], []).append(f)
        for bid, outcome, ready_line, last_line, started, ready, ended, stored_end, stop_line in r.tuples(
                f"SELECT id, outcome, ready_line, last_line, started_at, ready_at, ended_at, ended, stop_line FROM boot "
                f"WHERE id IN {ids}", params):
            how = (end or {}).get(bid) or stored_end
            s = Survival(bid, outcome, survival_verdict(outcome, how), ready_line, last_line,
                         [{k: f[k] for k in ("kind", "phase", "line", "logged_at")} for f in failures.get(bid, [])],
                         end=how, stop_line=stop_line)
            first = s.failures[0] if s.failures else None
            if s.verdict == Verdict.crashed and first is not None:
                s.seconds = seconds_between(ready, first["logged_at"])
                if s.seconds is None and ready and not first["logged_at"]:
                    # the failure's line has no time: the last stats line before it gives a floor
                    before = r.one("SELECT logged_at FROM runtime_sample WHERE boot_id = :b AND line < :l "
                                   "AND logged_at IS NOT NULL ORDER BY line DESC LIMIT 1",
                                   {"b": bid, "l": first["line"]})
                    s.seconds = seconds_between(ready, before[0]) if before else None
                    s.at_least = s.seconds is not None
            elif s.verdict == Verdict.failed and first is not None:
                s.seconds = seconds_between(started, first["logged_at"])
            elif s.verdict in (Verdict.running, Verdict.ok):
                s.seconds = seconds_between(ready, ended)
            if s.seconds is not None and s.seconds < 0:  # the stamps run backwards: no time is said
                s.seconds, s.at_least = None, False
            out[bid] = s
    return out


def survival_line(s: Survival | None) -> CheckLine:
    """The ``survival`` check of a boot: its verdict, and how it ended in words."""
    if s is None:
        return CheckLine(SURVIVAL, Verdict.insufficient, "no such boot")
    return CheckLine(SURVIVAL, s.verdict, survival_text(s.to_json()))


# -- a shape's record in its group: did its boots come up, did they survive ------------------------


@dataclass
class ShapeFailure:
    """A boot of a shape that failed or crashed, and the newer boot of the shape that answers
    it, if any: a failure is answered by a newer boot that came up, a crash only by one that
    was stopped on request (a boot that is still running proves nothing of the load that
    killed the other)."""

    survival: Survival
    answered_by: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {**self.survival.to_json(), "answered_by": boot_id(self.answered_by)}


@dataclass
class ShapeRecord:
    """The boots of one group (model, KV dtype, TP, block size, release) at one
    ``max_num_seqs`` x ``max_model_len``, newest first, and those that failed or crashed."""

    group_key: str
    max_num_seqs: int
    max_model_len: int
    boots: list[Survival] = field(default_factory=list)

    @property
    def failures(self) -> list[ShapeFailure]:
        out = []
        for i, s in enumerate(self.boots):
            if s.verdict not in (Verdict.failed, Verdict.crashed):
                continue
            newer = self.boots[:i]
            answers = (Verdict.ok,) if s.verdict == Verdict.crashed else (Verdict.ok, Verdict.running, Verdict.crashed)
            answer = next((n.boot for n in reversed(newer) if n.verdict in answers), None)
            out.append(ShapeFailure(s, answer))
        return out

    @property
    def verdict(self) -> str | None:
        """``crashed`` when a crash of the shape is unanswered, else ``failed`` when a failure
        is, else None (nothing measured against the shape)."""
        open_ = {f.survival.verdict for f in self.failures if f.answered_by is None}
        return next((v for v in (Verdict.crashed, Verdict.failed) if v in open_), None)


def shape_record(ledger: Ledger, group_key: str | None, max_num_seqs: int | None, max_model_len: int | None,
                 exclude: int | None = None) -> ShapeRecord | None:
    """The boots of ``group_key`` at ``max_num_seqs`` x ``max_model_len`` (but ``exclude``) and
    how each ended; None when the group or the shape is not known."""
    if group_key is None or not max_num_seqs or not max_model_len:
        return None
    with ledger.reading() as r:
        ids = [b for b in r.scalars("SELECT boot_id FROM boot_kv WHERE group_key = :g AND max_num_seqs = :s "
                                    "AND max_model_len = :l ORDER BY started_at IS NULL, started_at DESC, boot_id DESC",
                                    {"g": group_key, "s": max_num_seqs, "l": max_model_len}) if b != exclude]
    ended = survival(ledger, ids)
    return ShapeRecord(group_key, max_num_seqs, max_model_len, [ended[b] for b in ids])
