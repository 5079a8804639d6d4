"""Predictions against measurements: reading the reconciliation views, ``ledger predict``,
``ledger check`` and the per-deploy settings they use (card ceiling, host cap, pinned
reference boot).

The arithmetic over stored boots lives in SQL views (``migrations/versions/0002_*``) so that
``sqlite3``, pandas and Datasette see the same numbers; this module reads them, and adds the
what-if arithmetic of ``predict`` (a cost per token from a measured boot, or the exact
allocator from a model config).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import bindparam, select, text

from parsers.units import UnitError, human_bytes

from . import models as m
from .allocator import Geometry, allocate, budget_for_tokens
from .errors import LedgerError
from .queries import deploy_name, latest_boot, resolve_boot, resolve_deploys
from .store import Ledger

VIEWS = ("kv_cost_per_token", "kv_reconciliation", "capacity_contract", "budget_ceilings")
FAILING = {"off", "broken", "over"}
SETTINGS = {
    "card_ceiling_bytes": "bytes",  # weights + KV pool must fit under it (per GPU)
    "host_cap_bytes": "bytes",  # pinned host memory must fit under it
    "kv_reference_boot": "boot",  # predict this deploy's KV tokens from that boot's cost per token
}


def view_rows(ledger: Ledger, view: str, boot_ids: list[int] | None = None) -> list[dict[str, Any]]:
    if view not in VIEWS + ("boot_figures", "boot_kv", "kv_reference"):
        raise LedgerError(f"no view {view!r}")
    q = f"SELECT * FROM {view}"  # noqa: S608 - view names come from the fixed list above
    params: dict[str, Any] = {}
    stmt = text(q)
    if boot_ids is not None:
        if not boot_ids:
            return []
        stmt = text(q + " WHERE boot_id IN :ids").bindparams(bindparam("ids", expanding=True))
        params["ids"] = list(boot_ids)
    with ledger.engine.connect() as conn:
        result = conn.execute(stmt, params)
        return [dict(r._mapping) for r in result]


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


# -- deploy settings ------------------------------------------------------------------------------


def parse_setting(key: str, value: str) -> str:
    kind = SETTINGS.get(key)
    if kind is None:
        raise LedgerError(f"{key}: unknown setting (known: {', '.join(SETTINGS)})")
    if kind == "bytes":
        try:
            return str(human_bytes(value))
        except UnitError:
            raise LedgerError(f"{key}={value}: not a byte count (e.g. 29120MiB, 31.3e9, 30,534,533,120)") from None
    if not value.strip().isdigit():
        raise LedgerError(f"{key}={value}: expected a boot id")
    return value.strip()


def set_deploy(ledger: Ledger, ref: str, assignments: list[str]) -> tuple[str, dict[str, str]]:
    pairs = []
    for a in assignments:
        key, sep, value = a.partition("=")
        if not sep:
            raise LedgerError(f"{a}: expected KEY=VALUE")
        pairs.append((key.strip(), parse_setting(key.strip(), value)))
    with ledger.WriteSession() as s, s.begin():
        deploys = resolve_deploys(s, ref)
        if not deploys:
            raise LedgerError(f"{ref}: no deploy by that commit, digest or label")
        if len(deploys) > 1:
            raise LedgerError(f"{ref}: names more than one deploy; give more of it")
        d = deploys[0]
        for key, value in pairs:
            if key == "kv_reference_boot" and s.get(m.Boot, int(value)) is None:
                raise LedgerError(f"kv_reference_boot={value}: no such boot")
            row = s.execute(select(m.DeploySetting).where(m.DeploySetting.deploy_id == d.id,
                                                          m.DeploySetting.key == key)).scalar_one_or_none()
            now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            if row is None:
                s.add(m.DeploySetting(deploy_id=d.id, key=key, value=value, set_at=now))
            else:
                row.value, row.set_at = value, now
        s.flush()
        current = {r.key: r.value for r in s.execute(select(m.DeploySetting)
                                                        .where(m.DeploySetting.deploy_id == d.id)).scalars()}
        return deploy_name(d), current


def list_deploys(ledger: Ledger) -> list[dict[str, Any]]:
    with ledger.Session() as s:
        rows = []
        for d in s.execute(select(m.Deploy).order_by(m.Deploy.id)).scalars():
            settings = {r.key: r.value for r in s.execute(select(m.DeploySetting)
                                                             .where(m.DeploySetting.deploy_id == d.id)).scalars()}
            boots = [b.id for b in d.boots]
            rows.append({"deploy": d.id, "name": deploy_name(d), "commit": d.commit_sha, "image": d.image_digest,
                         "label": d.label, "boots": len(boots),
                         "settings": ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))})
        return rows


# -- predict ----------------------------------------------------------------------------------------


@dataclass
class Prediction:
    budget_bytes: float
    tokens: int
    bytes_per_token: float | None
    cost_from: str
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    concurrency: float | None = None
    contract_tokens: int | None = None
    margin_tokens: int | None = None
    margin_bytes: float | None = None
    verdict: str = "insufficient"
    num_blocks: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _finish(p: Prediction) -> Prediction:
    if p.max_model_len:
        p.concurrency = p.tokens / p.max_model_len
    if p.max_model_len and p.max_num_seqs:
        p.contract_tokens = p.max_num_seqs * p.max_model_len
        p.margin_tokens = p.tokens - p.contract_tokens
        if p.bytes_per_token:
            p.margin_bytes = p.margin_tokens * p.bytes_per_token
        p.verdict = "ok" if p.margin_tokens >= 0 else "broken"
    else:
        p.notes.append("no max_num_seqs x max_model_len to check the capacity contract against")
    return p


def predict_like(ledger: Ledger, ref: str | None, kv_bytes: int | None = None, tokens: int | None = None,
                 max_num_seqs: int | None = None, max_model_len: int | None = None,
                 bytes_per_token: float | None = None) -> Prediction:
    """Tokens for a budget (or the budget for tokens) at the cost per token of a measured boot.

    With neither ``kv_bytes`` nor ``tokens`` it solves for the contract's floor: the budget that
    backs ``max_num_seqs`` x ``max_model_len`` tokens."""
    if kv_bytes is not None and tokens is not None:
        raise LedgerError("give --kv-bytes or --tokens, not both")
    cost_from = "given"
    if ref is not None:
        with ledger.Session() as s:
            boot = resolve_boot(s, ref)
        cost = view_rows(ledger, "kv_cost_per_token", [boot.id])
        figures = view_rows(ledger, "boot_figures", [boot.id])[0]
        if bytes_per_token is None:
            if not cost:
                raise LedgerError(f"boot {boot.id} printed no KV budget with its token count: insufficient "
                                  f"to take a cost per token from")
            c = cost[0]
            bytes_per_token = c["bytes_per_token"]
            cost_from = (f"boot {boot.id}: {c['kv_budget_bytes']:,.0f} B / {c['kv_cache_tokens']:,.0f} tokens, "
                         f"{c['kv_budget_source']}, "
                         + ("exact" if not c["kv_budget_precision_bytes"] else
                            f"± {c['bytes_per_token_uncertainty']:.2f} B/token from the printed precision"))
        max_num_seqs = max_num_seqs or figures["max_num_seqs"]
        max_model_len = max_model_len or figures["max_model_len"]
    elif bytes_per_token is None:
        raise LedgerError("give --like BOOT, --bytes-per-token N, or --config config.json")
    if bytes_per_token is None or bytes_per_token <= 0:
        raise LedgerError("the cost per token must be positive")
    notes = []
    if kv_bytes is None and tokens is None:
        if not (max_num_seqs and max_model_len):
            raise LedgerError("give --kv-bytes or --tokens (or --max-num-seqs and --max-model-len to solve "
                              "for the contract's floor)")
        tokens = max_num_seqs * max_model_len
        notes.append(f"solved for the contract's floor: {max_num_seqs} x {max_model_len:,} tokens")
    if kv_bytes is not None:
        n = int(kv_bytes / bytes_per_token)
        budget = float(kv_bytes)
    else:
        n = int(tokens)  # type: ignore[arg-type]
        budget = n * bytes_per_token
    p = Prediction(budget, n, bytes_per_token, cost_from, max_model_len, max_num_seqs, notes=notes)
    return _finish(p)


def predict_exact(geometry: Geometry, kv_bytes: int | None, tokens: int | None, max_model_len: int,
                  max_num_seqs: int | None, **alloc: Any) -> Prediction:
    """The exact allocator: blocks, tokens and concurrency as the engine release prints them."""
    if (kv_bytes is None) == (tokens is None):
        raise LedgerError("give exactly one of --kv-bytes or --tokens")
    if kv_bytes is not None:
        a = allocate(geometry, kv_bytes, max_model_len, **alloc)
        budget = kv_bytes
    else:
        budget, a = budget_for_tokens(geometry, int(tokens), max_model_len, **alloc)  # type: ignore[arg-type]
    p = Prediction(budget, a.tokens, a.bytes_per_block / a.block_size, "exact allocator",
                   max_model_len, max_num_seqs, num_blocks=a.num_blocks)
    p = _finish(p)
    p.concurrency = a.concurrency  # the engine's own figure (blocks / blocks per request)
    return p


# -- check ------------------------------------------------------------------------------------------


@dataclass
class CheckLine:
    what: str
    verdict: str
    detail: str


@dataclass
class DeployCheck:
    deploy: str
    boot: int
    outcome: str
    lines: list[CheckLine]

    @property
    def failing(self) -> bool:
        return any(line.verdict in FAILING for line in self.lines)


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x * 100:+.3f}%"


def check(ledger: Ledger, refs: list[str] | None = None) -> list[DeployCheck]:
    """Every view for the deploys' latest boots (all deploys when none are named)."""
    with ledger.Session() as s:
        if refs:
            deploys = []
            for ref in refs:
                found = resolve_deploys(s, ref)
                if not found:
                    raise LedgerError(f"{ref}: no deploy by that commit, digest or label")
                deploys.extend(found)
        else:
            deploys = list(s.execute(select(m.Deploy).order_by(m.Deploy.id)).scalars())
        targets = []
        for d in deploys:
            b = latest_boot(s, d.id)
            if b is not None:
                targets.append((deploy_name(d), b.id, b.outcome))
    ids = [t[1] for t in targets]
    rec = {r["boot_id"]: r for r in view_rows(ledger, "kv_reconciliation", ids)}
    cap = {r["boot_id"]: r for r in view_rows(ledger, "capacity_contract", ids)}
    ceil = {r["boot_id"]: r for r in view_rows(ledger, "budget_ceilings", ids)}
    results = []
    for name, bid, outcome in targets:
        lines = [_kv_line(rec.get(bid)), _capacity_line(cap.get(bid)), *_ceiling_lines(ceil.get(bid))]
        results.append(DeployCheck(name, bid, outcome, lines))
    return results


