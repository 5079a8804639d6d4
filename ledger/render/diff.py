"""``ledger diff``: a diff (``ledger.diff.diff``'s result, or its contract object) in a format:
json as it is, csv a row per change, a table or markdown for people (and commit messages)."""

from __future__ import annotations

import json
from typing import Any

from ledger.parsers.units import format_bytes

from .formats import render
from .values import dumps


def diff_rows(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Every changed row, flat (csv): shape keys, then facts, then failures."""
    out = [{"section": "shape", "name": r["key"], "unit": None, "a": r["a"], "b": r["b"], "change": None,
            "change_pct": None} for r in obj["shape"]]
    out += [{"section": "fact", "name": r["name"], "unit": r["unit"], "a": r["a"], "b": r["b"],
             "change": r["change"], "change_pct": r["change_pct"]} for r in obj["facts"]]
    out += [{"section": "failures", "name": "failures", "unit": None, "a": r["a"], "b": r["b"], "change": None,
             "change_pct": None} for r in obj["failures"]]
    out += [{"section": "derived", "name": r["key"], "unit": r["unit"], "a": r["a"], "b": r["b"],
             "change": r["change"], "change_pct": r["change_pct"]} for r in obj.get("derived") or []]
    return out


def diff_text(result: Any, fmt: str, redact: bool = True) -> str:
    """``ledger diff --format fmt``: a table fitted to the terminal; every format redacted
    (``ledger.render.redact``) unless told not to."""
    from . import terminal
    from .redact import redactor

    obj = redactor(redact)(result.to_json() if hasattr(result, "to_json") else result)
    return render_diff(obj, fmt, width=terminal.width() if fmt == "table" else None)


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


def _fact_rows(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"fact": r["name"] + (f" [{r['pack']}]" if r.get("pack") else ""),
             "A": fact_text(r["a"], r["unit"], r.get("precision")), "B": fact_text(r["b"], r["unit"], r.get("precision")),
             "change": "" if r["change"] is None else fact_text(r["change"], r["unit"], r.get("precision"), sign=True),
             "change %": "" if r["change_pct"] is None else f"{r['change_pct']:+.2f}%"}
            for r in obj["facts"]]


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


def _derived_lines(obj: dict[str, Any], fmt: str, width: int | None) -> list[str]:
    """The views' figures and verdicts beside the facts (``diff`` for people)."""
    if not obj["derived"]:
        return []
    rows = []
    for r in obj["derived"]:
        change = ""
        if r["change"] is not None:
            change = f"{r['change']:+,.2f} B/token" if r["unit"] == "B/token" else \
                fact_text(round(r["change"]), r["unit"], sign=True) if r["unit"] == "bytes" else \
                f"{r['change']:+,.0f} {r['unit']}"
        rows.append({"derived": r["name"], "A": derived_text(r, "a"), "B": derived_text(r, "b"), "change": change,
                     "change %": "" if r["change_pct"] is None else f"{r['change_pct']:+.2f}%"})
    return [render(rows, ["derived", "A", "B", "change", "change %"], fmt, width=width,
                   align_right=("A", "B", "change", "change %"), flexible=("derived", "A", "B")), ""]


def render_diff(result: Any, fmt: str = "table", width: int | None = None) -> str:
    """The diff (its contract object, or the ``DiffResult``) in ``fmt`` (every format of the
    output contract); a table is fitted to ``width``."""
    obj = result.to_json() if hasattr(result, "to_json") else result
    if fmt == "json":
        return dumps(obj, indent=2)
    if fmt == "jsonl":
        return dumps(obj)
    if fmt == "csv":
        return render(diff_rows(obj), ["section", "name", "unit", "a", "b", "change", "change_pct"], "csv")
    a, b = obj["a"], obj["b"]
    from .wrap import wrap_parts

    lines = [
        wrap_parts([f"A: boot {a['boot']}", a["deploy"], f"vLLM {a['engine'] or '?'}", a["outcome"], f"({a['source']})"],
                   width),
        wrap_parts([f"B: boot {b['boot']}", b["deploy"], f"vLLM {b['engine'] or '?'}", b["outcome"], f"({b['source']})"],
                   width),
        "",
    ]
    if fmt == "markdown":
        lines = [f"**A** boot {a['boot']} `{a['deploy']}` vLLM {a['engine'] or '?'}, {a['outcome']}  ",
                 f"**B** boot {b['boot']} `{b['deploy']}` vLLM {b['engine'] or '?'}, {b['outcome']}", ""]
    notices = obj.get("notices") or []
    lines += [f"note: {n}" for n in notices] + ([""] if notices else [])
    if a["outcome"] != b["outcome"]:
        lines += [f"outcome: {a['outcome']} -> {b['outcome']}", ""]
    if obj["shape"]:
        rows = [{"shape": r["key"], "A": shape_text(r["key"], r["a"]), "B": shape_text(r["key"], r["b"])}
                for r in obj["shape"]]
        lines += [render(rows, ["shape", "A", "B"], fmt, width=width, flexible=("A", "B")), ""]
    one_sided = obj.get("one_sided_keys") or []
    n = len(one_sided)
    if n and not any(r["key"] in one_sided for r in obj["shape"]):
        lines += [f"{n} shape key{'s' if n != 1 else ''} printed on one side only (--all lists them)", ""]
    lines += _derived_lines(obj, fmt, width)
    if obj["facts"]:
        rows = _fact_rows(obj)
        lines += [render(rows, ["fact", "A", "B", "change", "change %"], fmt, width=width,
                         align_right=("A", "B", "change", "change %"), flexible=("A", "B")), ""]
    if obj["failures"]:
        f = obj["failures"][0]
        lines += [f"failures: {f['a']} -> {f['b']}", ""]
    if not (obj["shape"] or obj["facts"] or obj["failures"] or obj["derived"]):
        lines.append("no differences (use --all to list every row)")
    return "\n".join(lines).rstrip()


def _js(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True)
