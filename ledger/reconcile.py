"""Predictions against measurements: ``ledger predict``, ``ledger check`` and the per-deploy
settings they use (card ceiling, host cap, pinned reference boot).

The arithmetic over stored boots lives in SQL views, read by ``ledger.verdicts``; this module
adds the what-if arithmetic of ``predict`` (a cost per token from a measured boot, or the exact
allocator from a model config).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import select

from ledger.parsers.units import MAX_FIGURE, UnitError, human_bytes

from .allocator import Geometry, allocate, budget_for_tokens
from .db import models as m
from .db.connect import Ledger
from .db.writes import (
    DeployInfo,
    delete_boots,
    delete_deploy_settings,
    move_boots,
    put_deploy_settings,
    set_deploy_label,
)
from .errors import LedgerError
from .queries import deploy_name, deploys_named, latest_boot, one_deploy, resolve_boot
from .verdicts import (
    FAILING,
    CheckLine,
    capacity_line,
    ceiling_lines,
    kv_line,
    view_rows,
)

SETTINGS = {
    "card_ceiling_bytes": "bytes",  # weights + KV pool must fit under it (per GPU)
    "host_cap_bytes": "bytes",  # pinned host memory must fit under it
    "kv_reference_boot": "boot",  # predict this deploy's KV tokens from that boot's cost per token
}


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
    if int(value) > MAX_FIGURE:  # past any id a database holds
        raise LedgerError(f"kv_reference_boot={value}: no such boot")
    return value.strip()


def set_deploy(ledger: Ledger, ref: str, assignments: list[str]) -> tuple[str, dict[str, str]]:
    """Record ``KEY=VALUE`` settings for one deploy (through the ledger's ``Writer``); its name
    and every setting it has now."""
    pairs = []
    for a in assignments:
        key, sep, value = a.partition("=")
        if not sep:
            raise LedgerError(f"{a}: expected KEY=VALUE")
        pairs.append((key.strip(), parse_setting(key.strip(), value)))
    d_id, name = _one_deploy(ledger, ref)
    for key, value in pairs:
        if key == "kv_reference_boot":
            _same_group(ledger, d_id, name, int(value))
    with ledger.writer() as writer:
        current = put_deploy_settings(writer, d_id, pairs)
    return name, current


def _one_deploy(ledger: Ledger, ref: str) -> tuple[int, str]:
    """The id and name of the one deploy ``ref`` names."""
    with ledger.Session() as s:
        d = one_deploy(s, ref)
        return d.id, deploy_name(d)


def _same_group(ledger: Ledger, deploy: int, name: str, ref_boot: int) -> None:
    """A reference boot predicts a deploy's tokens only from its own group (model, KV dtype,
    TP, block size, engine release): refuse one of another group, showing both keys.  A key
    that is not known (figures missing) is not refused: the view then says 'insufficient'."""
    with ledger.Session() as s:
        latest = latest_boot(s, deploy)
    if latest is None:
        return
    keys = {r["boot_id"]: r["group_key"] for r in view_rows(ledger, "boot_kv", [latest.id, ref_boot])}
    mine, theirs = keys.get(latest.id), keys.get(ref_boot)
    if mine and theirs and mine != theirs:
        raise LedgerError(f"kv_reference_boot={ref_boot}: boot {ref_boot} is of another group "
                          f"({theirs}) than {name} ({mine}); its cost per token does not predict this deploy")


def unset_deploy(ledger: Ledger, ref: str, keys: list[str]) -> tuple[str, dict[str, str]]:
    """Remove settings from one deploy; its name and the settings it keeps."""
    for key in keys:
        if key not in SETTINGS:
            raise LedgerError(f"{key}: unknown setting (known: {', '.join(SETTINGS)})")
    d_id, name = _one_deploy(ledger, ref)
    with ledger.Session() as s:
        have = set(s.execute(select(m.DeploySetting.key).where(m.DeploySetting.deploy_id == d_id)).scalars())
    unset = [k for k in dict.fromkeys(keys) if k not in have]
    if unset:
        raise LedgerError(f"{name}: {', '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set "
                          f"({'its settings: ' + ', '.join(sorted(have)) if have else 'it has no settings'}); "
                          f"nothing removed")
    with ledger.writer() as writer:
        current = delete_deploy_settings(writer, d_id, keys)
    return name, current


def label_deploy(ledger: Ledger, ref: str, label: str) -> tuple[str, str]:
    """Give one deploy a new label; its name before and after."""
    label = label.strip()
    if not label:
        raise LedgerError("a label cannot be empty")
    d_id, before = _one_deploy(ledger, ref)
    with ledger.writer() as writer:
        set_deploy_label(writer, d_id, label)
    with ledger.Session() as s:
        after = deploy_name(s.get(m.Deploy, d_id))
    return before, after


def move_to_deploy(ledger: Ledger, refs: list[str], target: str | None, info: DeployInfo | None) -> dict[str, Any]:
    """``ledger deploy move``: boots (ids) to the deploy ``target`` names, or to the deploy
    of ``info``'s identity (created if there is none).  The report: the boots, the deploy
    they now belong to and the deploys they left (by name)."""
    bad = [r for r in refs if not r.strip().isdigit()]
    if bad:
        raise LedgerError(f"{bad[0]}: ledger deploy move takes boot ids (as ledger history shows them)")
    if (target is None) == (info is None):
        raise LedgerError("give the deploy to move to: DEPLOY, or --commit/--image (and --label) of a deploy")
    dest: int | DeployInfo
    if target is not None:
        dest, _ = _one_deploy(ledger, target)
    else:
        assert info is not None
        dest = info
    with ledger.writer() as writer:
        deploy, came_from = move_boots(writer, [int(r) for r in refs], dest)
    with ledger.Session() as s:
        names = {d: f"deploy:{d} ({deploy_name(s.get(m.Deploy, d)).strip('()')})" for d in {deploy, *came_from}}
    return {"boots": sorted(int(r) for r in set(refs)), "deploy": names[deploy],
            "from": [{"deploy": names[d], "boots": b} for d, b in sorted(came_from.items())]}


def describe_boots(ledger: Ledger, refs: list[str]) -> list[str]:
    """A line per boot id in ``refs`` (id, outcome, source), for ``ledger rm`` to show what
    it removes; an unknown id or a ref that is not an id is an error."""
    bad = [r for r in refs if not r.strip().isdigit()]
    if bad:
        raise LedgerError(f"{bad[0]}: ledger rm takes boot ids (as ledger history shows them)")
    out = []
    with ledger.Session() as s:
        for ref in refs:
            b = s.get(m.Boot, int(ref))
            if b is None:
                raise LedgerError(f"{ref}: no boot by that id; nothing removed")
            out.append(f"{b.id}  {b.outcome}  {deploy_name(b.deploy)}  {b.source_path}:{b.first_line}-{b.last_line}")
    return out


def remove_boots(ledger: Ledger, ids: list[int]) -> int:
    with ledger.writer() as writer:
        return delete_boots(writer, ids)


def list_deploys(ledger: Ledger) -> list[dict[str, Any]]:
    with ledger.Session() as s:
        rows = []
        for d in s.execute(select(m.Deploy).order_by(m.Deploy.id)).scalars():
            settings = {r.key: r.value for r in s.execute(select(m.DeploySetting)
                                                             .where(m.DeploySetting.deploy_id == d.id)).scalars()}
            boots = [b.id for b in d.boots]
            rows.append({"deploy": d.id, "name": deploy_name(d), "commit": d.commit_sha, "image": d.image_digest,
                         "label": d.label, "boots": len(boots), "settings": dict(sorted(settings.items()))})
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
class DeployCheck:
    deploy: str
    boot: int
    outcome: str
    lines: list[CheckLine]

    @property
    def failing(self) -> bool:
        return any(line.verdict in FAILING for line in self.lines)


def check(ledger: Ledger, refs: list[str] | None = None) -> list[DeployCheck]:
    """Every view for the deploys' latest boots (all deploys when none are named)."""
    with ledger.Session() as s:
        if refs:
            deploys = [d for ref in refs for d in deploys_named(s, ref)]
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
        lines = [kv_line(rec.get(bid)), capacity_line(cap.get(bid)), *ceiling_lines(ceil.get(bid))]
        results.append(DeployCheck(name, bid, outcome, lines))
    return results


