"""``ledger predict``: a prediction (``ledger.reconcile.Prediction.to_json()``) in a format:
json as it is, for people a line per figure and the contract's verdict; then each boot of the
shape that failed or crashed, and the verdict they make."""

from __future__ import annotations

from typing import Any

from ledger.parsers.units import format_bytes

from .survival import survival_brief
from .values import document


def render_prediction(p: dict[str, Any]) -> str:
    out = [f"cost         {p['bytes_per_token']:,.2f} B/token ({p['cost_from']})" if p["bytes_per_token"] else "",
           f"budget       {p['budget_bytes']:,.0f} B ({format_bytes(p['budget_bytes'])})",
           f"tokens       {p['tokens']:,}" + (f" in {p['num_blocks']:,} blocks" if p["num_blocks"] is not None else "")]
    if p["concurrency"] is not None:
        out.append(f"concurrency  {p['concurrency']:.2f}x at {p['max_model_len']:,} tokens per request")
    if p["contract_tokens"] is not None:
        mb = "" if p["margin_bytes"] is None else f" ({format_bytes(p['margin_bytes'])}, {p['margin_bytes']:,.0f} B)"
        out.append(f"contract     {p['max_num_seqs']} x {p['max_model_len']:,} = {p['contract_tokens']:,} tokens: "
                   f"margin {p['margin_tokens']:+,} tokens{mb} — {p['contract_verdict']}")
    for f in p["shape_failures"]:
        since = f"; boot {f['answered_by']} of this shape came up since" if f["answered_by"] else ""
        out.append(f"shape        {p['max_num_seqs']} x {p['max_model_len']:,}: {survival_brief(f)} "
                   f"(boot {f['boot']}{since})")
    if p["verdict"] != p["contract_verdict"]:
        why = "crashed at runtime" if p["verdict"] == "crashed" else "did not come up"
        held = "the contract's arithmetic holds, but " if p["contract_verdict"] == "ok" else ""
        out.append(f"verdict      {p['verdict']}: {held}a boot of this shape {why}")
    out += [f"note         {n}" for n in p["notes"]]
    from .terminal import width
    from .wrap import wrap_labelled

    return "\n".join(wrap_labelled((line for line in out if line), width()))


def prediction_text(p: dict[str, Any], fmt: str) -> str:
    return document(p, fmt, render_prediction)
