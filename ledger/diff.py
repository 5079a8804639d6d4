"""``ledger diff A B``: what changed between two boots (or two deploys' latest boots).

Shape keys that differ, and every fact's boot figure (facts.md summary rule) with A, B, the
change and the change in percent.  Failures and outcome are compared too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .db.connect import Ledger
from .queries import INTEGER_UNITS, boot_summaries, deploy_name, export_value, resolve_boot
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

    def to_json(self) -> dict[str, Any]:
        """The output contract's object: boot ids as strings, missing as null."""
        return {"a": {**self.a.__dict__, "boot": boot_id(self.a.boot)},
                "b": {**self.b.__dict__, "boot": boot_id(self.b.boot)},
                "shape": self.shape, "facts": self.facts, "failures": self.failures}


def diff(ledger: Ledger, a_ref: str, b_ref: str, show_all: bool = False) -> DiffResult:
    with ledger.Session() as s:
        a, b = resolve_boot(s, a_ref), resolve_boot(s, b_ref)
        sums = boot_summaries(s, [a.id, b.id])
        side_a, side_b = (Side(x.id, deploy_name(x.deploy), x.engine_version, x.outcome,
                               f"{x.source_path}:{x.first_line}-{x.last_line}") for x in (a, b))
        result = DiffResult(side_a, side_b)
        sa = {sh.key: json.loads(sh.value) for sh in a.shape}
        sb = {sh.key: json.loads(sh.value) for sh in b.shape}
        for key in sorted(set(sa) | set(sb)):
            va, vb = sa.get(key), sb.get(key)
            if va != vb or show_all:
                result.shape.append({"key": key, "a": va, "b": vb})
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
            result.facts.append({"name": name, "unit": unit, "a": va, "b": vb, "change": change,
                                 "change_pct": pct, "pack": pack})
        ka = sorted(f"{f.kind}/{f.phase}" for f in a.failures)
        kb = sorted(f"{f.kind}/{f.phase}" for f in b.failures)
        if ka != kb or show_all:
            result.failures.append({"a": ", ".join(ka) or "none", "b": ", ".join(kb) or "none"})
        return result
