"""The formula's table in the README (section "Reconciliation", "The formula from the model
itself"): every real fixture (and the reconcile fixtures, whose figures are the seed's) that
prints a KV budget, a KV token count or a model, with its ``kv_formula`` verdict once the
configs under ``fixtures/models/`` are recorded.  ``test_readme_formula_table`` holds the
README's copy equal to ``render()``.

A log that prints no model (or no TP, no speculative method) is given one here only where its
source says which (``DEPLOY_SETTINGS``, through ``ledger deploy set D model=… tensor_parallel_size=…
speculative_method=…``), and ``WHY`` says why each verdict that is not ``ok`` is what it is.

    python tests/formula_table.py            # prints the table (docs/guide.md)
    python tests/formula_table.py --readme   # prints the README's compact table
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL, RECONCILE, MODELS = ROOT / "fixtures" / "real", ROOT / "fixtures" / "reconcile", ROOT / "fixtures" / "models"

# the name a log prints -> the config folder under fixtures/models
PRINTED = {
    "/models/Qwen3.6-35B-A3B": "qwen3.6-35b-a3b",
    "~/.cache/huggingface/qwen3.6-27b-autoround-int4": "qwen3.6-27b",
    "meta-llama/Llama-3.2-1B-Instruct": "llama-3.2-1b-instruct",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "zai-org/GLM-4.1V-9B-Thinking": "glm-4.1v-9b-thinking",
}
# what a fixture's log does not print, stated by its source (the fixture header), as deploy settings
DEPLOY_SETTINGS = {
    # header: "model: qwen3.6-27b-autoround-int4 … with DFlash drafter (5 spec tokens)", "gpu: 2x RTX 4090 …, TP=2"
    "008": {"model": "~/.cache/huggingface/qwen3.6-27b-autoround-int4", "tensor_parallel_size": "2",
            "speculative_method": "dflash"},
    "209": {"model": "zai-org/GLM-4.1V-9B-Thinking"},  # header: "unknown GLM-V model"; inferred, see WHY
}
WHY = {
    "008": "the log prints neither TP nor the drafter: the header states TP=2 and a DFlash drafter (5 speculative "
           "tokens), given here as the deploy's settings. Without the drafter the stock arithmetic at TP 2 gives "
           "79,600 tokens (the rule before 0.20.1) or 316,688 (0.20.1 on) for the 67,728 printed, and the "
           "nightly's two figures do not fit the 0.20.1 rule (tokens = concurrency × length: 1.06 × 180,000 "
           "≈ 190,800)",
    "209": "the model is inferred (GLM-4.1V-9B-Thinking, the GLM-V repository's 9B model; vllm-log-lines.md §3.6 E "
           "derived the same 40 × 2 × 128 geometry from these figures), so this row checks the arithmetic, not "
           "the identification",
    "017": "/model is a Qwen3.x GPTQ checkpoint the report does not name (its MTP drafter would make it "
           "unsupported)",
    "rec": "the stock arithmetic without the drafter predicts 1,069,686 tokens for the bf16 boot (−25 %): this "
           "deploy's engine is a fork with side caches (seed: 12,276 attention + 1,563 mamba/side B/token)",
}


def _fixtures() -> list[tuple[str, Path]]:
    real = [(p.name.split("_")[0], p) for p in sorted(REAL.glob("*.log"))]
    rec = [(p.stem, p) for p in sorted(RECONCILE.glob("*.log"))]
    return real + rec


def build(folder: Path) -> str:
    """A SQLite ledger in ``folder`` with every fixture, the configs and the deploy models."""
    from click.testing import CliRunner

    from ledger.cli import main

    db = str(folder / "formula.db")
    env = {"LEDGER_DB": db, "HF_HUB_CACHE": str(folder / "empty-hub"), "HF_HOME": ""}
    runner = CliRunner(env=env)

    def run(*args: str) -> None:
        r = runner.invoke(main, list(args), catch_exceptions=False)
        assert r.exit_code == 0, (args, r.output)

    for key, path in _fixtures():
        run("ingest", "--label", f"fx-{key}", str(path))
    for key, settings in DEPLOY_SETTINGS.items():
        run("deploy", "set", f"fx-{key}", *(f"{k}={v}" for k, v in settings.items()))
    for name, folder_name in PRINTED.items():
        run("model", "add", str(MODELS / folder_name), "--as", name)
    return db


def rows(db: str) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    out = [dict(r) for r in con.execute(
        "SELECT d.label, f.* FROM kv_formula f JOIN deploy d ON d.id = f.deploy_id "
        "WHERE f.budget_bytes IS NOT NULL OR f.measured_tokens IS NOT NULL OR f.model IS NOT NULL "
        "ORDER BY d.label, f.boot_id")]
    con.close()
    return out


def _n(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def render(db: str | None = None) -> str:
    if db is None:
        with tempfile.TemporaryDirectory() as tmp:
            return render(build(Path(tmp)))
    lines = ["| fixture | model | budget (B) | measured tokens | predicted | error | tolerance | verdict | why |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows(db):
        key = r["label"].removeprefix("fx-")
        model = r["model"] or "not printed"
        if "model" in DEPLOY_SETTINGS.get(key, {}):
            model += " (deploy setting)"
        budget = "—" if r["budget_bytes"] is None else (
            f"{r['budget_bytes']:,.0f}"
            + ("" if not r["budget_precision_bytes"] else f" ± {r['budget_precision_bytes'] / 2**30:.3g} GiB"))
        err = "—" if r["relative_error"] is None else f"{r['relative_error'] * 100:+.3f} %"
        tol = "—" if r["tolerance"] is None else f"{r['tolerance'] * 100:.3f} %"
        note = WHY.get("rec" if key.startswith(("bf16-", "fp8-")) else key)
        why = "; ".join(x for x in (r["reason"], note) if x)
        lines.append(f"| {key} | `{model}` | {budget} | {_n(r['measured_tokens'])} | {_n(r['predicted_tokens'])} "
                     f"| {err} | {tol} | {r['verdict']} | {why.replace('|', '/')} |")
    return "\n".join(lines)


def _first_clause(reason: str | None) -> str:
    """A reason's head, for the README: "speculative decoding (dflash)", "sliding-window layers"."""
    return re.split(r": | \(counted", reason)[0] if reason else ""


