"""The formula from the model itself, as commands: ``ledger model add`` / ``ledger model list``,
and the ``kv formula`` line ``check``, ``show`` and the web view print for a boot.

The prediction is ``ledger.formula`` (pure) stored by ``ledger.db.formula`` in the boot's
transaction; the ``kv_formula`` view (migration 0009) sets it against the measured tokens.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ledger.parsers.units import format_bytes

from .db.connect import Ledger
from .errors import LedgerError
from .verdicts import CheckLine, kv_line, view_rows


def default_name(path: str) -> str:
    """The name a model is recorded under without ``--as``: ``ORG/NAME`` for a folder in a hub
    cache (``models--ORG--NAME/snapshots/HASH``), else the folder's absolute path (what vLLM
    prints for a local model)."""
    from . import formula as f  # the model's arithmetic: not loaded by the read commands

    p = Path(path).expanduser()
    folder = p.parent if p.name == "config.json" or p.is_file() else p
    return f.repo_id_of_path(str(folder)) or os.path.abspath(folder)


def add_model(ledger: Ledger, path: str, name: str | None = None) -> dict[str, Any]:
    """Record the geometry of the config.json at ``path`` (or in the folder ``path``) under
    ``name``, and predict again every boot of that model, in one transaction; what was recorded
    and the re-predicted boots' verdicts."""
    from . import formula as f
    from .db.formula import boots_of_model, put_geometry, repredict
    from .db.writer import retrying

    try:
        data, sha = f.read_config(path)
        figures = f.model_figures(data)
    except f.ConfigError as exc:
        raise LedgerError(str(exc)) from None
    name = (name or default_name(path)).strip()
    if not name or len(name) > 400:
        raise LedgerError("a model name is 1 to 400 characters (as vLLM prints it: model='…')")
    source = f"model add {os.path.abspath(Path(path).expanduser())}"

    def write() -> tuple[list[int], dict[str, Any] | None]:
        with ledger.writer() as writer, writer.transaction() as cur:
            replaced = put_geometry(writer, cur, name, figures, source, sha)
            ids = boots_of_model(writer, cur, name)
            repredict(writer, cur, ids)
            return ids, replaced

    ids, replaced = retrying(write)
    rows = view_rows(ledger, "kv_formula", ids) if ids else []
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return {"name": name, **_geometry_summary(figures), "source": source, "config_sha256": sha,
            "boots": ids, "verdicts": dict(sorted(counts.items())), "replaced": _replaced(replaced, figures)}


def _replaced(old: dict[str, Any] | None, figures: dict[str, Any]) -> dict[str, Any] | None:
    """The geometry ``model add`` replaced under the same name (None: the name was new): where it
    came from, when, and each summary figure that changed (``{}``: the same geometry)."""
    if old is None:
        return None
    before, after = _geometry_summary(old["figures"]), _geometry_summary(figures)
    return {"source": old["source"], "config_sha256": old["config_sha256"], "added_at": old["added_at"],
            "changed": {k: [before[k], after[k]] for k in after if before.get(k) != after[k]}}


def _geometry_summary(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: figures.get(k) for k in ("layout", "architecture", "layers", "attn_layers", "num_kv_heads",
                                         "head_size", "mamba_layers", "model_dtype", "unsupported")}


MODEL_COLUMNS = ["name", "layout", "layers", "attn_layers", "num_kv_heads", "head_size", "mamba_layers",
                 "model_dtype", "boots", "source", "unsupported", "added_at"]


def list_models(ledger: Ledger) -> list[dict[str, Any]]:
    """Every recorded geometry, with where it came from and how many boots are predicted from it."""
    with ledger.reading() as conn:
        rows = conn.rows(
            "SELECT name, layout, architecture, layers, attn_layers, num_kv_heads, head_size, mamba_layers, "
            "model_dtype, unsupported, source, config_sha256, added_at FROM model_geometry ORDER BY name")
        used: dict[str, int] = dict(conn.tuples("SELECT geometry, COUNT(*) FROM kv_formula_prediction "
                                                "WHERE geometry IS NOT NULL GROUP BY geometry"))
    for r in rows:
        r["boots"] = used.get(r["name"], 0)
    return rows


