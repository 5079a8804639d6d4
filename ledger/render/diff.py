"""``ledger diff``: a diff (``ledger.diff.diff``'s result, or its contract object) in a format:
json as it is, csv a row per change, a table or markdown for people (and commit messages)."""

from __future__ import annotations

import json
from typing import Any

from ledger.parsers.units import format_bytes

from .formats import render
from .table import human
from .values import dumps


def diff_rows(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Every changed row, flat (csv): shape keys, then facts, then failures."""
    out = [{"section": "shape", "name": r["key"], "unit": None, "a": r["a"], "b": r["b"], "change": None,
            "change_pct": None} for r in obj["shape"]]
    out += [{"section": "fact", "name": r["name"], "unit": r["unit"], "a": r["a"], "b": r["b"],
             "change": r["change"], "change_pct": r["change_pct"]} for r in obj["facts"]]
    out += [{"section": "failures", "name": "failures", "unit": None, "a": r["a"], "b": r["b"], "change": None,
             "change_pct": None} for r in obj["failures"]]
    return out


def diff_text(result: Any, fmt: str) -> str:
    """``ledger diff --format fmt``: a table fitted to the terminal."""
    from . import terminal

    return render_diff(result, fmt, width=terminal.width() if fmt == "table" else None)


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
    lines = [
        f"A: boot {a['boot']}  {a['deploy']}  vLLM {a['engine'] or '?'}  {a['outcome']}  ({a['source']})",
        f"B: boot {b['boot']}  {b['deploy']}  vLLM {b['engine'] or '?'}  {b['outcome']}  ({b['source']})",
        "",
    ]
    if fmt == "markdown":
        lines = [f"**A** boot {a['boot']} `{a['deploy']}` vLLM {a['engine'] or '?'}, {a['outcome']}  ",
                 f"**B** boot {b['boot']} `{b['deploy']}` vLLM {b['engine'] or '?'}, {b['outcome']}", ""]
    if a["outcome"] != b["outcome"]:
        lines += [f"outcome: {a['outcome']} -> {b['outcome']}", ""]
    if obj['shape']:
        rows = [{"shape": r["key"], "A": _js(r["a"]), "B": _js(r["b"])} for r in obj['shape']]
        lines += [render(rows, ["shape", "A", "B"], fmt, width=width, flexible=("A", "B")), ""]
    if obj['facts']:
        rows = [{"fact": r["name"] + (f" [{r['pack']}]" if r.get("pack") else ""),
                 "A": _human(r["a"], r["unit"]), "B": _human(r["b"], r["unit"]),
                 "change": _human_change(r["change"], r["unit"]),
                 "change %": "" if r["change_pct"] is None else f"{r['change_pct']:+.2f}%"}
                for r in obj['facts']]
        lines += [render(rows, ["fact", "A", "B", "change", "change %"], fmt, width=width,
                         align_right=("A", "B", "change", "change %"), flexible=("fact", "A", "B")), ""]
    if obj['failures']:
        f = obj['failures'][0]
        lines += [f"failures: {f['a']} -> {f['b']}", ""]
    if not (obj['shape'] or obj['facts'] or obj['failures']):
        lines.append("no differences (use --all to list every row)")
    return "\n".join(lines).rstrip()


def _js(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True)
