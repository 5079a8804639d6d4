"""``ledger sweep KNOB``: the boots of one comparable group (model, KV dtype, TP, block size,
release: the views' group key) ordered by the knob that varies, one row each — the knob's
value, how the boot ended (and its failure at its phase), KV tokens, concurrency, the capacity
contract's margin, decode where it served — and the frontier: the largest value that came up
and the smallest that did not ("largest passing 241,664; smallest failing 245,760
(oom@graph_capture)").

A boot "passes" when it came up and did not crash: a boot that passed every boot gate and then
crashed at runtime is a failing rung (a boot is no proof of runtime survivability), its row
and the frontier say how it ended.  Boots that do not print the knob are counted, not guessed
at.  The report is ``Sweep.to_json()``; ``ledger.render.sweep`` words it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .db.connect import Ledger
from .db.reader import Boot, boots_where, in_list, with_children
from .decode import decode_figure
from .derived import boot_derived
from .errors import LedgerError
from .parsers.vocabulary import telling_kind
from .queries import deploy_name, deploys_named, resolve_boot
from .render import boot_id, iso
from .verdicts import survival, view_rows

KNOBS = ("max_model_len", "max_num_seqs", "kv_cache_memory_bytes", "gpu_memory_utilization",
         "max_num_batched_tokens")
BYTE_KNOBS = {"kv_cache_memory_bytes"}
CAME_UP = {"ready", "crashed"}
PASSED = {"ready"}  # came up, and did not crash (a crash at runtime is a failing rung)
SWEEP_COLUMNS = ["boot", "deploy", "value", "outcome", "passed", "failure", "kv_tokens", "concurrency",
                 "contract_tokens", "margin_tokens", "decode_tps", "started_at"]


@dataclass
class Sweep:
    knob: str
    group_key: str | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    frontier: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    also_varies: dict[str, list[Any]] = field(default_factory=dict)  # other knobs that differ between the rows

    def to_json(self) -> dict[str, Any]:
        return {"knob": self.knob, "group_key": self.group_key, "rows": self.rows, "frontier": self.frontier,
                "skipped": self.skipped, "also_varies": self.also_varies}


def _failure(b: Boot) -> str | None:
    """The failure that tells why (``vocabulary.telling_kind``), ``kind@phase``."""
    if not b.failures:
        return None
    fs = sorted(b.failures, key=lambda f: f.line)
    kind = telling_kind([f.kind for f in fs])
    f = next(f for f in fs if f.kind == kind)
    return f"{f.kind}@{f.phase}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _order(value: Any) -> tuple[bool, float, str]:
    """Numbers in numeric order, then other values as text, then None (not printed)."""
    n = _number(value)
    return (value is None, n if n is not None else float("inf"), str(value))


def sweep(ledger: Ledger, knob: str, deploys: list[str] | None = None, group: str | None = None,
          deploy_ids: list[int] | None = None) -> Sweep:
    """The sweep of ``knob`` over the boots of ``deploys`` (or of the deploys ``deploy_ids``,
    ``ledger serve``'s; all boots when none), or over the group of the boot ``group`` names; an
    error when the boots are of more than one group."""
    knob = knob.strip()
    if not knob:
        raise LedgerError("name the knob to sweep (e.g. max_model_len)")
    with ledger.reading() as s:
        if group is not None:
            anchor = resolve_boot(s, group)
            key = {r["boot_id"]: r["group_key"] for r in view_rows(ledger, "boot_kv", [anchor.id])}.get(anchor.id)
            if key is None:
                raise LedgerError(f"boot {anchor.id} has no group (model, KV dtype, TP size, block size and "
                                  "release are not all known)")
            q, params = "SELECT id FROM boot", dict[str, Any]()
        elif deploys or deploy_ids:
            ids = list(deploy_ids or []) + [d.id for ref in deploys or [] for d in deploys_named(s, ref)]
            params = {}
            q = f"SELECT id FROM boot WHERE deploy_id IN {in_list('d', ids, params)}"
        else:
            q, params = "SELECT id FROM boot", {}
        boot_ids = s.scalars(q, params)
    keys = {r["boot_id"]: r["group_key"] for r in view_rows(ledger, "boot_kv", boot_ids)}
    skipped: Counter[str] = Counter()
    if group is not None:
        boot_ids = [b for b in boot_ids if keys.get(b) == key]
    else:
        groups = Counter(keys.get(b) for b in boot_ids if keys.get(b) is not None)
        skipped["no group"] = sum(1 for b in boot_ids if keys.get(b) is None)
        if len(groups) > 1:
            shown = "; ".join(f"{k} ({n} boot{'s' if n != 1 else ''})" for k, n in groups.most_common(4))
            raise LedgerError(f"those boots are of {len(groups)} groups ({shown}); sweep one: --group BOOT, or "
                              "--deploy with the deploys of one group")
        key = next(iter(groups), None)
        boot_ids = [b for b in boot_ids if keys.get(b) is not None]
    if not boot_ids:
        raise LedgerError("no boots to sweep")
    derived = boot_derived(ledger, boot_ids)
    ended = survival(ledger, boot_ids)
    rows = []
    others: dict[str, set[str]] = {k: set() for k in KNOBS if k != knob}
    knobs: dict[str, set[str]] = {k: set() for k in KNOBS}  # each knob's values over every boot swept
    with ledger.reading() as s:
        params = {}
        boots = with_children(s, boots_where(s, f"id IN {in_list('b', boot_ids, params)}", params))
        for b in boots:
            shape = {sh.key: json.loads(sh.value) for sh in b.shape}
            for k in knobs:
                if k in shape:
                    knobs[k].add(json.dumps(shape[k]))
            d = derived[b.id]
            value = shape.get(knob, d.get(knob) if knob in ("max_model_len", "max_num_seqs") else None)
            if value is None:
                skipped[f"no {knob} printed"] += 1
                continue
            for k in others:
                others[k].add(json.dumps(shape.get(k)))
            conc = min((f.value for f in b.facts if f.name == "max_concurrency"), default=None)
            rows.append({"boot": boot_id(b.id), "deploy": deploy_name(b.deploy), "value": value,
                         "outcome": b.outcome, "came_up": b.outcome in CAME_UP, "passed": b.outcome in PASSED,
                         "failure": _failure(b), "survival": ended[b.id].to_json(),
                         "kv_tokens": d.get("kv_cache_tokens"), "concurrency": conc,
                         "contract_tokens": d.get("contract_tokens"), "margin_tokens": d.get("margin_tokens"),
                         "contract": d["verdicts"].get("capacity"), "started_at": iso(b.started_at),
                         "_id": b.id})
    if not rows:
        varying = [k for k in KNOBS if len(knobs[k]) > 1]
        n = len(boot_ids)
        raise LedgerError(f"{knob}: none of these {n} boot{'s' if n != 1 else ''} prints that knob; the knobs that "
                          f"vary between them: {', '.join(varying) or 'none of ' + ', '.join(KNOBS)} "
                          "(a boot's shape keys: ledger show BOOT)")
    for r in rows:
        bid = r.pop("_id")
        r["decode_tps"] = decode_figure(ledger, bid)["median_tps"] if r["outcome"] in CAME_UP else None
    rows.sort(key=lambda r: (_number(r["value"]) is None, _number(r["value"]) or 0, str(r["value"]),
                             r["started_at"] or "", int(r["boot"])))
    result = Sweep(knob, key, rows, skipped={k: v for k, v in skipped.items() if v},
                   also_varies={k: sorted((json.loads(v) for v in vs), key=_order)
                                for k, vs in others.items() if len(vs) > 1})
    result.frontier = frontier(rows)
    return result


def frontier(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The largest value that came up and did not crash, and the smallest that did not come up
    or crashed at runtime (numeric values only);
    none when the knob does not vary (``varies``: every boot has one value, which is
    ``value``)."""
    if len({json.dumps(r["value"], sort_keys=True) for r in rows}) < 2:
        return {"varies": False, "value": rows[0]["value"] if rows else None, "boots": len(rows),
                "largest_passing": None, "largest_passing_boot": None, "largest_passing_outcome": None,
                "largest_passing_failure": None, "smallest_failing": None, "smallest_failing_boot": None,
                "smallest_failing_failure": None, "smallest_failing_outcome": None, "monotone": None}
    passing = [r for r in rows if r["passed"] and _number(r["value"]) is not None]
    failing = [r for r in rows if not r["passed"] and _number(r["value"]) is not None]
    best = max(passing, key=lambda r: _number(r["value"]) or 0, default=None)
    worst = min(failing, key=lambda r: _number(r["value"]) or 0, default=None)
    return {
        "varies": True,
        "largest_passing": best["value"] if best else None,
        "largest_passing_boot": best["boot"] if best else None,
        "largest_passing_outcome": best["outcome"] if best else None,
        "largest_passing_failure": best["failure"] if best else None,
        "smallest_failing": worst["value"] if worst else None,
        "smallest_failing_boot": worst["boot"] if worst else None,
        "smallest_failing_failure": worst["failure"] if worst else None,
        "smallest_failing_outcome": worst["outcome"] if worst else None,
        "monotone": None if not (best and worst) else (_number(worst["value"]) or 0) > (_number(best["value"]) or 0),
    }


def varying_knob(ledger: Ledger, deploy_id: int) -> str | None:
    """The first of ``KNOBS`` whose value differs between the deploy's boots (what a chart of
    the deploy sweeps), or None."""
    with ledger.reading() as s:
        params: dict[str, Any] = {"d": deploy_id}
        rows = s.tuples('SELECT shape."key", shape.value FROM shape JOIN boot ON boot.id = shape.boot_id '
                        f'WHERE boot.deploy_id = :d AND shape."key" IN {in_list("k", list(KNOBS), params)}', params)
    values: dict[str, set[str]] = {}
    for key, value in rows:
        values.setdefault(key, set()).add(value)
    return next((k for k in KNOBS if len(values.get(k, ())) > 1), None)
