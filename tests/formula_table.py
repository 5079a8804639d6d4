"""The formula's table in the README (section "Reconciliation", "The formula from the model
itself"): every real fixture (and the reconcile fixtures, whose figures are the seed's) that
prints a KV budget, a KV token count or a model, with its ``kv_formula`` verdict once the
configs under ``fixtures/models/`` are recorded.  ``test_readme_formula_table`` holds the
README's copy equal to ``render()``.

A log that prints no model is named here only where its source says which model it booted
(``DEPLOY_MODELS``, through ``ledger deploy set D model=…``), and ``WHY`` says why each verdict
that is not ``ok`` is what it is.

    python tests/formula_table.py   # prints the table
"""

from __future__ import annotations

import os
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
# fixtures whose log prints no model, named from their source (the fixture header)
DEPLOY_MODELS = {
    "008": "~/.cache/huggingface/qwen3.6-27b-autoround-int4",  # header: qwen3.6-27b-autoround-int4 (club-3090)
    "209": "zai-org/GLM-4.1V-9B-Thinking",  # header: "unknown GLM-V model"; inferred, see WHY
}
WHY = {
    "008": "the header says TP=2 and a DFlash drafter (5 speculative tokens) that the excerpt's cut args line "
           "hides: even with TP known, the drafter's KV layers are not in config.json; and the nightly's own "
           "figures disagree (67,728 tokens, but 1.06x × 180,000 = 190,800)",
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
    for key, name in DEPLOY_MODELS.items():
        run("deploy", "set", f"fx-{key}", f"model={name}")
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
        if key in DEPLOY_MODELS:
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


if __name__ == "__main__":
    os.environ.pop("HF_HOME", None)
    sys.path.insert(0, str(ROOT))
    print(render())
