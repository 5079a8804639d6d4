"""Golden expectations for the real fixtures: what each file prints, boot by boot.

A golden file (``fixtures/real/NAME.golden.json``) is written by hand against the log, or
drafted with ``python tests/golden.py --draft fixtures/real/NAME.log`` and then checked line by
line against the log before it is committed.  The draft never overwrites a golden.

``observed(path)`` turns the parser's output into the golden's shape; the tests compare the two
in full, so a figure that is wrong, missing or invented fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real"
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # run as a script from a checkout; tests use the installed package

from ledger import parsers  # noqa: E402


def golden_path(log: Path) -> Path:
    return log.with_name(log.stem + ".golden.json")


def _num(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer() and abs(v) > 1e6:
        return int(v)
    return v


def observed(log: Path) -> dict[str, Any]:
    boots = parsers.parse_source(parsers.Source(str(log)), default_year=None).boots
    out = []
    for b in boots:
        out.append({
            "lines": [b.first_line, b.last_line],
            "outcome": b.outcome,
            "engine": {"version": b.engine_version, "commit": b.engine_commit},
            "image_digests": b.image_digests,
            "started": None if b.started_printed is None else {"printed": b.started_printed, "year": b.started_year},
            "facts": [
                {"name": f.name, "printed": f.printed, "value": _num(f.value), "line": f.line, "rank": f.rank}
                for f in b.facts
            ],
            "failures": [
                {"kind": f.kind, "phase": f.phase, "line": f.line, "rank": f.rank,
                 "figures": {k: _num(v) for k, v in f.figures.items()}}
                for f in b.failures
            ],
            "shape": {k: {"value": v.value, "source": v.source, "line": v.line} for k, v in b.shape.items()},
            "runtime": {
                "samples": [{"kind": s.kind, "line": s.line, "engine": s.engine, "values": s.values}
                            for s in b.runtime],
                "access_lines": b.access_lines,
                "request_lines": b.request_lines,
            },
        })
    return {"log": log.name, "boots": out}


def load(log: Path) -> dict[str, Any]:
    return json.loads(golden_path(log).read_text())


def dumps(obj: dict[str, Any]) -> str:
    """One fact / failure / sample per line, so a reviewer reads it next to the log."""
    lines = ["{", f'  "log": {json.dumps(obj["log"])},']
    if obj.get("notes"):
        lines.append('  "notes": [')
        lines.append(",\n".join(f"    {json.dumps(n)}" for n in obj["notes"]))
        lines.append("  ],")
    if "unreadable" in obj:
        lines.append(f'  "unreadable": {json.dumps(obj["unreadable"])},')
    lines.append('  "boots": [')
    boots = []
    for b in obj["boots"]:
        parts = ["    {"]
        for key in ("lines", "outcome", "engine", "image_digests", "started"):
            parts.append(f'      "{key}": {json.dumps(b[key])},')
        for key in ("facts", "failures"):
            items = b[key]
            if not items:
                parts.append(f'      "{key}": [],')
            else:
                parts.append(f'      "{key}": [')
                parts.append(",\n".join(f"        {json.dumps(i)}" for i in items))
                parts.append("      ],")
        shape = b["shape"]
        if not shape:
            parts.append('      "shape": {},')
        else:
            parts.append('      "shape": {')
            parts.append(",\n".join(f"        {json.dumps(k)}: {json.dumps(v)}" for k, v in shape.items()))
            parts.append("      },")
        rt = b["runtime"]
        parts.append('      "runtime": {')
        if rt["samples"]:
            parts.append('        "samples": [')
            parts.append(",\n".join(f"          {json.dumps(s)}" for s in rt["samples"]))
            parts.append("        ],")
        else:
            parts.append('        "samples": [],')
        parts.append(f'        "access_lines": {rt["access_lines"]},')
        parts.append(f'        "request_lines": {rt["request_lines"]}')
        parts.append("      }")
        parts.append("    }")
        boots.append("\n".join(parts))
    lines.append(",\n".join(boots))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--draft", nargs="+", type=Path, required=True)
    ap.add_argument("--write", action="store_true", help="write drafts for logs that have no golden yet")
    args = ap.parse_args()
    for log in args.draft:
        text = dumps(observed(log))
        target = golden_path(log)
        if args.write and not target.exists():
            target.write_text(text)
            print(f"drafted {target}")
        elif args.write:
            print(f"kept {target} (exists)")
        else:
            sys.stdout.write(text)
