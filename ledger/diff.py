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
from .queries import INTEGER_UNITS, boot_summaries, deploy_name, export_value, resolve_side
from .render import boot_id, dumps
from .render.table import render


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

    def rows(self) -> list[dict[str, Any]]:
        """Every changed row, flat (csv): shape keys, then facts, then failures."""
        out = [{"section": "shape", "name": r["key"], "unit": None, "a": r["a"], "b": r["b"], "change": None,
                "change_pct": None} for r in self.shape]
        out += [{"section": "fact", "name": r["name"], "unit": r["unit"], "a": r["a"], "b": r["b"],
                 "change": r["change"], "change_pct": r["change_pct"]} for r in self.facts]
        out += [{"section": "failures", "name": "failures", "unit": None, "a": r["a"], "b": r["b"], "change": None,
                 "change_pct": None} for r in self.failures]
        out += [{"section": "derived", "name": r["key"], "unit": r["unit"], "a": r["a"], "b": r["b"],
                 "change": r["change"], "change_pct": r["change_pct"]} for r in self.derived]
        return out


def diff(ledger: Ledger, a_ref: str, b_ref: str, show_all: bool = False) -> DiffResult:
    """A against B; a deploy means its latest ready boot (``D@latest``: its latest boot), and
    the result's notices say when a newer boot was passed over."""
    with ledger.Session() as s:
        (a, a_notice), (b, b_notice) = resolve_side(s, a_ref, "ready"), resolve_side(s, b_ref, "ready")
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


def fact_text(value: Any, unit: str, precision: float | None = None, sign: bool = False) -> str:
    """A figure for people with its unit, printed to the log's own precision (``3.30x``, not
    ``3.3``); ``sign`` for a change."""
    if value is None:
        return "—"
    plus = "+" if sign and value > 0 else ""
    if unit == "bytes":
        return f"{plus}{'-' if value < 0 else ''}{format_bytes(abs(value))} ({value:{'+' if sign else ''},.0f} B)"
    places = _decimals(precision) if isinstance(value, float) or precision else 0
    if isinstance(value, int) and not precision:
        text = f"{value:{'+' if sign else ''},}"
    else:
        text = f"{value:{'+' if sign else ''},.{places}f}"
    if unit == "x":
        return f"{text}x"
    return f"{text} {unit}" if unit else text


def _decimals(precision: float | None) -> int:
    """The digits after the point of a figure printed to ``precision`` (half its last digit)."""
    import math

    if not precision or precision <= 0:
        return 2
    return max(0, round(-math.log10(precision * 2)))


TOKEN_KEYS = {"max_model_len", "max_num_batched_tokens"}


def shape_text(key: str, value: Any) -> str:
    """A shape value for people: a byte count in GiB with the exact count, a token count with
    its unit, anything else as the log printed it."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if key.endswith("_bytes"):
            return fact_text(value, "bytes")
        if key in TOKEN_KEYS:
            return fact_text(value, "tokens")
    return _js(value)


def _fact_rows(result: DiffResult) -> list[dict[str, Any]]:
    return [{"fact": r["name"] + (f" [{r['pack']}]" if r.get("pack") else ""),
             "A": fact_text(r["a"], r["unit"], r.get("precision")), "B": fact_text(r["b"], r["unit"], r.get("precision")),
             "change": "" if r["change"] is None else fact_text(r["change"], r["unit"], r.get("precision"), sign=True),
             "change %": "" if r["change_pct"] is None else f"{r['change_pct']:+.2f}%"}
            for r in result.facts]


def derived_text(r: dict[str, Any], side: str) -> str:
    """One side (``a``/``b``) of a derived row for people, with its unit."""
    v = r[side]
    if r["unit"] == "verdict":
        return v or "—"
    if v is None:
        return "—"
    if r["unit"] == "B/token":
        u = (r.get("uncertainty") or {}).get(side)
        return f"{v:,.2f} B/token" + (f" ± {u:,.2f}" if u else " (exact)")
    if r["unit"] == "tokens":
        text = f"{v:{'+' if r['key'] == 'margin_tokens' else ''},.0f} tokens"
        seqs = (r.get("seqs_x_len") or {}).get(side)
        return f"{seqs} = {text}" if seqs else text
    return fact_text(v, r["unit"], sign=r["key"].endswith("margin_bytes"))


def _derived_lines(result: DiffResult, fmt: str, width: int | None) -> list[str]:
    """The views' figures and verdicts beside the facts (``diff`` for people)."""
    if not result.derived:
        return []
    rows = []
    for r in result.derived:
        change = ""
        if r["change"] is not None:
            change = f"{r['change']:+,.2f} B/token" if r["unit"] == "B/token" else \
                fact_text(round(r["change"]), r["unit"], sign=True) if r["unit"] == "bytes" else \
                f"{r['change']:+,.0f} {r['unit']}"
        rows.append({"derived": r["name"], "A": derived_text(r, "a"), "B": derived_text(r, "b"), "change": change,
                     "change %": "" if r["change_pct"] is None else f"{r['change_pct']:+.2f}%"})
    return [render(rows, ["derived", "A", "B", "change", "change %"], fmt, width=width,
                   align_right=("A", "B", "change", "change %"), flexible=("derived", "A", "B")), ""]


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
    lines += [f"note: {n}" for n in result.notices] + ([""] if result.notices else [])
    if a.outcome != b.outcome:
        lines += [f"outcome: {a.outcome} -> {b.outcome}", ""]
    if result.shape:
        rows = [{"shape": r["key"], "A": shape_text(r["key"], r["a"]), "B": shape_text(r["key"], r["b"])}
                for r in result.shape]
        lines += [render(rows, ["shape", "A", "B"], fmt, width=width, flexible=("A", "B")), ""]
    n = len(result.one_sided)
    if n and not any(r["key"] in result.one_sided for r in result.shape):
        lines += [f"{n} shape key{'s' if n != 1 else ''} printed on one side only (--all lists them)", ""]
    lines += _derived_lines(result, fmt, width)
    if result.facts:
        rows = _fact_rows(result)
        lines += [render(rows, ["fact", "A", "B", "change", "change %"], fmt, width=width,
                         align_right=("A", "B", "change", "change %"), flexible=("A", "B")), ""]
    if result.failures:
        f = result.failures[0]
        lines += [f"failures: {f['a']} -> {f['b']}", ""]
    if not (result.shape or result.facts or result.failures or result.derived):
        lines.append("no differences (use --all to list every row)")
    return "\n".join(lines).rstrip()


def _js(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True)
