"""ledger watch: a row per watch, so readers (ledger serve) know which sources are being watched
and which boot each one is reading while it runs.

Revision ID: 0008_watch
Revises: 0007_reference_verdict
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_watch"
down_revision = "0007_reference_verdict"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "watch",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("host", sa.String(255)),
        sa.Column("pid", sa.Integer),
        sa.Column("started_at", sa.String(32), nullable=False),
        sa.Column("seen_at", sa.String(32), nullable=False),
        sa.Column("live_boot_id", sa.Integer),
        sa.Column("deploy_id", sa.Integer),
        sa.Column("stopped_at", sa.String(32)),
    )


def downgrade() -> None:
    op.drop_table("watch")
