"""Reconciliation: shape values as plain text, deploy settings, and the views that check
formula predictions against measured boots.

Revision ID: 0002_reconciliation
Revises: 0001_initial
Create Date: 2026-11-29

The views are plain SQL that runs on SQLite and PostgreSQL alike (CASE, COALESCE, window
functions; no JSON functions, no FLOOR), so the same migration serves both.
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0002_reconciliation"
down_revision = "0001_initial"
branch_labels = None
depends_on = None

# One row per boot: the shape keys and the summary facts reconciliation needs.  Capacities take
# the smallest rank (the engine sizes by it), costs the largest; a budget figure's precision is
# the coarsest printed one.
BOOT_FIGURES = """
CREATE VIEW boot_figures AS
SELECT
  b.id AS boot_id, b.deploy_id, b.outcome, b.started_at, b.engine_version,
  s_model.value_text AS model,
  s_dtype.value_text AS kv_cache_dtype,
  CAST(s_tp.value_text AS INTEGER) AS tensor_parallel_size,
  CAST(s_bs.value_text AS INTEGER) AS block_size,
  CAST(s_seqs.value_text AS INTEGER) AS max_num_seqs,
  COALESCE(CAST(s_len.value_text AS INTEGER),
           CAST((SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'max_model_len') AS INTEGER))
    AS max_model_len,
  CAST(s_kvb.value_text AS DOUBLE PRECISION) AS kv_cache_memory_bytes,
  (SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'kv_cache_tokens') AS kv_cache_tokens,
  (SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'kv_cache_reserved_bytes') AS kv_cache_reserved_bytes,
  (SELECT MAX(f.precision) FROM fact f WHERE f.boot_id = b.id AND f.name = 'kv_cache_reserved_bytes') AS kv_cache_reserved_precision,
  (SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'available_kv_cache_bytes') AS available_kv_cache_bytes,
  (SELECT MAX(f.precision) FROM fact f WHERE f.boot_id = b.id AND f.name = 'available_kv_cache_bytes') AS available_kv_cache_precision,
  (SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'model_weights_bytes') AS model_weights_bytes,
  (SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'weights_slab_bytes') AS weights_slab_bytes,
  (SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'card_ceiling_bytes') AS card_ceiling_bytes,
  (SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'pinned_ledger_bytes') AS pinned_ledger_bytes,
  (SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'pinned_host_pool_bytes') AS pinned_host_pool_bytes,
  (SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'prefix_host_tier_bytes') AS prefix_host_tier_bytes,
  (SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'pinned_cap_bytes') AS pinned_cap_bytes
FROM boot b
LEFT JOIN shape s_model ON s_model.boot_id = b.id AND s_model.key = 'model'
LEFT JOIN shape s_dtype ON s_dtype.boot_id = b.id AND s_dtype.key = 'kv_cache_dtype'
LEFT JOIN shape s_tp ON s_tp.boot_id = b.id AND s_tp.key = 'tensor_parallel_size'
LEFT JOIN shape s_bs ON s_bs.boot_id = b.id AND s_bs.key = 'block_size'
LEFT JOIN shape s_seqs ON s_seqs.boot_id = b.id AND s_seqs.key = 'max_num_seqs'
LEFT JOIN shape s_len ON s_len.boot_id = b.id AND s_len.key = 'max_model_len'
LEFT JOIN shape s_kvb ON s_kvb.boot_id = b.id AND s_kvb.key = 'kv_cache_memory_bytes'
"""

# The KV budget of a boot and where it comes from: --kv-cache-memory-bytes (exact), else the
# "reserved X GiB" line, else "Available KV cache memory: X GiB" (both ± their printed precision).
# Boots are comparable when model, KV dtype, TP size, block size and engine version agree.
BOOT_KV = """
CREATE VIEW boot_kv AS
SELECT
  g.*,
  CASE WHEN g.kv_cache_memory_bytes IS NOT NULL THEN g.kv_cache_memory_bytes
       WHEN g.kv_cache_reserved_bytes IS NOT NULL THEN g.kv_cache_reserved_bytes
       ELSE g.available_kv_cache_bytes END AS kv_budget_bytes,
  CASE WHEN g.kv_cache_memory_bytes IS NOT NULL THEN 'kv_cache_memory_bytes'
       WHEN g.kv_cache_reserved_bytes IS NOT NULL THEN 'kv_cache_reserved_bytes'
       WHEN g.available_kv_cache_bytes IS NOT NULL THEN 'available_kv_cache_bytes' END AS kv_budget_source,
  CASE WHEN g.kv_cache_memory_bytes IS NOT NULL THEN 0
       WHEN g.kv_cache_reserved_bytes IS NOT NULL THEN COALESCE(g.kv_cache_reserved_precision, 0)
       ELSE g.available_kv_cache_precision END AS kv_budget_precision_bytes,
  CASE WHEN g.model IS NULL THEN NULL
       ELSE g.model || ' | kv ' || COALESCE(g.kv_cache_dtype, '?')
            || ' | tp ' || COALESCE(CAST(g.tensor_parallel_size AS VARCHAR(12)), '?')
            || ' | block ' || COALESCE(CAST(g.block_size AS VARCHAR(12)), 'default')
            || ' | vllm ' || COALESCE(g.engine_version, '?') END AS group_key
