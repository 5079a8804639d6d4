"""``ledger model add`` and ``ledger model list`` for people: what geometry was recorded, where
it came from, and the verdicts of the boots predicted again from it."""

from __future__ import annotations

from typing import Any


def geometry_text(g: dict[str, Any]) -> str:
    """``uniform: 32 attention layers, 8 KV heads x 128, bfloat16`` (or why it is unsupported)."""
    if g.get("layout") == "unsupported":
        return f"unsupported: {g.get('unsupported')}"
    layers = f"{g.get('attn_layers')} attention layers"
    if g.get("mamba_layers"):
        layers += f" + {g['mamba_layers']} linear-attention (gated delta net)"
    heads = "1 latent head" if g.get("layout") == "mla" else f"{g.get('num_kv_heads')} KV heads"
    return f"{g.get('layout')}: {layers}, {heads} x {g.get('head_size')}, {g.get('model_dtype')}"


def render_model_added(obj: dict[str, Any]) -> str:
    boots = obj["boots"]
    verdicts = ", ".join(f"{v} {n}" for v, n in obj["verdicts"].items())
    again = (f"{len(boots)} boot{'s' if len(boots) != 1 else ''} predicted again ({verdicts}): "
             + ", ".join(str(b) for b in boots[:20]) + (" …" if len(boots) > 20 else "")) if boots else \
        "no boot of this model in the ledger yet"
    lines = [f"model {obj['name']}", f"  geometry  {geometry_text(obj)}", f"  from      {obj['source']}"]
    old = obj.get("replaced")
    if old is not None:
        changed = "; ".join(f"{k} {'—' if a is None else a} -> {'—' if b is None else b}"
                            for k, (a, b) in old["changed"].items()) or "the same geometry"
        lines.append(f"  replaces  the geometry from {old['source']} ({old['added_at']}): {changed}")
    return "\n".join([*lines, f"  boots     {again}"])


def human_model(row: dict[str, Any]) -> dict[str, Any]:
    """A ``model list`` row for the terminal: empty cells for what the layout does not have."""
    return {k: ("" if v is None else v) for k, v in row.items()}


def models_text(rows: list[dict[str, Any]], fmt: str, every: list[str]) -> str:
    """``ledger model list``: for people the geometry's figures and where it came from; csv and
    JSON ``every`` column (``kvformula.MODEL_COLUMNS``)."""
    from . import rows_text

    people = fmt in ("table", "markdown")
    if people and not rows:
        return "no model geometry recorded (ledger model add PATH)"
    cols = ["name", "layout", "layers", "attn_layers", "num_kv_heads", "head_size", "mamba_layers", "model_dtype",
            "boots", "source"] if people else [*every, "architecture", "config_sha256"]
    return rows_text(rows, cols, fmt, human=human_model, flexible=("name", "source"))