def _span(rs: list[dict], col: str) -> str:
    vals = sorted(r[col] for r in rs if r[col] is not None)
    return "—" if not vals else _n(vals[0]) if vals[0] == vals[-1] else f"{_n(vals[0])}–{_n(vals[-1])}"


def render_readme(db: str | None = None) -> str:
    """The README's compact table: the rows whose model has a config (``fixtures/models``), the
    rows of one model with one verdict and reason merged (the reconcile boots); the whole table
    with every reason is ``render()``, in docs/guide.md."""
    if db is None:
        with tempfile.TemporaryDirectory() as tmp:
            return render_readme(build(Path(tmp)))
    groups: dict[tuple, list[dict]] = {}
    for r in rows(db):
        if r["geometry"] is not None:
            stated = tuple(DEPLOY_SETTINGS.get(r["label"].removeprefix("fx-"), {}).items())
            groups.setdefault((r["model"], r["verdict"], r["reason"], stated), []).append(r)
    lines = ["| fixture | model | measured tokens | predicted | error (tolerance) | verdict | why |",
             "|---|---|---:|---:|---:|---|---|"]
    for (model, verdict, reason, settings), rs in groups.items():
        keys = [r["label"].removeprefix("fx-") for r in rs]
        real = all(k.isdigit() for k in keys)
        fixture = ", ".join(keys) if real or len(keys) == 1 else f"the {len(keys)} boots of `fixtures/reconcile/`"
        stated = dict(settings)
        shown = f"`{model}`" + (" (deploy setting)" if "model" in stated else "")

        err = "—" if len(rs) > 1 or rs[0]["relative_error"] is None else (
            f"{rs[0]['relative_error'] * 100:+.3f} % ({rs[0]['tolerance'] * 100:.3f} %)")
        shape = ", ".join(f"{k}={v}" for k, v in stated.items() if k != "model")
        why = [_first_clause(reason), shape and f"the header's {shape}, as deploy settings"]
        lines.append(f"| {fixture} | {shown} | {_span(rs, 'measured_tokens')} | {_span(rs, 'predicted_tokens')} | {err} "
                     f"| {verdict} | {'; '.join(x for x in why if x).replace('|', '/') or '—'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ.pop("HF_HOME", None)
    sys.path.insert(0, str(ROOT))
    print(render_readme() if sys.argv[1:] == ["--readme"] else render())