FROM boot_figures g
"""

KV_COST = """
CREATE VIEW kv_cost_per_token AS
SELECT
  k.boot_id, k.deploy_id, k.group_key, k.model, k.kv_cache_dtype, k.tensor_parallel_size, k.block_size,
  k.engine_version, k.outcome, k.started_at,
  k.kv_budget_bytes, k.kv_budget_source, k.kv_budget_precision_bytes, k.kv_cache_tokens,
  k.kv_budget_bytes / k.kv_cache_tokens AS bytes_per_token,
  k.kv_budget_precision_bytes / k.kv_cache_tokens AS bytes_per_token_uncertainty,
  CASE WHEN k.kv_budget_precision_bytes = 0 THEN 'exact' ELSE 'printed precision' END AS uncertainty_from
FROM boot_kv k
WHERE k.kv_budget_bytes IS NOT NULL AND k.kv_cache_tokens > 0
"""

# The reference a boot is predicted from: one the user pinned for the deploy
# (ledger deploy set D kv_reference_boot=N), else the earliest ready boot of its group.
KV_REFERENCE = """
CREATE VIEW kv_reference AS
SELECT
  k.boot_id,
  COALESCE(pin.ref_boot_id, earliest.boot_id) AS ref_boot_id,
  CASE WHEN pin.ref_boot_id IS NOT NULL THEN 'pinned'
       WHEN earliest.boot_id IS NOT NULL THEN 'earliest ready boot of the group' END AS ref_chosen_by
FROM boot_kv k
LEFT JOIN (SELECT deploy_id, CAST(value AS INTEGER) AS ref_boot_id FROM deploy_setting
           WHERE key = 'kv_reference_boot') pin ON pin.deploy_id = k.deploy_id
LEFT JOIN (
  SELECT ranked.group_key, ranked.boot_id FROM (
    SELECT c.group_key, c.boot_id,
           ROW_NUMBER() OVER (PARTITION BY c.group_key
                              ORDER BY COALESCE(c.started_at, '9999-12-31 23:59:59'), c.boot_id) AS rn
    FROM kv_cost_per_token c
    WHERE c.outcome = 'ready' AND c.group_key IS NOT NULL
  ) ranked WHERE ranked.rn = 1
) earliest ON earliest.group_key = k.group_key
"""

# Predicted tokens = budget / the reference's bytes per token; tolerance 0.1%, widened by the
# relative printed precision of both budgets (and saying so); never a verdict without inputs.
KV_RECONCILIATION = """
CREATE VIEW kv_reconciliation AS
SELECT
  x.boot_id, x.deploy_id, x.group_key, x.ref_boot_id, x.ref_chosen_by, x.ref_bytes_per_token,
  x.kv_budget_bytes, x.kv_budget_source, x.measured_tokens, x.predicted_tokens,
  CASE WHEN x.predicted_tokens > 0 THEN (x.measured_tokens - x.predicted_tokens) / x.predicted_tokens END
    AS relative_error,
  x.tolerance,
  CASE WHEN x.widening > 0 THEN 'widened by the printed precision of the budgets' ELSE 'exact inputs' END
    AS tolerance_note,
  CASE WHEN x.predicted_tokens IS NULL OR x.measured_tokens IS NULL THEN 'insufficient'
       WHEN ABS(x.measured_tokens - x.predicted_tokens) <= x.tolerance * x.predicted_tokens THEN 'ok'
       ELSE 'off' END AS verdict
FROM (
  SELECT
    k.boot_id, k.deploy_id, k.group_key, r.ref_boot_id, r.ref_chosen_by,
    c.bytes_per_token AS ref_bytes_per_token,
    k.kv_budget_bytes, k.kv_budget_source, k.kv_cache_tokens AS measured_tokens,
    k.kv_budget_bytes / c.bytes_per_token AS predicted_tokens,
    COALESCE(k.kv_budget_precision_bytes / k.kv_budget_bytes, 0)
      + COALESCE(c.kv_budget_precision_bytes / c.kv_budget_bytes, 0) AS widening,
    0.001 + COALESCE(k.kv_budget_precision_bytes / k.kv_budget_bytes, 0)
      + COALESCE(c.kv_budget_precision_bytes / c.kv_budget_bytes, 0) AS tolerance
  FROM boot_kv k
  LEFT JOIN kv_reference r ON r.boot_id = k.boot_id
  LEFT JOIN kv_cost_per_token c ON c.boot_id = r.ref_boot_id
) x
"""

# The engine hard limit: the pool must back max_num_seqs full-length requests.
CAPACITY = """
CREATE VIEW capacity_contract AS
SELECT
  k.boot_id, k.deploy_id, k.kv_cache_tokens, k.max_num_seqs, k.max_model_len,
  k.max_num_seqs * k.max_model_len AS contract_tokens,
  k.kv_cache_tokens - k.max_num_seqs * k.max_model_len AS margin_tokens,
  CASE WHEN k.kv_budget_bytes IS NOT NULL AND k.kv_cache_tokens > 0
       THEN (k.kv_cache_tokens - k.max_num_seqs * k.max_model_len) * (k.kv_budget_bytes / k.kv_cache_tokens) END
    AS margin_bytes,
  CASE WHEN k.kv_cache_tokens IS NULL OR k.max_num_seqs IS NULL OR k.max_model_len IS NULL THEN 'insufficient'
       WHEN k.kv_cache_tokens >= k.max_num_seqs * k.max_model_len THEN 'ok'
       ELSE 'broken' END AS verdict
