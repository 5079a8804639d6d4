"""Predictions against measurements: ``ledger predict`` and ``ledger check`` (the per-deploy
settings they use are ``ledger.deploys``').

The arithmetic over stored boots lives in SQL views, read by ``ledger.verdicts``; this module
adds the what-if arithmetic of ``predict`` (a cost per token from a measured boot, or the exact
allocator from a model config).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ledger.parsers.vocabulary import Verdict

from .db.connect import Ledger
from .db.reader import deploys_where
from .errors import LedgerError
from .kvformula import kv_lines
from .queries import deploy_name, deploys_named, latest_boot, resolve_boot
from .render.values import boot_id
from .verdicts import (
    FAILING,
    CheckLine,
    capacity_line,
    ceiling_lines,
    shape_record,
    survival,
    survival_line,
    view_rows,
)

# the allocator is imported by predict_exact: ``check`` needs none of it
if TYPE_CHECKING:
    from .allocator import Geometry

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
    verdict: str = Verdict.insufficient  # the contract's, unless a boot of the shape failed or crashed
    num_blocks: int | None = None
    notes: list[str] = field(default_factory=list)
    contract_verdict: str = Verdict.insufficient  # the arithmetic's alone
    # --like: the boots of its group at this max_num_seqs x max_model_len that failed or crashed
    # (survival objects, newest first, each with the newer boot that answers it, if any)
    shape_failures: list[dict[str, Any]] = field(default_factory=list)

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
        p.verdict = p.contract_verdict = Verdict.ok if p.margin_tokens >= 0 else Verdict.broken
    else:
        p.notes.append("no max_num_seqs x max_model_len to check the capacity contract against")
    return p


def predict_like(ledger: Ledger, ref: str | None, kv_bytes: int | None = None, tokens: int | None = None,
                 max_num_seqs: int | None = None, max_model_len: int | None = None,
                 bytes_per_token: float | None = None) -> Prediction:
    """Tokens for a budget (or the budget for tokens) at the cost per token of a measured boot.

    With neither ``kv_bytes`` nor ``tokens`` it solves for the contract's floor: the budget that
    backs ``max_num_seqs`` x ``max_model_len`` tokens.  A boot of ``ref``'s group at that shape
    that failed, or crashed at runtime, and was not answered by a newer one makes the verdict
    ``failed`` / ``crashed``: the arithmetic is no proof that the shape comes up or serves."""
    if kv_bytes is not None and tokens is not None:
        raise LedgerError("give --kv-bytes or --tokens, not both")
    cost_from = "given"
    group_key = None
    if ref is not None:
        with ledger.reading() as s:
            boot = resolve_boot(s, ref)
        cost = view_rows(ledger, "kv_cost_per_token", [boot.id])
        figures = view_rows(ledger, "boot_kv", [boot.id])[0]  # boot_figures and the group key
        if bytes_per_token is None:
            if not cost:
                raise LedgerError(f"boot {boot.id} printed no KV budget with its token count: insufficient "
                                  f"to take a cost per token from")
            c = cost[0]
            bytes_per_token = c["bytes_per_token"]
            cost_from = (f"boot {boot.id}: {c['kv_budget_bytes']:,.0f} B / {c['kv_cache_tokens']:,.0f} tokens, "
                         f"{c['kv_budget_source']}, "
                         + (f"--kv-cache-memory-bytes {figures['kv_cache_memory_bytes']:,} asked and not used, "
                            if figures.get("kv_argument_ignored") else "")
                         + ("exact" if not c["kv_budget_precision_bytes"] else
                            f"± {c['bytes_per_token_uncertainty']:.2f} B/token from the printed precision"))
        max_num_seqs = max_num_seqs or figures["max_num_seqs"]
        max_model_len = max_model_len or figures["max_model_len"]
        group_key = figures["group_key"]
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
    p = _finish(Prediction(budget, n, bytes_per_token, cost_from, max_model_len, max_num_seqs, notes=notes))
    record = shape_record(ledger, group_key, max_num_seqs, max_model_len) if ref is not None else None
    if record is not None:
        p.shape_failures = [f.to_json() for f in record.failures]
        p.verdict = record.verdict or p.verdict
    return p


def predict_exact(geometry: Geometry, kv_bytes: int | None, tokens: int | None, max_model_len: int,
                  max_num_seqs: int | None, **alloc: Any) -> Prediction:
    """The exact allocator: blocks, tokens and concurrency as the engine release prints them."""
    from .allocator import allocate, budget_for_tokens

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

    def to_json(self) -> dict[str, Any]:
        """The output contract's object (``ledger check --format json``, ``/api/check``)."""
        return {"deploy": self.deploy, "boot": boot_id(self.boot), "outcome": self.outcome, "failing": self.failing,
                "checks": [{"what": line.what, "verdict": line.verdict, "detail": line.detail or None}
                           for line in self.lines]}


def check(ledger: Ledger, refs: list[str] | None = None) -> list[DeployCheck]:
    """How the deploys' latest boots ended, and every view for them (all deploys when none are
    named): a latest boot that failed or crashed fails the check, whatever its figures say."""
    with ledger.reading() as s:
        if refs:
            deploys = [d for ref in refs for d in deploys_named(s, ref)]
        else:
            deploys = deploys_where(s)
        targets = []
        for d in deploys:
            b = latest_boot(s, d.id)
            if b is not None:
                targets.append((deploy_name(d), b.id, b.outcome))
    ids = [t[1] for t in targets]
    rec = {r["boot_id"]: r for r in view_rows(ledger, "kv_reconciliation", ids)}
    form = {r["boot_id"]: r for r in view_rows(ledger, "kv_formula", ids)}
    cap = {r["boot_id"]: r for r in view_rows(ledger, "capacity_contract", ids)}
    ceil = {r["boot_id"]: r for r in view_rows(ledger, "budget_ceilings", ids)}
    ended = survival(ledger, ids)
    results = []
    for name, bid, outcome in targets:
        lines = [survival_line(ended.get(bid)), *kv_lines(rec.get(bid), form.get(bid)), capacity_line(cap.get(bid)),
                 *ceiling_lines(ceil.get(bid))]
        results.append(DeployCheck(name, bid, outcome, lines))
    return results


def check_report(ledger: Ledger, refs: list[str] | None = None, control: str | None = None,
                 max_decode_drop_pct: float | None = None) -> list[dict[str, Any]]:
    """``check``'s contract objects (``ledger check --format json``, ``/api/check``); with a
    ``control`` deploy, each deploy's decode against it (``ledger check --against``)."""
    results = check(ledger, refs)
    if control:
        from .decode import add_decode_checks

        add_decode_checks(ledger, results, control, 3.0 if max_decode_drop_pct is None else max_decode_drop_pct)
    return [r.to_json() for r in results]
