"""How a boot ended, and a budget argument the engine did not use.

Revision ID: 0011_boot_end
Revises: 0010_integer_counts
Create Date: 2026-12-03

* ``boot.ended`` (facts.md, "How a boot ended"): ``stopped`` (a stop that was asked for, with no
  failure before it), ``crashed``, ``failed``, ``running`` (the log ends with the engine serving),
  null where the log ends before the boot was up; ``boot.stop_line``: the first line of the
  requested stop (its evidence).  Boots stored before this revision keep null: read again
  (``ledger ingest`` of the same log) they are not rewritten — ``ledger rm`` then ``ingest``.
* ``boot_kv``: "what the engine printed beats what it was asked".  ``--kv-cache-memory-bytes`` is
  the budget only while no printed pool contradicts it (``kv_cache_reserved_bytes`` or
  ``available_kv_cache_bytes`` further from it than their printed precision); vLLM's CPU build
  prints the argument and sizes the pool from ``VLLM_CPU_KVCACHE_SPACE``, so there the printed
  pool is the budget and ``kv_argument_ignored`` is 1.  Every view above it is created again
  unchanged (they select from it).
"""

import importlib

import sqlalchemy as sa
from alembic import op

revision = "0011_boot_end"
down_revision = "0010_integer_counts"
branch_labels = None
depends_on = None

# an argument is contradicted by a printed pool further from it than the pool's printed precision
# (half its last digit) and one byte
_CONTRADICTED = """(
  (g.kv_cache_reserved_bytes IS NOT NULL
   AND ABS(g.kv_cache_memory_bytes - g.kv_cache_reserved_bytes) > COALESCE(g.kv_cache_reserved_precision, 0) + 1)
  OR (g.kv_cache_reserved_bytes IS NULL AND g.available_kv_cache_bytes IS NOT NULL
   AND ABS(g.kv_cache_memory_bytes - g.available_kv_cache_bytes) > COALESCE(g.available_kv_cache_precision, 0) + 1))"""

BOOT_KV = f"""
CREATE VIEW boot_kv AS
SELECT
  g.*,
  CASE WHEN g.kv_cache_memory_bytes IS NOT NULL AND NOT {_CONTRADICTED} THEN g.kv_cache_memory_bytes
       WHEN g.kv_cache_reserved_bytes IS NOT NULL THEN g.kv_cache_reserved_bytes
       ELSE g.available_kv_cache_bytes END AS kv_budget_bytes,
  CASE WHEN g.kv_cache_memory_bytes IS NOT NULL AND NOT {_CONTRADICTED} THEN 'kv_cache_memory_bytes'
       WHEN g.kv_cache_reserved_bytes IS NOT NULL THEN 'kv_cache_reserved_bytes'
       WHEN g.available_kv_cache_bytes IS NOT NULL THEN 'available_kv_cache_bytes' END AS kv_budget_source,
  CASE WHEN g.kv_cache_memory_bytes IS NOT NULL AND NOT {_CONTRADICTED} THEN 0
       WHEN g.kv_cache_reserved_bytes IS NOT NULL THEN COALESCE(g.kv_cache_reserved_precision, 0)
       ELSE g.available_kv_cache_precision END AS kv_budget_precision_bytes,
  CASE WHEN g.model IS NULL THEN NULL
       ELSE g.model || ' | kv ' || COALESCE(g.kv_cache_dtype, '?')
            || ' | tp ' || COALESCE(CAST(g.tensor_parallel_size AS VARCHAR(12)), '?')
            || ' | block ' || COALESCE(CAST(g.block_size AS VARCHAR(12)), 'default')
            || ' | vllm ' || COALESCE(g.engine_version, '?') END AS group_key,
  CASE WHEN g.kv_cache_memory_bytes IS NOT NULL AND {_CONTRADICTED} THEN 1 ELSE 0 END AS kv_argument_ignored
FROM boot_figures g
"""


def _m10():
    return importlib.import_module("ledger.migrations.versions.0010_integer_counts")


def _views(dialect: str, boot_kv: str) -> dict[str, str]:
    views = _m10()._views(dialect)
    views["boot_kv"] = boot_kv.format(int=_m10()._INTEGER[dialect])
    return views


def upgrade() -> None:
    op.add_column("boot", sa.Column("ended", sa.String(16)))
    op.add_column("boot", sa.Column("stop_line", sa.Integer))
    _m10()._replace(_views(op.get_bind().dialect.name, BOOT_KV))


def downgrade() -> None:
    # SQLite drops a column by copying the table: no view may name it meanwhile
    m10 = _m10()
    views = _views(op.get_bind().dialect.name, m10.BOOT_KV)
    for name in reversed(m10.ORDER):
        op.execute(f"DROP VIEW {name}")
    with op.batch_alter_table("boot") as batch:
        batch.drop_column("stop_line")
        batch.drop_column("ended")
    for name in m10.ORDER:
        op.execute(views[name])