def check_lines_for_boot(ledger: Ledger, boot_id: int) -> list[dict[str, str]]:
    """The verdicts of one boot, as ``ledger show`` prints them."""
    rec = view_rows(ledger, "kv_reconciliation", [boot_id])
    cap = view_rows(ledger, "capacity_contract", [boot_id])
    ceil = view_rows(ledger, "budget_ceilings", [boot_id])
    lines = [_kv_line(rec[0] if rec else None), _capacity_line(cap[0] if cap else None),
             *_ceiling_lines(ceil[0] if ceil else None)]
    return [line.__dict__ for line in lines]


def _kv_line(r: dict[str, Any] | None) -> CheckLine:
    if r is None or r["verdict"] == "insufficient":
        why = "no KV budget with a token count" if not r or r["measured_tokens"] is None or \
            r["kv_budget_bytes"] is None else "no comparable ready boot to predict from"
        return CheckLine("kv reconciliation", "insufficient", why)
    ref = "itself (the group's reference)" if r["ref_boot_id"] == r["boot_id"] else f"boot {r['ref_boot_id']}"
    return CheckLine(
        "kv reconciliation", r["verdict"],
        f"predicted {r['predicted_tokens']:,.0f} tokens from {ref} at {r['ref_bytes_per_token']:,.2f} B/token, "
        f"measured {r['measured_tokens']:,.0f}: {_pct(r['relative_error'])} "
        f"(tolerance {r['tolerance'] * 100:.3f}%, {r['tolerance_note']})")


