"""Counts are integers in the views: tokens, blocks, bytes, sequences and requests come back as
INTEGER (SQLite) / BIGINT (PostgreSQL), not REAL.

Revision ID: 0010_integer_counts
Revises: 0009_kv_formula
Create Date: 2026-12-01

A fact's value is stored as REAL (``fact.value``: one column for every figure), so every view
that read a count out of it returned ``798280.0``: Datasette showed ``1079582.0``, sqlite-utils
``1.07958e+06``, pandas a float column (issue 23).  Each view is created again with the same
columns, rows and order, and each column that is integral by nature cast to an integer:

* read from the log or a setting: token counts, byte figures (vLLM's GiB are read as whole bytes,
  ``round(9.74 * 2**30)``), max_num_seqs, max_model_len, block and TP sizes, running / waiting /
  swapped / pending requests, accepted and drafted speculative tokens;
* sums and differences of those (the pool plus weights, the contract, every margin);
* two estimates through a cost per token, rounded to the nearest whole one:
  ``kv_reconciliation.predicted_tokens`` (budget / the reference's B/token) and
  ``capacity_contract.margin_bytes`` (margin tokens at the boot's B/token).  Their
  ``relative_error`` and verdict are computed from the unrounded quotient, as before.

Ratios, errors, tolerances, B/token, concurrency, percentages, throughputs, the mean acceptance
length and the printed precisions (half a printed unit: ``0.005 * 2**30`` bytes) stay REAL.  The
views that divide two counts now cast one to DOUBLE PRECISION first: an integer division would
truncate.  Plain SQL for SQLite and PostgreSQL alike; only the integer type's name differs.

What the commands print changes only where a count printed as a float (``bench/outputs.py``
before and after, 2,309 outputs): ``diff``'s ``contract margin (bytes)`` in JSON and CSV
(``303634259.9032131`` -> ``303634260``), and in two table rows its change column by one byte
(``-2,210,135,474 B`` -> ``-2,210,135,475 B``: now the difference of the two whole figures beside
it); ``db current`` and ``db upgrade`` name the new revision.
"""

import importlib

from alembic import op

revision = "0010_integer_counts"
down_revision = "0009_kv_formula"
branch_labels = None
depends_on = None

# SQLite and PostgreSQL: the integer type a count is cast to (SQLite's INTEGER is 64-bit)
_INTEGER = {"sqlite": "INTEGER", "postgresql": "BIGINT"}

# One row per boot: the shape keys and the summary facts reconciliation needs.  Capacities take
# the smallest rank (the engine sizes by it), costs the largest; a budget figure's precision is
# the coarsest printed one.  (0002's view; a count through a REAL first: a shape value may be
# printed as ``7.3e9``, which a cast of the text to an integer would read as 7.)
BOOT_FIGURES = """
CREATE VIEW boot_figures AS
SELECT
  b.id AS boot_id, b.deploy_id, b.outcome, b.started_at, b.engine_version,
  s_model.value_text AS model,
  s_dtype.value_text AS kv_cache_dtype,
  {tp} AS tensor_parallel_size,
  {bs} AS block_size,
  {seqs} AS max_num_seqs,
  COALESCE({len},
           CAST((SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'max_model_len'
                 AND f.value < 1000000000) AS {int}))
    AS max_model_len,
  {kvb} AS kv_cache_memory_bytes,
  CAST((SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'kv_cache_tokens') AS {int}) AS kv_cache_tokens,
  CAST((SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'kv_cache_reserved_bytes') AS {int}) AS kv_cache_reserved_bytes,
  (SELECT MAX(f.precision) FROM fact f WHERE f.boot_id = b.id AND f.name = 'kv_cache_reserved_bytes') AS kv_cache_reserved_precision,
  CAST((SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'available_kv_cache_bytes') AS {int}) AS available_kv_cache_bytes,
  (SELECT MAX(f.precision) FROM fact f WHERE f.boot_id = b.id AND f.name = 'available_kv_cache_bytes') AS available_kv_cache_precision,
  CAST((SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'model_weights_bytes') AS {int}) AS model_weights_bytes,
  CAST((SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'weights_slab_bytes') AS {int}) AS weights_slab_bytes,
  CAST((SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'card_ceiling_bytes') AS {int}) AS card_ceiling_bytes,
  CAST((SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'pinned_ledger_bytes') AS {int}) AS pinned_ledger_bytes,
  CAST((SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'pinned_host_pool_bytes') AS {int}) AS pinned_host_pool_bytes,
  CAST((SELECT MAX(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'prefix_host_tier_bytes') AS {int}) AS prefix_host_tier_bytes,
  CAST((SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'pinned_cap_bytes') AS {int}) AS pinned_cap_bytes
FROM boot b
LEFT JOIN shape s_model ON s_model.boot_id = b.id AND s_model.key = 'model'
LEFT JOIN shape s_dtype ON s_dtype.boot_id = b.id AND s_dtype.key = 'kv_cache_dtype'
LEFT JOIN shape s_tp ON s_tp.boot_id = b.id AND s_tp.key = 'tensor_parallel_size'
LEFT JOIN shape s_bs ON s_bs.boot_id = b.id AND s_bs.key = 'block_size'
LEFT JOIN shape s_seqs ON s_seqs.boot_id = b.id AND s_seqs.key = 'max_num_seqs'
LEFT JOIN shape s_len ON s_len.boot_id = b.id AND s_len.key = 'max_model_len'
LEFT JOIN shape s_kvb ON s_kvb.boot_id = b.id AND s_kvb.key = 'kv_cache_memory_bytes'
"""

