"""The formula from the model itself: model geometries, a stored prediction per boot, and the
``kv_formula`` view that sets it against the measured tokens.

Revision ID: 0009_kv_formula
Revises: 0008_watch
Create Date: 2026-12-01

* ``model_geometry``: a model's geometry under the name the logs print (``ledger model add``, or
  found read-only in the Hugging Face cache or the model path at ingest).
* ``kv_formula_prediction``: per boot, ``allocator.py``'s blocks, tokens (and the range the
  budget's printed precision allows) and concurrency for the boot's own budget and shape, or
  why there is none (``insufficient`` / ``unsupported`` with the reason).  Written in the boot's
  transaction; boots stored before this revision have none until ``ledger model add`` brings
  their model's geometry (the view says so).
* ``kv_formula``: predicted against measured tokens (and the printed concurrency beside the
  predicted one, shown, not judged), tolerance 0.1 % widened by the tokens the
  budget's printed precision allows, verdict ``ok`` / ``off`` / ``insufficient`` /
  ``unsupported`` with the reason.  Plain SQL for SQLite and PostgreSQL alike.
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_kv_formula"
down_revision = "0008_watch"
branch_labels = None
depends_on = None

PREDICTION_COLUMNS = [
    "model", "geometry", "budget_bytes", "budget_source", "budget_precision_bytes", "tensor_parallel_size",
    "pipeline_parallel_size", "block_size", "kv_cache_dtype", "max_model_len", "engine_version", "v0",
    "predicted_blocks", "predicted_tokens", "predicted_tokens_low", "predicted_tokens_high", "predicted_concurrency",
]

# The tolerance is 0.1 % of the prediction, plus the farthest the tokens can be from it anywhere
# in the budget's printed precision (an exact --kv-cache-memory-bytes budget adds nothing).  A
# boot without a stored prediction (stored before this revision) is 'insufficient' and says so.
KV_FORMULA = """
CREATE VIEW kv_formula AS
SELECT
  x.boot_id, x.deploy_id, {cols},
  x.measured_tokens, x.measured_concurrency,
  CASE WHEN x.predicted_tokens > 0 AND x.measured_tokens IS NOT NULL
       THEN (x.measured_tokens - x.predicted_tokens) / x.predicted_tokens END AS relative_error,
  x.tolerance,
  CASE WHEN x.tolerance IS NULL THEN NULL
       WHEN x.tolerance > 0.001 THEN 'widened by the tokens the printed precision of the budget allows'
       ELSE 'exact budget' END AS tolerance_note,
  CASE WHEN x.status = 'unsupported' THEN 'unsupported'
       WHEN x.status IS NULL OR x.status <> 'predicted' OR x.measured_tokens IS NULL THEN 'insufficient'
       WHEN ABS(x.measured_tokens - x.predicted_tokens) <= x.tolerance * x.predicted_tokens THEN 'ok'
       ELSE 'off' END AS verdict,
  CASE WHEN x.status IS NULL THEN 'no prediction stored (the boot predates the formula; ledger model add re-predicts a model''s boots)'
       WHEN x.status <> 'predicted' THEN x.reason
       WHEN x.measured_tokens IS NULL THEN 'the log prints no KV token count to check the prediction against'
       END AS reason,
  x.assumed
FROM (
  SELECT
    b.id AS boot_id, b.deploy_id, p.status, p.reason, p.assumed,
    {pcols},
    CAST(p.predicted_tokens AS DOUBLE PRECISION) AS predicted_tokens,
    (SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'kv_cache_tokens') AS measured_tokens,
    (SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'max_concurrency') AS measured_concurrency,
    CASE WHEN p.predicted_tokens > 0 THEN
      0.001 + CASE WHEN p.predicted_tokens_high - p.predicted_tokens > p.predicted_tokens - p.predicted_tokens_low
                   THEN p.predicted_tokens_high - p.predicted_tokens
                   ELSE p.predicted_tokens - p.predicted_tokens_low END
              / CAST(p.predicted_tokens AS DOUBLE PRECISION) END AS tolerance
  FROM boot b
  LEFT JOIN kv_formula_prediction p ON p.boot_id = b.id
) x
""".format(cols=", ".join(f"x.{c}" for c in PREDICTION_COLUMNS),
           pcols=", ".join(f"p.{c}" for c in PREDICTION_COLUMNS if c != "predicted_tokens"))


def upgrade() -> None:
    op.create_table(
        "model_geometry",
        sa.Column("name", sa.String(400), primary_key=True),
        sa.Column("layout", sa.String(20), nullable=False),
        sa.Column("architecture", sa.String(120)),
        sa.Column("layers", sa.Integer, nullable=False),
        sa.Column("attn_layers", sa.Integer),
        sa.Column("num_kv_heads", sa.Integer),
        sa.Column("head_size", sa.Integer),
        sa.Column("mamba_layers", sa.Integer),
        sa.Column("model_dtype", sa.String(40)),
        sa.Column("unsupported", sa.Text),
        sa.Column("figures", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("config_sha256", sa.String(64)),
        sa.Column("added_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "kv_formula_prediction",
        sa.Column("boot_id", sa.Integer, sa.ForeignKey("boot.id", ondelete="CASCADE"), primary_key=True,
                  autoincrement=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("model", sa.Text),
        sa.Column("geometry", sa.String(400)),
        sa.Column("budget_bytes", sa.Float),
        sa.Column("budget_source", sa.String(40)),
        sa.Column("budget_precision_bytes", sa.Float),
        sa.Column("tensor_parallel_size", sa.Integer),
        sa.Column("pipeline_parallel_size", sa.Integer),
        sa.Column("block_size", sa.Integer),
        sa.Column("kv_cache_dtype", sa.String(40)),
        sa.Column("max_model_len", sa.Integer),
        sa.Column("engine_version", sa.String(80)),
        sa.Column("v0", sa.Boolean),
        sa.Column("predicted_blocks", sa.BigInteger),
        sa.Column("predicted_tokens", sa.BigInteger),
        sa.Column("predicted_tokens_low", sa.BigInteger),
        sa.Column("predicted_tokens_high", sa.BigInteger),
        sa.Column("predicted_concurrency", sa.Float),
        sa.Column("assumed", sa.Text),
    )
    op.execute(KV_FORMULA)


def downgrade() -> None:
    op.execute("DROP VIEW kv_formula")
    op.drop_table("kv_formula_prediction")
    op.drop_table("model_geometry")
