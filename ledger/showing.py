"""``ledger show``: one boot for people — facts with their evidence, shape, failures."""

from __future__ import annotations

import json
from typing import Any

from .output import figures_text, human, render


def _value(value: Any, unit: str) -> str:
    return human(value, unit, show_unit=True)


def render_show(obj: dict[str, Any]) -> str:
    src, dep, eng = obj["source"], obj["deploy"], obj["engine"]
    out = [
        f"boot {obj['boot']}: {obj['outcome']}",
        f"  source   {src['path']} lines {src['first_line']}-{src['last_line']} (sha256 {src['sha256'][:12]})",
        f"  deploy   commit {dep['commit'] or '—'}  image {dep['image_digest'] or '—'}  label {dep['label'] or '—'}",
        f"  engine   {eng['name']} {eng['version'] or '(version not printed)'}"
        + (f" commit {eng['commit']}" if eng["commit"] else ""),
        f"  started  {obj['started_at'] or '—'}",
        f"  serving  {obj['runtime']['engine_stats']} stats intervals, {obj['runtime']['spec_decode']} "
        f"spec-decode reports, {obj['access_lines']} access lines, {obj['request_lines']} request lines",
        "",
    ]
    if obj["facts"]:
        rows = [{"fact": f["name"] + (f" [{f['pack']}]" if f.get("pack") else ""),
                 "value": _value(f["value"], f["unit"]),
                 "rank": "" if f["rank"] is None else f["rank"], "line": f["line"],
                 "evidence": f["text"].split("\n")[0].strip()[:160]} for f in obj["facts"]]
        out += ["facts", render(rows, ["fact", "value", "rank", "line", "evidence"]), ""]
    else:
        out += ["facts: none printed in this log", ""]
    if obj["shape"]:
        rows = [{"key": k, "value": _clip(v if isinstance(v, str) else json.dumps(v)),
                 "from": obj["shape_sources"].get(k, "")}
                for k, v in sorted(obj["shape"].items())]
        out += ["shape", render(rows, ["key", "value", "from"]), ""]
    if obj["failures"]:
        rows = []
        for f in obj["failures"]:
            figures = {k: v for k, v in f.items() if k not in ("kind", "phase", "line", "text", "rank")}
            rows.append({"failure": f["kind"], "phase": f["phase"], "line": f["line"],
                         "figures": figures_text(figures),
                         "evidence": f["text"].split("\n")[0].strip()[:120]})
        out += ["failures", render(rows, ["failure", "phase", "line", "figures", "evidence"]), ""]
    if obj.get("checks"):
        out += ["checks"] + [f"  {c['what']:<18} {c['verdict']:<12} {c['detail']}" for c in obj["checks"]]
    return "\n".join(out).rstrip()


def _clip(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"

