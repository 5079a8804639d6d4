"""``ledger diff A B``: what changed between two boots (or two deploys' latest boots).

Shape keys that differ, and every fact's boot figure (facts.md summary rule) with A, B, the
change and the change in percent.  Failures and outcome are compared too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .db.connect import Ledger
from .db.reader import with_children
from .queries import INTEGER_UNITS, boot_summaries, deploy_name, export_value, resolve_side
from .render import boot_id


@dataclass
class Side:
    boot: int
    deploy: str
    engine: str | None
    outcome: str
    source: str


@dataclass
class DiffResult:
    a: Side
    b: Side
    shape: list[dict[str, Any]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    derived: list[dict[str, Any]] = field(default_factory=list)  # the views' figures and verdicts
    one_sided: list[str] = field(default_factory=list)  # shape keys printed on one side only
    notices: list[str] = field(default_factory=list)  # a deploy's newer boot passed over, and why

    def to_json(self) -> dict[str, Any]:
        """The output contract's object: boot ids as strings, missing as null."""
        return {"a": {**self.a.__dict__, "boot": boot_id(self.a.boot)},
                "b": {**self.b.__dict__, "boot": boot_id(self.b.boot)},
                "shape": self.shape, "facts": self.facts, "failures": self.failures,
                "derived": self.derived, "one_sided_keys": self.one_sided, "notices": self.notices}


def diff(ledger: Ledger, a_ref: str, b_ref: str, show_all: bool = False) -> DiffResult:
    """A against B; a deploy means its latest ready boot (``D@latest``: its latest boot), and
    the result's notices say when a newer boot was passed over."""
    with ledger.reading() as s:
        (a, a_notice), (b, b_notice) = resolve_side(s, a_ref, "ready"), resolve_side(s, b_ref, "ready")
        with_children(s, [a, b], facts=False)
        sums = boot_summaries(s, [a.id, b.id])
        side_a, side_b = (Side(x.id, deploy_name(x.deploy), x.engine_version, x.outcome,
                               f"{x.source_path}:{x.first_line}-{x.last_line}") for x in (a, b))
        result = DiffResult(side_a, side_b, notices=[n for n in (a_notice, b_notice) if n])
        sa = {sh.key: json.loads(sh.value) for sh in a.shape}
        sb = {sh.key: json.loads(sh.value) for sh in b.shape}
        result.shape, result.one_sided = shape_rows(sa, sb, show_all)
        fa, fb = sums.get(a.id, {}), sums.get(b.id, {})
        names = list(dict.fromkeys(list(fa) + list(fb)))
        for name in names:
            x, y = fa.get(name), fb.get(name)
            either = x or fb[name]  # the name is a fact of one side at least
            unit = either.unit
            va = export_value(x.value, unit) if x else None
            vb = export_value(y.value, unit) if y else None
            change = pct = None
            if va is not None and vb is not None:
                change = export_value(vb - va, unit) if unit in INTEGER_UNITS else round(vb - va, 6)
                pct = round((vb - va) / va * 100, 2) if va else None
            if change == 0 and not show_all:
                continue
            pack = either.pack
            precisions = [f.precision for f in (x, y) if f is not None and f.precision]
            result.facts.append({"name": name, "unit": unit, "a": va, "b": vb, "change": change,
                                 "change_pct": pct, "pack": pack, "precision": max(precisions) if precisions else None})
        ka = sorted(f"{f.kind}/{f.phase}" for f in a.failures)
        kb = sorted(f"{f.kind}/{f.phase}" for f in b.failures)
        if ka != kb or show_all:
            result.failures.append({"a": ", ".join(ka) or "none", "b": ", ".join(kb) or "none"})
        a_id, b_id = a.id, b.id
    result.derived = derived_rows(ledger, a_id, b_id, show_all)
    return result


def shape_rows(sa: dict[str, Any], sb: dict[str, Any], show_all: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """The shape keys printed on both sides whose values differ (every key with ``show_all``),
    and the keys printed on one side only: a key one log printed and the other did not is no
    change of the deploy (another release, dump format or pack printed it), so it is counted,
    not listed, unless asked for."""
    rows, one_sided = [], []
    for key in sorted(set(sa) | set(sb)):
        if key not in sa or key not in sb:
            one_sided.append(key)
            if show_all:
                rows.append({"key": key, "a": sa.get(key), "b": sb.get(key)})
        elif sa[key] != sb[key] or show_all:
            rows.append({"key": key, "a": sa[key], "b": sb[key]})
    return rows, one_sided


def derived_rows(ledger: Ledger, a: int, b: int, show_all: bool = False) -> list[dict[str, Any]]:
    """The views' figures of both boots beside each other (bytes per KV token, the KV pool, the
    capacity contract and its margin, the ceilings' margins), then every verdict; a row neither
    side has is left out."""
    from .derived import FIGURES, VERDICTS, boot_derived

    d = boot_derived(ledger, [a, b])
    da, db = d[a], d[b]
    rows = []
    for key, label, unit in FIGURES:
        va, vb = da.get(key), db.get(key)
        if va is None and vb is None:
            continue
        change = pct = None
        if va is not None and vb is not None:
            change = vb - va
            pct = round(change / va * 100, 2) if va else None
        precision = [x.get("bytes_per_token_uncertainty") for x in (da, db)] if key == "bytes_per_token" else []
        rows.append({"name": label, "key": key, "unit": unit, "a": va, "b": vb, "change": change, "change_pct": pct,
                     "uncertainty": {"a": precision[0], "b": precision[1]} if precision else None,
                     **({"seqs_x_len": {"a": _seqs_x_len(da), "b": _seqs_x_len(db)}} if key == "contract_tokens" else {})})
    for key, label in VERDICTS:
        va, vb = da["verdicts"].get(key), db["verdicts"].get(key)
        rows.append({"name": label, "key": f"verdict_{key}", "unit": "verdict", "a": va, "b": vb, "change": None,
                     "change_pct": None, "uncertainty": None})
    return rows


def _seqs_x_len(d: dict[str, Any]) -> str | None:
    return f"{d['max_num_seqs']} x {d['max_model_len']:,}" if d.get("contract_tokens") is not None else None


