"""A ledger of years: reads that cost what they show, and runtime samples at half the bytes.

Revision ID: 0004_scale
Revises: 0003_boot_identity
Create Date: 2026-11-30

* ``kv_reference_candidate``: the boots a group's KV predictions may come from (ready, with a
  KV budget and a token count, in a group), with the order the reference is chosen by.  The
  ``kv_reference`` view finds a group's earliest one by an index lookup; it used to rank every
  ready boot of the ledger with a window for each boot it was asked about.  ``kv_reference``
  and ``kv_reconciliation`` return the same rows as before (a test compares them with the
  0002 definitions on every fixture, on SQLite and PostgreSQL); they now filter early, so one
  boot's verdicts are index lookups.
* ``runtime_sample`` becomes a view over ``runtime_sample_row``: the same columns and values
  (ids kept), stored clustered by boot, with the kind as a number, the time as seconds since 1970 (no zone: as printed) and the figures as integral hundredths where that is exact.
* ``boot_runtime``: a boot's sample counts by kind and its last sample id.
* Indexes on boot (started_at, id) and (deploy_id, started_at, id): ``history --limit K`` and a
  deploy's latest boot walk them instead of sorting every boot; on fact (boot_id, name): a
  view's figure of a boot is one lookup (PostgreSQL went by the name alone, every boot's).
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_scale"
down_revision = "0003_boot_identity"
branch_labels = None
depends_on = None

SERIES = [
    "prompt_throughput_tps", "generation_throughput_tps", "running_reqs", "waiting_reqs",
    "swapped_reqs", "pending_reqs", "gpu_kv_cache_usage_pct", "cpu_kv_cache_usage_pct",
    "prefix_cache_hit_rate_pct", "spec_mean_acceptance_length", "spec_accepted_tokens",
    "spec_drafted_tokens", "spec_draft_acceptance_rate_pct",
]

# The reference a boot is predicted from: one the user pinned for the deploy
# (ledger deploy set D kv_reference_boot=N), else the earliest ready boot of its group — the
# first of the group's candidates by (started_at, a boot without one last; boot id).
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

# Predicted tokens = budget / the reference's bytes per token; tolerance 0.1%, widened by the
# relative printed precision of both budgets (and saying so); never a verdict without inputs.
# The reference's figures are looked up by its id (a scalar subquery each), not joined from a
# view of every boot; so is its reference (a join with kv_reference made PostgreSQL compute the
# reference of every boot when asked for a list of boots).  The inner levels are DISTINCT, which
# changes no row (each is one boot's) but keeps SQLite from copying each expression into every
# place the next level uses it (it computes a row once; 5x faster), while the boot_id filter is
# still pushed down into them.
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

# a kind's numbers, stored in figure_1, figure_2, … in this order
KIND_FIGURES = {0: SERIES[:9], 1: SERIES[9:]}  # engine_stats, spec_decode
FIGURES = [f"figure_{i}" for i in range(1, 10)]
ROW_COLUMNS = ["boot_id", "id", "kind", "line", "logged_at_num", "logged_at_text", "engine", "hundredths",
               *FIGURES, "spec_per_position_acceptance"]


def _series(name: str) -> str:
    """A series of the view: its kind's figure column, divided back from hundredths."""
    code = next(k for k, names in KIND_FIGURES.items() if name in names)
    figure = f"r.figure_{KIND_FIGURES[code].index(name) + 1}"
    return (f"CASE WHEN r.kind <> {code} THEN NULL WHEN r.hundredths = 1 THEN {figure} / 100.0 "
            f"ELSE {figure} END AS {name}")


def _time_text(expr: str, dialect: str) -> str:
    """``YYYY-MM-DD HH:MM:SS`` of seconds since 1970-01-01 00:00:00 (the time as printed, no zone)."""
    if dialect == "sqlite":
        return f"datetime({expr}, 'unixepoch')"
    return f"to_char(to_timestamp({expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"


def _seconds(expr: str, dialect: str) -> str:
    if dialect == "sqlite":
        return f"CAST(strftime('%s', {expr}) AS INTEGER)"
    return "CAST(NULL AS BIGINT)"


# The samples as the table had them: the kind by name, the time as text, every figure as printed
# (a row of integral hundredths divided back: exact, checked when it was written).
RUNTIME_SAMPLE = """
CREATE VIEW runtime_sample AS
SELECT
  r.id, r.boot_id,
  CASE r.kind WHEN 0 THEN 'engine_stats' WHEN 1 THEN 'spec_decode' END AS kind,
  r.line,
  CASE WHEN r.logged_at_num IS NOT NULL THEN {time} ELSE r.logged_at_text END AS logged_at,
  r.engine,
  {series},
  r.spec_per_position_acceptance
FROM runtime_sample_row r
"""


def _is_full_stamp(expr: str, dialect: str) -> str:
    """A time the view gives back as it is: of the shape, and a real date and time."""
    if dialect == "sqlite":
        return f"COALESCE(datetime({expr}) = {expr}, FALSE)"
    return "FALSE"  # PostgreSQL has no cast that says no: an upgraded ledger keeps its times as text


