"""``ledger check`` (and the checks of ``ledger show``): the check objects
(``ledger.reconcile.DeployCheck.to_json()``) in a format — json as they are, csv and markdown a
row per verdict, for people one block per deploy, one line per verdict, the detail wrapped
under it to the terminal's width."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

from .terminal import paint

WHAT = 18  # "kv reconciliation " and the other names fit
VERDICT = 13
ROW_COLUMNS = ["deploy", "boot", "outcome", "what", "verdict", "detail"]


def check_lines(lines: Sequence[Any], width: int | None, colour: bool, indent: str = "  ") -> list[str]:
    """``what  verdict  detail`` per check (objects or dicts with those fields); a detail longer
    than the line is wrapped, its continuation indented under the detail column."""
    out = []
    lead = len(indent) + WHAT + 1 + VERDICT
    for line in lines:
        what, verdict, detail = (line["what"], line["verdict"], line["detail"]) if isinstance(line, dict) \
            else (line.what, line.verdict, line.detail)
        shown = paint(verdict, f"{verdict:<{VERDICT}}") if colour else f"{verdict:<{VERDICT}}"
        head = f"{indent}{what:<{WHAT}} {shown}"
        detail = detail or ""
        if width is None or lead + len(detail) <= width or width - lead < 20:
            out.append(f"{head}{detail}".rstrip())
            continue
        wrapped = textwrap.wrap(detail, width - lead, break_on_hyphens=False) or [""]
        out.append(f"{head}{wrapped[0]}")
        out += [" " * lead + w for w in wrapped[1:]]
    return out


def render_checks(results: Sequence[dict[str, Any]], width: int | None, colour: bool) -> str:
    out = []
    for r in results:
        outcome = paint(r["outcome"]) if colour else r["outcome"]
        out.append(f"{r['deploy']}: boot {r['boot']} ({outcome})")
        out += check_lines(r["checks"], width, colour)
    return "\n".join(out)


def check_text(objs: list[dict[str, Any]], fmt: str) -> Iterator[str]:
    """The checks in ``fmt`` (nothing at all for no deploy in jsonl)."""
    from . import json_text, jsonl_text, rows_text, terminal

    if fmt == "json":
        yield json_text(objs)
    elif fmt == "jsonl":
        if objs:
            yield jsonl_text(objs)
    elif fmt in ("csv", "markdown"):
        rows = [{"deploy": o["deploy"], "boot": o["boot"], "outcome": o["outcome"], **c}
                for o in objs for c in o["checks"]]
        yield rows_text(rows, ROW_COLUMNS, fmt)
    elif not objs:
        yield "no boots to check"
    else:
        yield render_checks(objs, terminal.width(), terminal.colour())
