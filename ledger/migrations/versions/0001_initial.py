"""The first schema: deploys, boots, shape, facts, failures, runtime samples.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deploy",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("identity", sa.String(300), nullable=False, unique=True),
        sa.Column("commit_sha", sa.String(64)),
        sa.Column("image_digest", sa.String(80)),
        sa.Column("label", sa.String(200)),
        sa.Column("dirty", sa.Boolean),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "boot",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("deploy_id", sa.Integer, sa.ForeignKey("deploy.id"), nullable=False, index=True),
        sa.Column("source_path", sa.Text, nullable=False),
        sa.Column("source_sha256", sa.String(64), nullable=False, index=True),
        sa.Column("boot_index", sa.Integer, nullable=False),
        sa.Column("first_line", sa.Integer, nullable=False),
        sa.Column("last_line", sa.Integer, nullable=False),
        sa.Column("engine_name", sa.String(40), nullable=False),
        sa.Column("engine_version", sa.String(80)),
        sa.Column("engine_commit", sa.String(40)),
        sa.Column("image_digest_in_log", sa.String(80)),
        sa.Column("outcome", sa.String(16), nullable=False, index=True),
        sa.Column("started_at", sa.String(32)),
        sa.Column("year_inferred", sa.Boolean, nullable=False),
        sa.Column("ready_line", sa.Integer),
        sa.Column("ready_at", sa.String(32)),
        sa.Column("ended_at", sa.String(32)),
        sa.Column("access_lines", sa.Integer, nullable=False),
        sa.Column("request_lines", sa.Integer, nullable=False),
        sa.Column("ingested_at", sa.String(32), nullable=False),
        sa.UniqueConstraint("source_sha256", "boot_index", name="uq_boot_source"),
    )
    op.create_table(
        "shape",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("boot_id", sa.Integer, sa.ForeignKey("boot.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("key", sa.String(120), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("line", sa.Integer),
        sa.Column("pack", sa.String(80)),
        sa.UniqueConstraint("boot_id", "key", name="uq_shape_key"),
    )
    op.create_table(
        "fact",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("boot_id", sa.Integer, sa.ForeignKey("boot.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("name", sa.String(120), nullable=False, index=True),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.String(16), nullable=False),
        sa.Column("precision", sa.Float),
        sa.Column("rank", sa.Integer),
        sa.Column("process", sa.String(80)),
        sa.Column("line", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("pack", sa.String(80)),
    )
    op.create_table(
        "failure",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("boot_id", sa.Integer, sa.ForeignKey("boot.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("kind", sa.String(40), nullable=False, index=True),
        sa.Column("phase", sa.String(16), nullable=False),
        sa.Column("line", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("rank", sa.Integer),
        sa.Column("process", sa.String(80)),
        sa.Column("figures", sa.Text, nullable=False),
        sa.Column("pack", sa.String(80)),
    )
    series = [
        "prompt_throughput_tps", "generation_throughput_tps", "running_reqs", "waiting_reqs",
        "swapped_reqs", "pending_reqs", "gpu_kv_cache_usage_pct", "cpu_kv_cache_usage_pct",
        "prefix_cache_hit_rate_pct", "spec_mean_acceptance_length", "spec_accepted_tokens",
        "spec_drafted_tokens", "spec_draft_acceptance_rate_pct",
    ]
    op.create_table(
        "runtime_sample",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("boot_id", sa.Integer, sa.ForeignKey("boot.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("line", sa.Integer, nullable=False),
        sa.Column("logged_at", sa.String(32)),
        sa.Column("engine", sa.Integer),
        *[sa.Column(name, sa.Float) for name in series],
        sa.Column("spec_per_position_acceptance", sa.Text),
    )


def downgrade() -> None:
    for table in ("runtime_sample", "failure", "fact", "shape", "boot", "deploy"):
        op.drop_table(table)