def _copy_samples(dialect: str) -> str:
    """The old table's rows into the new one, ids kept."""
    full = _is_full_stamp("s.logged_at", dialect)
    packed = f"CASE WHEN {full} THEN {_seconds('s.logged_at', dialect)} END"
    slots = []
    for i, figure in enumerate(FIGURES):
        engine_stats, spec = KIND_FIGURES[0][i], KIND_FIGURES[1][i] if i < len(KIND_FIGURES[1]) else "NULL"
        slots.append(f"CASE WHEN s.kind = 'engine_stats' THEN s.{engine_stats} ELSE {'s.' * (spec != 'NULL')}{spec} END "
                     f"AS {figure}")
    exact = " AND ".join(f"(f.{c} IS NULL OR ROUND(f.{c} * 100) / 100.0 = f.{c})" for c in FIGURES)
    return (
        f"INSERT INTO runtime_sample_row ({', '.join(ROW_COLUMNS)}) "
        f"SELECT t.boot_id, t.id, t.kind_code, t.line, t.logged_at_num, t.logged_at_text, t.engine, t.hundredths, "
        + ", ".join(f"CASE WHEN t.hundredths = 1 THEN ROUND(t.{c} * 100) ELSE t.{c} END" for c in FIGURES)
        + ", t.spec_per_position_acceptance FROM (SELECT f.*, "
        f"CASE WHEN {exact} THEN 1 ELSE 0 END AS hundredths FROM ("
        f"SELECT s.id, s.boot_id, s.line, s.engine, s.spec_per_position_acceptance, "
        f"CASE s.kind WHEN 'engine_stats' THEN 0 ELSE 1 END AS kind_code, "
        f"{packed} AS logged_at_num, "
        f"CASE WHEN NOT ({full}) THEN s.logged_at END AS logged_at_text, "
        f"{', '.join(slots)} FROM runtime_sample s) f) t"
    )


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    # newest first (history, a deploy's latest boot) walks these instead of sorting every boot
    op.create_index("ix_boot_started", "boot", ["started_at", "id"])
    op.create_index("ix_boot_deploy_started", "boot", ["deploy_id", "started_at", "id"])
    # a boot's fact by name (the views' figures): one lookup, also where every boot has the name
    op.create_index("ix_fact_boot_name", "fact", ["boot_id", "name"])
    op.create_table(
        "kv_reference_candidate",
        sa.Column("boot_id", sa.Integer, sa.ForeignKey("boot.id", ondelete="CASCADE"), primary_key=True,
                  autoincrement=False),
        sa.Column("group_key", sa.Text, nullable=False),
        sa.Column("sort_at", sa.String(32), nullable=False),
    )
    op.create_index("ix_kv_reference_candidate_group", "kv_reference_candidate", ["group_key", "sort_at", "boot_id"])
    op.execute("INSERT INTO kv_reference_candidate (boot_id, group_key, sort_at) "
               "SELECT boot_id, group_key, COALESCE(started_at, '9999-12-31 23:59:59') FROM kv_cost_per_token "
               "WHERE outcome = 'ready' AND group_key IS NOT NULL")
    op.execute("DROP VIEW kv_reconciliation")
    op.execute("DROP VIEW kv_reference")
    op.execute(KV_REFERENCE)
    op.execute(KV_RECONCILIATION)

    op.create_table(
        "runtime_sample_row",
        sa.Column("boot_id", sa.Integer, sa.ForeignKey("boot.id", ondelete="CASCADE"), primary_key=True,
                  autoincrement=False),
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("kind", sa.SmallInteger, nullable=False),
        sa.Column("line", sa.Integer, nullable=False),
        sa.Column("logged_at_num", sa.BigInteger),
        sa.Column("logged_at_text", sa.String(32)),
        sa.Column("engine", sa.Integer),
        sa.Column("hundredths", sa.SmallInteger, nullable=False),
        *[sa.Column(name, sa.Float) for name in FIGURES],
        sa.Column("spec_per_position_acceptance", sa.Text),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "boot_runtime",
        sa.Column("boot_id", sa.Integer, sa.ForeignKey("boot.id", ondelete="CASCADE"), primary_key=True,
                  autoincrement=False),
        sa.Column("engine_stats", sa.Integer, nullable=False),
        sa.Column("spec_decode", sa.Integer, nullable=False),
        sa.Column("last_sample_id", sa.Integer),
    )
    op.create_index("ix_boot_runtime_last_sample_id", "boot_runtime", ["last_sample_id"])
    op.execute(_copy_samples(dialect))
    op.execute("INSERT INTO boot_runtime (boot_id, engine_stats, spec_decode, last_sample_id) "
               "SELECT b.id, "
               "(SELECT COUNT(*) FROM runtime_sample_row r WHERE r.boot_id = b.id AND r.kind = 0), "
               "(SELECT COUNT(*) FROM runtime_sample_row r WHERE r.boot_id = b.id AND r.kind = 1), "
               "(SELECT MAX(r.id) FROM runtime_sample_row r WHERE r.boot_id = b.id) FROM boot b")
    op.drop_table("runtime_sample")
    op.execute(RUNTIME_SAMPLE.format(time=_time_text("r.logged_at_num", dialect),
                                     series=", ".join(_series(c) for c in SERIES)))


def downgrade() -> None:
    raise NotImplementedError("0004_scale is not reversible: restore the backup taken before the upgrade")
