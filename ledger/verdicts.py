"""The reconciliation views read back: their rows, each boot's verdicts, and the lines
``ledger check`` and ``ledger show`` print for them.

The arithmetic lives in SQL views (``ledger/migrations/versions/0002_*``) so that ``sqlite3``, pandas
and Datasette see the same numbers; ``VIEWS`` names them, here only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.parsers.units import format_bytes
from ledger.parsers.vocabulary import FAILING_VERDICTS, Verdict

from .db.connect import Ledger
from .db.reader import in_list
from .errors import LedgerError

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
