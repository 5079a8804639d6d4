"""An honest reference verdict: a boot that is its own group's KV reference is ``reference``.

Revision ID: 0007_reference_verdict
Revises: 0006_deploy_identity
Create Date: 2026-12-01

``kv_reconciliation`` predicted a reference boot's tokens from its own cost per token and
called the zero error ``ok``: a check true by construction.  Its verdict is now ``reference``
(the boot the others of its group are predicted from); every other column and row is as
before.  ``ledger check``, ``history``, ``note`` and the web view read the word from the view,
so ``sqlite3`` and pandas see it too.  No view is built on ``kv_reconciliation``, so it alone
is replaced.
"""

from alembic import op

revision = "0007_reference_verdict"
down_revision = "0006_deploy_identity"
branch_labels = None
depends_on = None

# 0004's view, with one more case: the boot is its own reference (a pinned one included).
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
       WHEN x.ref_boot_id = x.boot_id THEN 'reference'
       WHEN ABS(x.measured_tokens - x.predicted_tokens) <= x.tolerance * x.predicted_tokens THEN 'ok'
       ELSE 'off' END AS verdict
FROM (
  SELECT DISTINCT
    y.boot_id, y.deploy_id, y.group_key, y.ref_boot_id, y.ref_chosen_by,
    y.ref_bytes_per_token,
    y.kv_budget_bytes, y.kv_budget_source, y.measured_tokens,
    y.kv_budget_bytes / y.ref_bytes_per_token AS predicted_tokens,
    COALESCE(y.kv_budget_precision_bytes / y.kv_budget_bytes, 0) + COALESCE(y.ref_relative_precision, 0) AS widening,
    0.001 + COALESCE(y.kv_budget_precision_bytes / y.kv_budget_bytes, 0) + COALESCE(y.ref_relative_precision, 0)
      AS tolerance
  FROM (
    SELECT DISTINCT
      z.boot_id, z.deploy_id, z.group_key, z.ref_boot_id, z.ref_chosen_by,
      z.kv_budget_bytes, z.kv_budget_source, z.measured_tokens, z.kv_budget_precision_bytes,
      (SELECT c.bytes_per_token FROM kv_cost_per_token c WHERE c.boot_id = z.ref_boot_id) AS ref_bytes_per_token,
      (SELECT c.kv_budget_precision_bytes / c.kv_budget_bytes FROM kv_cost_per_token c
       WHERE c.boot_id = z.ref_boot_id) AS ref_relative_precision
    FROM (
      SELECT DISTINCT
        k.boot_id, k.deploy_id, k.group_key,
        (SELECT r.ref_boot_id FROM kv_reference r WHERE r.boot_id = k.boot_id) AS ref_boot_id,
        (SELECT r.ref_chosen_by FROM kv_reference r WHERE r.boot_id = k.boot_id) AS ref_chosen_by,
        k.kv_budget_bytes, k.kv_budget_source, k.kv_cache_tokens AS measured_tokens, k.kv_budget_precision_bytes
      FROM boot_kv k
    ) z
  ) y
) x
"""

# 0004's definition, for the downgrade
KV_RECONCILIATION_0004 = """
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
  SELECT DISTINCT
    y.boot_id, y.deploy_id, y.group_key, y.ref_boot_id, y.ref_chosen_by,
    y.ref_bytes_per_token,
    y.kv_budget_bytes, y.kv_budget_source, y.measured_tokens,
    y.kv_budget_bytes / y.ref_bytes_per_token AS predicted_tokens,
    COALESCE(y.kv_budget_precision_bytes / y.kv_budget_bytes, 0) + COALESCE(y.ref_relative_precision, 0) AS widening,
    0.001 + COALESCE(y.kv_budget_precision_bytes / y.kv_budget_bytes, 0) + COALESCE(y.ref_relative_precision, 0)
      AS tolerance
  FROM (
    SELECT DISTINCT
      z.boot_id, z.deploy_id, z.group_key, z.ref_boot_id, z.ref_chosen_by,
      z.kv_budget_bytes, z.kv_budget_source, z.measured_tokens, z.kv_budget_precision_bytes,
      (SELECT c.bytes_per_token FROM kv_cost_per_token c WHERE c.boot_id = z.ref_boot_id) AS ref_bytes_per_token,
      (SELECT c.kv_budget_precision_bytes / c.kv_budget_bytes FROM kv_cost_per_token c
       WHERE c.boot_id = z.ref_boot_id) AS ref_relative_precision
    FROM (
      SELECT DISTINCT
        k.boot_id, k.deploy_id, k.group_key,
        (SELECT r.ref_boot_id FROM kv_reference r WHERE r.boot_id = k.boot_id) AS ref_boot_id,
        (SELECT r.ref_chosen_by FROM kv_reference r WHERE r.boot_id = k.boot_id) AS ref_chosen_by,
        k.kv_budget_bytes, k.kv_budget_source, k.kv_cache_tokens AS measured_tokens, k.kv_budget_precision_bytes
      FROM boot_kv k
    ) z
  ) y
) x
"""


def upgrade() -> None:
    op.execute("DROP VIEW kv_reconciliation")
    op.execute(KV_RECONCILIATION)


def downgrade() -> None:
    op.execute("DROP VIEW kv_reconciliation")
    op.execute(KV_RECONCILIATION_0004)