# -- the check line ---------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x * 100:+.3f}%"


def formula_line(r: dict[str, Any] | None, own_reference: bool = False) -> CheckLine:
    """The ``kv formula`` line of a boot's ``kv_formula`` row."""
    first = " The group's first boot (its own KV reference): this is its check." if own_reference else ""
    if r is None:
        return CheckLine("kv formula", "insufficient", "no prediction stored" + first)
    assumed = f" Assumed: {r['assumed']}." if r.get("assumed") else ""
    if r["verdict"] in ("insufficient", "unsupported") and r["predicted_tokens"] is None:
        return CheckLine("kv formula", r["verdict"], f"{r['reason']}.{assumed}{first}".replace("..", "."))
    precision = "" if not r["budget_precision_bytes"] else f" ± {format_bytes(r['budget_precision_bytes'])}"
    conc = "" if r.get("predicted_concurrency") is None else f", {r['predicted_concurrency']:.2f}x"
    what = (f"predicted {r['predicted_tokens']:,.0f} tokens ({r['predicted_blocks']:,} blocks of "
            f"{r['block_size']}{conc}) from {r['geometry']}'s geometry for {r['budget_bytes']:,.0f} B "
            f"({r['budget_source']}{precision}), tp {r['tensor_parallel_size']}, kv {r['kv_cache_dtype']}, "
            f"max_model_len {r['max_model_len']:,}, vllm {r['engine_version'] or '?'}")
    if r["measured_tokens"] is None:
        return CheckLine("kv formula", "insufficient", f"{what}; {r['reason']}.{assumed}{first}")
    return CheckLine("kv formula", r["verdict"],
                     f"{what}; measured {r['measured_tokens']:,.0f}"
                     + ("" if r.get("measured_concurrency") is None else f" ({r['measured_concurrency']:.2f}x)")
                     + f": {_pct(r['relative_error'])} "
                     f"(tolerance {r['tolerance'] * 100:.3f}%, {r['tolerance_note']}).{assumed}{first}")


def kv_lines(rec: dict[str, Any] | None, formula: dict[str, Any] | None) -> list[CheckLine]:
    """The KV lines of a boot: the reconciliation against its group's reference, and the formula.
    A boot that is its own reference is ``ok`` there by construction: the formula is its check."""
    own = rec is not None and rec.get("ref_boot_id") == rec.get("boot_id")
    if own and rec is not None and rec.get("verdict") == "ok":  # true by construction: not shown as ok
        return [formula_line(formula, own_reference=True)]
    return [kv_line(rec), formula_line(formula, own_reference=own)]


def formula_verdicts(ledger: Ledger, boot_ids: list[int]) -> dict[int, str]:
    """Per boot, the ``kv_formula`` verdict (``history``'s ``formula_check``)."""
    return {r["boot_id"]: r["verdict"] for r in view_rows(ledger, "kv_formula", boot_ids)}


def check_lines_for_boot(ledger: Ledger, boot_id: int) -> list[dict[str, str]]:
    """The verdicts of one boot, as ``ledger show`` and the web view print them: how it ended
    (survival), the KV lines (reconciliation and formula), the capacity contract, the ceilings."""
    from .verdicts import capacity_line, ceiling_lines, survival, survival_line

    rec = view_rows(ledger, "kv_reconciliation", [boot_id])
    form = view_rows(ledger, "kv_formula", [boot_id])
    cap = view_rows(ledger, "capacity_contract", [boot_id])
    ceil = view_rows(ledger, "budget_ceilings", [boot_id])
    lines = [survival_line(survival(ledger, [boot_id]).get(boot_id)),
             *kv_lines(rec[0] if rec else None, form[0] if form else None),
             capacity_line(cap[0] if cap else None), *ceiling_lines(ceil[0] if ceil else None)]
    return [line.__dict__ for line in lines]
