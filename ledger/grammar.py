"""``ledger grammar``: the grammars in use and a pack's check over logs, as contract objects
(``ledger.render.grammar`` words them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def grammars(extra: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The built-in vLLM grammar and every pack found (``extra`` too, as ingest would load it)."""
    from ledger.parsers.packs import discover
    from ledger.parsers.vllm import BUILTIN_RULES

    rows: list[dict[str, Any]] = [{"pack": "vllm", "rules": len(BUILTIN_RULES), "from": "built-in", "path": None,
                                   "description": "upstream vLLM 0.2.7-0.33"}]
    for p in discover(extra):
        rows.append({"pack": p.name, "rules": len(p.rules), "from": p.origin, "path": str(p.path),
                     "description": p.description or None})
    return rows


def bundled() -> list[str]:
    """The names of the packs that come with ledger (``--grammar NAME``)."""
    from ledger.parsers.packs import BUNDLED_DIR

    return sorted(x.stem for x in BUNDLED_DIR.glob("*.toml"))


def check_pack(pack: str, logs: list[str]) -> dict[str, Any]:
    """Load ``pack`` (``vllm``: the built-in grammar alone), run it over ``logs``: per rule its
    matches and first match, and the lines nobody reads that carry figures."""
    from ledger.parsers.packs import Pack, check, load_pack, resolve

    if pack == "vllm":  # the built-in grammar alone: what does it leave unread?
        from ledger.parsers.vllm import check_samples

        check_samples()  # every built-in rule still reads its samples, as a pack's are checked at load
        p = Pack("vllm", "built-in", Path("(built-in)"), "built-in")
    else:
        p = load_pack(resolve(pack))
    report = check(p, list(logs)) if logs else None
    rules: list[dict[str, Any]] = []
    for i, h in enumerate(report.hits if report else [], start=1):
        log, line, values = h.first if h.first else (None, None, None)
        rules.append({"rule": i, "anchor": h.rule.anchor, "matched": h.count,
                      "first_match": None if log is None else {"log": log, "line": line, "values": values}})
    unclaimed: list[dict[str, Any]] = [{"log": log, "line": number, "text": raw.rstrip("\n")}
                                       for log, number, raw in (report.unclaimed if report else [])]
    return {"pack": p.name, "path": None if pack == "vllm" else str(p.path), "rules": len(p.rules),
            "logs": list(logs), "lines": report.lines if report else 0, "matches": rules, "unclaimed": unclaimed}
