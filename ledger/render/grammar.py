"""``ledger grammar list`` and ``ledger grammar check``: the grammars in use, and a pack's
check (``ledger.grammar.check_pack``'s object) — json the whole object, jsonl and csv the
unclaimed lines (what is left to write rules for), for people per rule its matches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

LIST_COLUMNS = ["pack", "rules", "from", "path", "description"]


def list_text(rows: list[dict[str, Any]], bundled: list[str], fmt: str) -> Iterator[str]:
    from . import rows_text

    yield rows_text(rows, LIST_COLUMNS, fmt, flexible=("path", "description"))
    if bundled and fmt in ("table", "markdown"):
        yield f"\nbundled packs (use with --grammar NAME): {', '.join(bundled)}"


def check_text(report: dict[str, Any], fmt: str, max_unclaimed: int) -> Iterator[str]:
    from . import json_text, rows_text

    unclaimed = report["unclaimed"]
    if fmt == "json":
        yield json_text(report)
        return
    if fmt in ("jsonl", "csv"):  # the unclaimed lines: what is left to write rules for
        yield rows_text(unclaimed, ["log", "line", "text"], fmt)
        return
    if report["path"] is None:
        yield "the built-in vLLM grammar alone (no pack)"
    else:
        yield f"pack {report['pack']} ({report['path']}): {report['rules']} rules, every sample matches"
    logs = report["logs"]
    if not logs:
        return
    yield f"{report['lines']} lines read from {len(logs)} log{'s' if len(logs) != 1 else ''}"
    rules = report["matches"]
    shown = [{"rule": r["rule"], "anchor": repr(r["anchor"]), "matched": r["matched"],
              "first match": "" if r["first_match"] is None else
              f"{r['first_match']['log']}:{r['first_match']['line']}  "
              + ", ".join(f"{k}={v}" for k, v in r["first_match"]["values"].items())} for r in rules]
    if shown:
        yield "\n" + rows_text(shown, ["rule", "anchor", "matched", "first match"], fmt,
                               flexible=("first match", "anchor"))
    unmatched = [r["rule"] for r in rules if r["matched"] == 0]
    if unmatched:
        yield f"\nrules that matched nothing: {', '.join(map(str, unmatched))}"
    yield f"\nunclaimed lines with figures: {len(unclaimed)}"
    for u in unclaimed[:max_unclaimed]:
        yield f"  {u['log']}:{u['line']}: {u['text'].strip()[:200]}"
    if len(unclaimed) > max_unclaimed:
        yield f"  … {len(unclaimed) - max_unclaimed} more (--unclaimed N shows more)"