# 0002's view, unchanged: its counts are boot_figures' (integers now)
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

# 0002's view; the quotients of two integers through DOUBLE PRECISION
KV_COST = """
CREATE VIEW kv_cost_per_token AS
SELECT
  k.boot_id, k.deploy_id, k.group_key, k.model, k.kv_cache_dtype, k.tensor_parallel_size, k.block_size,
  k.engine_version, k.outcome, k.started_at,
  k.kv_budget_bytes, k.kv_budget_source, k.kv_budget_precision_bytes, k.kv_cache_tokens,
  CAST(k.kv_budget_bytes AS DOUBLE PRECISION) / k.kv_cache_tokens AS bytes_per_token,
  CAST(k.kv_budget_precision_bytes AS DOUBLE PRECISION) / k.kv_cache_tokens AS bytes_per_token_uncertainty,
  CASE WHEN k.kv_budget_precision_bytes = 0 THEN 'exact' ELSE 'printed precision' END AS uncertainty_from
FROM boot_kv k
WHERE k.kv_budget_bytes IS NOT NULL AND k.kv_cache_tokens > 0
"""

# 0004's view, unchanged (it names boot_kv, so it goes and comes back with it)
KV_REFERENCE = """
CREATE VIEW kv_reference AS
SELECT
  x.boot_id,
  COALESCE(x.pinned, x.earliest) AS ref_boot_id,
  CASE WHEN x.pinned IS NOT NULL THEN 'pinned'
       WHEN x.earliest IS NOT NULL THEN 'earliest ready boot of the group' END AS ref_chosen_by
FROM (
  SELECT
    k.boot_id,
    (SELECT CAST(s.value AS INTEGER) FROM deploy_setting s
     WHERE s.deploy_id = k.deploy_id AND s.key = 'kv_reference_boot') AS pinned,
    (SELECT c.boot_id FROM kv_reference_candidate c WHERE c.group_key = k.group_key
     ORDER BY c.sort_at, c.boot_id LIMIT 1) AS earliest
  FROM boot_kv k
) x
"""

# 0007's view: the prediction rounded to whole tokens in the column, its error and verdict from
# the quotient itself; the relative precisions through DOUBLE PRECISION (a budget of 0 precision
# is the integer 0).
KV_RECONCILIATION = """
CREATE VIEW kv_reconciliation AS
SELECT
  x.boot_id, x.deploy_id, x.group_key, x.ref_boot_id, x.ref_chosen_by, x.ref_bytes_per_token,
  x.kv_budget_bytes, x.kv_budget_source, x.measured_tokens, CASE WHEN ABS(x.predicted_tokens) < 9007199254740992 THEN CAST(ROUND(x.predicted_tokens) AS {int}) END
    AS predicted_tokens,
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
      (SELECT CAST(c.kv_budget_precision_bytes AS DOUBLE PRECISION) / c.kv_budget_bytes FROM kv_cost_per_token c
       WHERE c.boot_id = z.ref_boot_id) AS ref_relative_precision
    FROM (
      SELECT DISTINCT
        k.boot_id, k.deploy_id, k.group_key,
        (SELECT r.ref_boot_id FROM kv_reference r WHERE r.boot_id = k.boot_id) AS ref_boot_id,
        (SELECT r.ref_chosen_by FROM kv_reference r WHERE r.boot_id = k.boot_id) AS ref_chosen_by,
        k.kv_budget_bytes, k.kv_budget_source, k.kv_cache_tokens AS measured_tokens,
        CAST(k.kv_budget_precision_bytes AS DOUBLE PRECISION) AS kv_budget_precision_bytes
      FROM boot_kv k
    ) z
  ) y
) x
"""

