"""``ledger sweep`` in words: a row per boot in every format of the output contract (json: the
whole report, rows and frontier; jsonl and csv: the rows), and for people (table, markdown) the
frontier line under the rows and what was left out.  A rung that passed boot and crashed at
runtime is a failing rung, said as such ("passed boot, crashed at runtime after 0:03:41: oom")."""

from __future__ import annotations

from typing import Any

from ledger.parsers.units import format_bytes

from . import json_text, rows_text
from .survival import survival_brief
from .table import cell

COLUMNS = ["boot", "deploy", "value", "outcome", "failure", "kv_tokens", "concurrency", "contract_tokens",
           "margin_tokens", "decode_tps"]
HEADERS = {"kv_tokens": "KV tokens", "contract_tokens": "contract", "margin_tokens": "margin",
           "decode_tps": "decode", "concurrency": "conc"}


def value_text(value: Any, knob: str) -> str:
    if value is None:
        return "—"
    if knob.endswith("_bytes") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{format_bytes(value)} ({value:,} B)"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return cell(value)


def _human(knob: str):
    def human(r: dict[str, Any]) -> dict[str, Any]:
        h = dict(r)
        h["value"] = value_text(r["value"], knob)
        h["outcome"] = outcome_text(r["outcome"])
        h["failure"] = r["failure"] or ""
        h["kv_tokens"] = f"{r['kv_tokens']:,} tokens" if r["kv_tokens"] is not None else "—"
        h["concurrency"] = f"{r['concurrency']:.2f}x" if r["concurrency"] is not None else "—"
        h["contract_tokens"] = f"{r['contract_tokens']:,} tokens" if r["contract_tokens"] is not None else "—"
        h["margin_tokens"] = f"{r['margin_tokens']:+,} tokens" if r["margin_tokens"] is not None else "—"
        h["decode_tps"] = f"{r['decode_tps']:.1f} t/s" if r["decode_tps"] is not None else "—"
        return h
    return human


def outcome_text(outcome: str) -> str:
    """A row's outcome for people: whether it came up, and whether it then crashed."""
    return {"ready": "ready", "crashed": "crashed (passed boot)"}.get(outcome, f"{outcome} (did not come up)")


def _failing_text(obj: dict[str, Any]) -> str:
    """Why the smallest failing value failed: ``oom@kv_alloc``, or for a rung that came up and
    then crashed ``passed boot, crashed at runtime after 0:03:41: oom``."""
    f = obj["frontier"]
    row = next((r for r in obj["rows"] if r["boot"] == f["smallest_failing_boot"]), None)
    if f.get("smallest_failing_outcome") == "crashed" and row is not None and row.get("survival"):
        return "passed boot, " + survival_brief(row["survival"])
    return f["smallest_failing_failure"] or "failed"


def frontier_text(obj: dict[str, Any]) -> str:
    f, knob = obj["frontier"], obj["knob"]
    if f.get("varies") is False:
        others = list(obj["also_varies"])
        every = "in every boot" if f.get("boots", 2) > 1 else "in the one boot"
        text = f"frontier: none: {knob} does not vary ({value_text(f.get('value'), knob)} {every})"
        if others:
            text += f"; {' and '.join(others)} do{'es' if len(others) == 1 else ''} (ledger sweep {others[0]})"
        return text
    if f["largest_passing"] is None and f["smallest_failing"] is None:
        return f"frontier: insufficient (no boot with a numeric {knob})"
    parts = []
    if f["largest_passing"] is not None:
        parts.append(f"largest passing {value_text(f['largest_passing'], knob)} (boot {f['largest_passing_boot']})")
    else:
        parts.append("no value passed")
    if f["smallest_failing"] is not None:
        parts.append(f"smallest failing {value_text(f['smallest_failing'], knob)} "
                     f"({_failing_text(obj)}, boot {f['smallest_failing_boot']})")
    else:
        parts.append("no value failed")
    text = "frontier: " + "; ".join(parts)
    if f["monotone"] is False:
        text += (" — not monotone: one value both passed and failed" if f["smallest_failing"] == f["largest_passing"]
                 else " — not monotone: a smaller value failed than one that passed")
    return text


def render_sweep(sweep: Any, fmt: str = "table") -> str:
    """``sweep`` (a ``ledger.sweep.Sweep``) in ``fmt`` (``ledger.render.FORMATS``)."""
    obj = sweep.to_json()
    if fmt == "json":
        return json_text(obj)
    columns = COLUMNS if fmt not in ("csv", "jsonl") else ["boot", "deploy", "value", "outcome", "passed", "failure",
                                                          "kv_tokens", "concurrency", "contract_tokens",
                                                          "margin_tokens", "contract", "decode_tps", "started_at", "came_up"]
    headers = {**HEADERS, "value": obj["knob"]}
    body = rows_text(obj["rows"], columns, fmt, human=_human(obj["knob"]), headers=headers if fmt in ("table", "markdown") else None,
                     align_right=("value", "kv_tokens", "concurrency", "contract_tokens", "margin_tokens", "decode_tps"),
                     flexible=("deploy",), coloured=("outcome",))
    if fmt not in ("table", "markdown"):
        return body
    tail = [frontier_text(obj)]
    if obj["group_key"]:
        tail.append(f"group: {obj['group_key']}")
    for k, values in obj["also_varies"].items():
        shown = ", ".join("not printed" if v is None else value_text(v, k) for v in values)
        tail.append(f"also varies: {k} ({shown}); the rows differ by more than {obj['knob']}")
    for why, n in obj["skipped"].items():
        tail.append(f"left out: {n} boot{'s' if n != 1 else ''} ({why})")
    sep = "\n\n" if fmt == "markdown" else "\n"
    return body + "\n\n" + sep.join(tail)