def _capacity_line(r: dict[str, Any] | None) -> CheckLine:
    if r is None or r["verdict"] == "insufficient":
        return CheckLine("capacity contract", "insufficient",
                         "needs kv_cache_tokens, max_num_seqs and max_model_len")
    margin_bytes = "" if r["margin_bytes"] is None else f" ({r['margin_bytes'] / 1e6:,.1f} MB)"
    return CheckLine(
        "capacity contract", r["verdict"],
        f"{r['kv_cache_tokens']:,.0f} tokens vs {r['max_num_seqs']} x {r['max_model_len']:,} = "
        f"{r['contract_tokens']:,}: margin {r['margin_tokens']:+,.0f} tokens{margin_bytes}")


def _ceiling_lines(r: dict[str, Any] | None) -> list[CheckLine]:
    from parsers.units import format_bytes

    if r is None:
        return [CheckLine("vram ceiling", "insufficient", ""), CheckLine("host ceiling", "insufficient", "")]
    if r["vram_verdict"] == "insufficient":
        vram = CheckLine("vram ceiling", "insufficient",
                         "needs weights, KV pool and a card ceiling (ledger deploy set D card_ceiling_bytes=…)")
    else:
        vram = CheckLine("vram ceiling", r["vram_verdict"],
                         f"{r['weights_source']} {format_bytes(r['weights_bytes'])} + KV pool "
                         f"{format_bytes(r['kv_pool_bytes'])} = {format_bytes(r['vram_bytes'])} vs ceiling "
                         f"{format_bytes(r['card_ceiling_bytes'])} ({r['card_ceiling_source']}): margin "
                         f"{format_bytes(r['vram_margin_bytes'])}")
    if r["host_verdict"] == "insufficient":
        host = CheckLine("host ceiling", "insufficient",
                         "needs pinned host figures and a cap (ledger deploy set D host_cap_bytes=…)")
    else:
        host = CheckLine("host ceiling", r["host_verdict"],
                         f"pinned {format_bytes(r['host_pinned_bytes'])} vs cap {format_bytes(r['host_cap_bytes'])}: "
                         f"margin {format_bytes(r['host_margin_bytes'])}")
    return [vram, host]