# 0002's view: the margin in bytes rounded to whole bytes, from the boot's B/token as a REAL
# (NULL past 2**53 bytes, which no card holds: a cast beyond 64 bits fails on PostgreSQL)
CAPACITY = """
CREATE VIEW capacity_contract AS
SELECT
  k.boot_id, k.deploy_id, k.kv_cache_tokens, k.max_num_seqs, k.max_model_len,
  k.max_num_seqs * k.max_model_len AS contract_tokens,
  k.kv_cache_tokens - k.max_num_seqs * k.max_model_len AS margin_tokens,
  CASE WHEN k.kv_budget_bytes IS NOT NULL AND k.kv_cache_tokens > 0
       THEN CASE WHEN ABS((k.kv_cache_tokens - k.max_num_seqs * k.max_model_len)
                          * (CAST(k.kv_budget_bytes AS DOUBLE PRECISION) / k.kv_cache_tokens)) < 9007199254740992
                 THEN CAST(ROUND((k.kv_cache_tokens - k.max_num_seqs * k.max_model_len)
                                 * (CAST(k.kv_budget_bytes AS DOUBLE PRECISION) / k.kv_cache_tokens)) AS {int}) END END
    AS margin_bytes,
  CASE WHEN k.kv_cache_tokens IS NULL OR k.max_num_seqs IS NULL OR k.max_model_len IS NULL THEN 'insufficient'
       WHEN k.kv_cache_tokens >= k.max_num_seqs * k.max_model_len THEN 'ok'
       ELSE 'broken' END AS verdict
FROM boot_kv k
"""

# 0002's view; a deploy's ceiling setting is whole bytes (``ledger deploy set`` stores
# ``29120MiB`` as 30534533120), read through a REAL as 0002 did
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
  LEFT JOIN (SELECT deploy_id, CAST(CAST(value AS DOUBLE PRECISION) AS {int}) AS ceiling FROM deploy_setting
             WHERE key = 'card_ceiling_bytes') cs ON cs.deploy_id = k.deploy_id
  LEFT JOIN (SELECT deploy_id, CAST(CAST(value AS DOUBLE PRECISION) AS {int}) AS cap FROM deploy_setting
             WHERE key = 'host_cap_bytes') hs ON hs.deploy_id = k.deploy_id
) y
"""

# the series that count (requests, tokens); the others (throughputs, percentages, the mean
# acceptance length) are REAL
COUNT_SERIES = {"running_reqs", "waiting_reqs", "swapped_reqs", "pending_reqs", "spec_accepted_tokens",
                "spec_drafted_tokens"}

# 0009's view: the stored prediction's counts as stored (integers), the budget (stored REAL) and
# the measured tokens cast; the error through DOUBLE PRECISION
KV_FORMULA_SELECT = """
CREATE VIEW kv_formula AS
SELECT
  x.boot_id, x.deploy_id, {cols},
  x.measured_tokens, x.measured_concurrency,
  CASE WHEN x.predicted_tokens > 0 AND x.measured_tokens IS NOT NULL
       THEN (x.measured_tokens - CAST(x.predicted_tokens AS DOUBLE PRECISION)) / x.predicted_tokens END AS relative_error,
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
    CAST(p.budget_bytes AS {{int}}) AS budget_bytes,
    CAST((SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'kv_cache_tokens') AS {{int}}) AS measured_tokens,
    (SELECT MIN(f.value) FROM fact f WHERE f.boot_id = b.id AND f.name = 'max_concurrency') AS measured_concurrency,
    CASE WHEN p.predicted_tokens > 0 THEN
      0.001 + CASE WHEN p.predicted_tokens_high - p.predicted_tokens > p.predicted_tokens - p.predicted_tokens_low
                   THEN p.predicted_tokens_high - p.predicted_tokens
                   ELSE p.predicted_tokens - p.predicted_tokens_low END
              / CAST(p.predicted_tokens AS DOUBLE PRECISION) END AS tolerance
  FROM boot b
  LEFT JOIN kv_formula_prediction p ON p.boot_id = b.id
) x
"""

# names, in the order they are created (each after the views it names)
ORDER = ["boot_figures", "boot_kv", "kv_cost_per_token", "kv_reference", "kv_reconciliation", "capacity_contract",
         "budget_ceilings", "runtime_sample", "kv_formula"]


def _previous(name: str):
    return importlib.import_module(f"ledger.migrations.versions.{name}")


def _kv_formula() -> str:
    m = _previous("0009_kv_formula")
    return KV_FORMULA_SELECT.format(cols=", ".join(f"x.{c}" for c in m.PREDICTION_COLUMNS),
                                    pcols=", ".join(f"p.{c}" for c in m.PREDICTION_COLUMNS
                                                    if c != "budget_bytes"))


def _runtime_sample(dialect: str, integer: str | None) -> str:
    """0004's view; with ``integer``, the count series cast to it."""
    m = _previous("0004_scale")
    series = []
    for name in m.SERIES:
        text = m._series(name)
        if integer and name in COUNT_SERIES:
            expr, _, alias = text.rpartition(" AS ")
            text = f"CAST({expr} AS {integer}) AS {alias}"
        series.append(text)
    return m.RUNTIME_SAMPLE.format(time=m._time_text("r.logged_at_num", dialect), series=", ".join(series))