FROM boot_kv k
"""

# Weights (a pack's weights slab where one is printed) + KV pool against the card ceiling
# (ledger deploy set D card_ceiling_bytes=…, else one the log printed); pinned host memory
# against the host cap the same way.
CEILINGS = """
CREATE VIEW budget_ceilings AS
SELECT
  y.*,
  y.card_ceiling_bytes - y.vram_bytes AS vram_margin_bytes,
  CASE WHEN y.vram_bytes IS NULL OR y.card_ceiling_bytes IS NULL THEN 'insufficient'
       WHEN y.vram_bytes <= y.card_ceiling_bytes THEN 'ok' ELSE 'over' END AS vram_verdict,
  y.host_cap_bytes - y.host_pinned_bytes AS host_margin_bytes,
  CASE WHEN y.host_pinned_bytes IS NULL OR y.host_cap_bytes IS NULL THEN 'insufficient'
       WHEN y.host_pinned_bytes <= y.host_cap_bytes THEN 'ok' ELSE 'over' END AS host_verdict
FROM (
  SELECT
    k.boot_id, k.deploy_id,
    k.kv_budget_bytes AS kv_pool_bytes,
    COALESCE(k.weights_slab_bytes, k.model_weights_bytes) AS weights_bytes,
    CASE WHEN k.weights_slab_bytes IS NOT NULL THEN 'weights_slab_bytes'
         WHEN k.model_weights_bytes IS NOT NULL THEN 'model_weights_bytes' END AS weights_source,
    k.kv_budget_bytes + COALESCE(k.weights_slab_bytes, k.model_weights_bytes) AS vram_bytes,
    COALESCE(cs.ceiling, k.card_ceiling_bytes) AS card_ceiling_bytes,
    CASE WHEN cs.ceiling IS NOT NULL THEN 'deploy setting'
         WHEN k.card_ceiling_bytes IS NOT NULL THEN 'log' END AS card_ceiling_source,
    COALESCE(k.pinned_ledger_bytes, k.pinned_host_pool_bytes + COALESCE(k.prefix_host_tier_bytes, 0))
      AS host_pinned_bytes,
    COALESCE(hs.cap, k.pinned_cap_bytes) AS host_cap_bytes
  FROM boot_kv k
  LEFT JOIN (SELECT deploy_id, CAST(value AS DOUBLE PRECISION) AS ceiling FROM deploy_setting
             WHERE key = 'card_ceiling_bytes') cs ON cs.deploy_id = k.deploy_id
  LEFT JOIN (SELECT deploy_id, CAST(value AS DOUBLE PRECISION) AS cap FROM deploy_setting
             WHERE key = 'host_cap_bytes') hs ON hs.deploy_id = k.deploy_id
) y
"""

VIEWS = [("boot_figures", BOOT_FIGURES), ("boot_kv", BOOT_KV), ("kv_cost_per_token", KV_COST),
         ("kv_reference", KV_REFERENCE), ("kv_reconciliation", KV_RECONCILIATION),
         ("capacity_contract", CAPACITY), ("budget_ceilings", CEILINGS)]


def _plain(value_json: str):
    value = json.loads(value_json)
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value, sort_keys=True)


def upgrade() -> None:
    with op.batch_alter_table("shape") as batch:
        batch.add_column(sa.Column("value_text", sa.Text))
    conn = op.get_bind()
    shape = sa.table("shape", sa.column("id", sa.Integer), sa.column("value", sa.Text),
                     sa.column("value_text", sa.Text))
    rows = conn.execute(sa.select(shape.c.id, shape.c.value)).fetchall()
    for row_id, value in rows:
        conn.execute(shape.update().where(shape.c.id == row_id).values(value_text=_plain(value)))
    op.create_table(
        "deploy_setting",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("deploy_id", sa.Integer, sa.ForeignKey("deploy.id", ondelete="CASCADE"), nullable=False),
        sa.Column("key", sa.String(80), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("set_at", sa.String(32), nullable=False),
        sa.UniqueConstraint("deploy_id", "key", name="uq_deploy_setting"),
    )
    for _, ddl in VIEWS:
        op.execute(ddl)


def downgrade() -> None:
    for name, _ in reversed(VIEWS):
        op.execute(f"DROP VIEW {name}")
    op.drop_table("deploy_setting")
    with op.batch_alter_table("shape") as batch:
        batch.drop_column("value_text")
