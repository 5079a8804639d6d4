"""What the reconciliation views derive for a boot, in one object: the KV budget and where it
came from, bytes per KV token per rank (exact or ± its printed precision), the capacity contract
(max_num_seqs x max_model_len) and its margin in tokens and bytes, the VRAM and host ceilings
and their margins, and every verdict (how the boot ended among them).  ``ledger note`` and
``ledger diff`` print these beside the facts; the arithmetic stays in the views
(``ledger.verdicts``), nothing is computed twice.
"""

from __future__ import annotations

from typing import Any

from .db.connect import Ledger
from .db.reader import in_list
from .verdicts import survival_verdict, view_rows

# (key, what people read, unit): the derived figures diff and note compare, in their order
FIGURES = (
    ("bytes_per_token", "KV bytes per token (per rank)", "B/token"),
    ("kv_budget_bytes", "KV pool per rank", "bytes"),
    ("kv_cache_tokens", "KV tokens", "tokens"),
    ("contract_tokens", "capacity contract (seqs x max-model-len)", "tokens"),
    ("margin_tokens", "contract margin", "tokens"),
    ("margin_bytes", "contract margin (bytes)", "bytes"),
    ("vram_margin_bytes", "VRAM ceiling margin", "bytes"),
    ("host_margin_bytes", "host ceiling margin", "bytes"),
)
VERDICTS = (("survival", "survival"), ("kv", "kv reconciliation"), ("capacity", "capacity contract"),
            ("vram", "vram ceiling"), ("host", "host ceiling"))


def boot_derived(ledger: Ledger, boot_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Per boot, the views' figures (None where the view had no inputs) and its verdicts."""
    out: dict[int, dict[str, Any]] = {bid: {k: None for k, _, _ in FIGURES} | {"verdicts": {}} for bid in boot_ids}
    for bid, (outcome, ended) in _outcomes(ledger, boot_ids).items():  # how it ended
        out[bid]["verdicts"]["survival"] = survival_verdict(outcome, ended)
    for r in view_rows(ledger, "boot_kv", boot_ids):
        o = out[r["boot_id"]]
        o.update(kv_budget_bytes=r["kv_budget_bytes"], kv_budget_source=r["kv_budget_source"],
                 kv_budget_precision_bytes=r["kv_budget_precision_bytes"], kv_cache_tokens=r["kv_cache_tokens"],
                 max_num_seqs=r["max_num_seqs"], max_model_len=r["max_model_len"], group_key=r["group_key"],
                 kv_cache_memory_bytes=r["kv_cache_memory_bytes"],
                 # --kv-cache-memory-bytes asked, and a printed pool that says the engine did otherwise
                 kv_argument_ignored=bool(r.get("kv_argument_ignored")))
    for r in view_rows(ledger, "kv_cost_per_token", boot_ids):
        out[r["boot_id"]].update(bytes_per_token=r["bytes_per_token"],
                                 bytes_per_token_uncertainty=r["bytes_per_token_uncertainty"],
                                 uncertainty_from=r["uncertainty_from"])
    for r in view_rows(ledger, "kv_reconciliation", boot_ids):
        o = out[r["boot_id"]]
        o["verdicts"]["kv"] = r["verdict"]
        o.update(ref_boot_id=r["ref_boot_id"], ref_chosen_by=r["ref_chosen_by"], predicted_tokens=r["predicted_tokens"],
                 relative_error=r["relative_error"], tolerance=r["tolerance"])
    for r in view_rows(ledger, "capacity_contract", boot_ids):
        o = out[r["boot_id"]]
        o["verdicts"]["capacity"] = r["verdict"]
        o.update(contract_tokens=r["contract_tokens"], margin_tokens=r["margin_tokens"], margin_bytes=r["margin_bytes"])
    for r in view_rows(ledger, "budget_ceilings", boot_ids):
        o = out[r["boot_id"]]
        o["verdicts"]["vram"], o["verdicts"]["host"] = r["vram_verdict"], r["host_verdict"]
        o.update(weights_bytes=r["weights_bytes"], weights_source=r["weights_source"], vram_bytes=r["vram_bytes"],
                 card_ceiling_bytes=r["card_ceiling_bytes"], card_ceiling_source=r["card_ceiling_source"],
                 vram_margin_bytes=r["vram_margin_bytes"], host_pinned_bytes=r["host_pinned_bytes"],
                 host_cap_bytes=r["host_cap_bytes"], host_margin_bytes=r["host_margin_bytes"])
    for o in out.values():
        for key in ("kv_budget_bytes", "kv_cache_tokens", "contract_tokens", "margin_tokens", "vram_margin_bytes",
                    "host_margin_bytes", "kv_cache_memory_bytes"):
            v = o.get(key)
            if isinstance(v, float) and v.is_integer():
                o[key] = int(v)
    return out


def _outcomes(ledger: Ledger, boot_ids: list[int]) -> dict[int, tuple[str, str | None]]:
    if not boot_ids:
        return {}
    params: dict[str, Any] = {}
    with ledger.reading() as r:
        return {bid: (outcome, ended) for bid, outcome, ended in r.tuples(
            f"SELECT id, outcome, ended FROM boot WHERE id IN {in_list('ids', list(boot_ids), params)}", params)}