# A shape value is text as the log printed it (an args dump can say 'max_num_seqs': 'abc', or
# 2.5, or 10**18): a count is read from it only when it is a whole number of at most nine digits
# (no engine runs 10**9 sequences or tokens of context), so the product max_num_seqs ×
# max_model_len stays within 64 bits; anything else is NULL (not read). On PostgreSQL a cast of
# such text failed every read of the views ("invalid input syntax", "integer out of range": one
# deploy of 1,024 sequences of 3,000,000 tokens did), and the product was a 32-bit integer.
_WHOLE = {"sqlite": "CASE WHEN {c} <> '' AND {c} NOT GLOB '*[^0-9]*' AND LENGTH({c}) <= 9 "
                    "THEN CAST({c} AS INTEGER) END",
          "postgresql": "CASE WHEN {c} ~ '^[0-9]{{1,9}}$' THEN CAST({c} AS BIGINT) END"}
# kv_cache_memory_bytes as printed (``7.3e9`` too), up to 2**53 bytes (every stored figure's
# bound, units.MAX_FIGURE); PostgreSQL's conditions nested, as it does not promise to evaluate
# an AND's sides in order
_BYTES = {"sqlite": "CASE WHEN {c} GLOB '[0-9]*' AND {c} NOT GLOB '*[^0-9.eE+]*' "
                    "AND CAST({c} AS REAL) < 9007199254740992 THEN CAST(CAST({c} AS REAL) AS INTEGER) END",
          "postgresql": r"CASE WHEN {c} ~ '^[0-9]+(\.[0-9]+)?([eE]\+?[0-9]{{1,2}})?$' THEN "
                        "CASE WHEN CAST({c} AS DOUBLE PRECISION) < 9007199254740992 "
                        "THEN CAST(CAST({c} AS DOUBLE PRECISION) AS BIGINT) END END"}


def _boot_figures(dialect: str) -> str:
    whole, size = _WHOLE[dialect], _BYTES[dialect]
    return BOOT_FIGURES.format(int=_INTEGER[dialect], tp=whole.format(c="s_tp.value_text"),
                               bs=whole.format(c="s_bs.value_text"), seqs=whole.format(c="s_seqs.value_text"),
                               len=whole.format(c="s_len.value_text"), kvb=size.format(c="s_kvb.value_text"))


def _views(dialect: str) -> dict[str, str]:
    integer = _INTEGER[dialect]
    views = {"boot_kv": BOOT_KV, "kv_cost_per_token": KV_COST,
             "kv_reference": KV_REFERENCE, "kv_reconciliation": KV_RECONCILIATION, "capacity_contract": CAPACITY,
             "budget_ceilings": CEILINGS, "kv_formula": _kv_formula()}
    out = {name: sql.format(int=integer) for name, sql in views.items()}
    out["boot_figures"] = _boot_figures(dialect)
    out["runtime_sample"] = _runtime_sample(dialect, integer)
    return out


def _views_0009(dialect: str) -> dict[str, str]:
    """Each view as 0009 left it, for the downgrade."""
    m2, m4, m7, m9 = (_previous(n) for n in ("0002_reconciliation", "0004_scale", "0007_reference_verdict",
                                             "0009_kv_formula"))
    out = dict(m2.VIEWS)
    out.update(kv_reference=m4.KV_REFERENCE, kv_reconciliation=m7.KV_RECONCILIATION, kv_formula=m9.KV_FORMULA,
               runtime_sample=_runtime_sample(dialect, None))
    return out


def _replace(views: dict[str, str]) -> None:
    for name in reversed(ORDER):
        op.execute(f"DROP VIEW {name}")
    for name in ORDER:
        op.execute(views[name])


def upgrade() -> None:
    _replace(_views(op.get_bind().dialect.name))


def downgrade() -> None:
    _replace(_views_0009(op.get_bind().dialect.name))
