"""``ledger diff A B``: what changed between two boots (or two deploys' latest boots).

Shape keys that differ, and every fact's boot figure (facts.md summary rule) with A, B, the
change and the change in percent.  Failures and outcome are compared too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ledger.parsers.units import format_bytes

from .db.connect import Ledger
from .queries import INTEGER_UNITS, boot_summaries, deploy_name, export_value, resolve_boot
from .render import boot_id, dumps
from .render.table import human, render


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

    def rows(self) -> list[dict[str, Any]]:
        """Every changed row, flat (csv): shape keys, then facts, then failures."""
        out = [{"section": "shape", "name": r["key"], "unit": None, "a": r["a"], "b": r["b"], "change": None,
                "change_pct": None} for r in self.shape]
        out += [{"section": "fact", "name": r["name"], "unit": r["unit"], "a": r["a"], "b": r["b"],
                 "change": r["change"], "change_pct": r["change_pct"]} for r in self.facts]
        out += [{"section": "failures", "name": "failures", "unit": None, "a": r["a"], "b": r["b"], "change": None,
                 "change_pct": None} for r in self.failures]
        return out


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


def _human(value: Any, unit: str) -> str:
    return "—" if value is None else human(value, unit)


def _human_change(value: Any, unit: str) -> str:
    if value is None:
        return ""
    sign = "+" if value > 0 else ""
    if unit == "bytes":
        return f"{sign}{format_bytes(value)}"
    if isinstance(value, int):
        return f"{sign}{value:,}"
    return f"{sign}{value:g}"


def render_diff(result: DiffResult, fmt: str = "table", width: int | None = None) -> str:
    """The diff in ``fmt`` (every format of the output contract); a table is fitted to ``width``."""
    if fmt == "json":
        return dumps(result.to_json(), indent=2)
    if fmt == "jsonl":
        return dumps(result.to_json())
    if fmt == "csv":
        return render(result.rows(), ["section", "name", "unit", "a", "b", "change", "change_pct"], "csv")
    a, b = result.a, result.b
    from .render.wrap import wrap_parts

    lines = [
        wrap_parts([f"A: boot {a.boot}", a.deploy, f"vLLM {a.engine or '?'}", a.outcome, f"({a.source})"], width),
        wrap_parts([f"B: boot {b.boot}", b.deploy, f"vLLM {b.engine or '?'}", b.outcome, f"({b.source})"], width),
        "",
    ]
    if fmt == "markdown":
        lines = [f"**A** boot {a.boot} `{a.deploy}` vLLM {a.engine or '?'}, {a.outcome}  ",
                 f"**B** boot {b.boot} `{b.deploy}` vLLM {b.engine or '?'}, {b.outcome}", ""]
    if a.outcome != b.outcome:
        lines += [f"outcome: {a.outcome} -> {b.outcome}", ""]
    if result.shape:
        rows = [{"shape": r["key"], "A": _js(r["a"]), "B": _js(r["b"])} for r in result.shape]
        lines += [render(rows, ["shape", "A", "B"], fmt, width=width, flexible=("A", "B")), ""]
    if result.facts:
        rows = [{"fact": r["name"] + (f" [{r['pack']}]" if r.get("pack") else ""),
                 "A": _human(r["a"], r["unit"]), "B": _human(r["b"], r["unit"]),
                 "change": _human_change(r["change"], r["unit"]),
                 "change %": "" if r["change_pct"] is None else f"{r['change_pct']:+.2f}%"}
                for r in result.facts]
        lines += [render(rows, ["fact", "A", "B", "change", "change %"], fmt, width=width,
                         align_right=("A", "B", "change", "change %"), flexible=("A", "B")), ""]
    if result.failures:
        f = result.failures[0]
        lines += [f"failures: {f['a']} -> {f['b']}", ""]
    if not (result.shape or result.facts or result.failures):
        lines.append("no differences (use --all to list every row)")
    return "\n".join(lines).rstrip()


def _js(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True)
