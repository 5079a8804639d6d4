"""ledger watch: the alerts it raised, kept so that each is delivered at least once and told once.

Revision ID: 0012_watch_alert
Revises: 0011_boot_end
Create Date: 2026-12-03

``watch_alert`` holds an alert from the transaction that stores what it tells (a boot's
outcome) until stdout and every sink had it (``pending`` → ``delivered``); a watch that starts
resends its source's pending alerts, and one that reads the source again finds the alerts told
by their ``key`` (kind, boot, incident) and does not tell them again.  ``backlog``: an alert not
told because it was in what the source held when the first watch of it began.
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_watch_alert"
down_revision = "0011_boot_end"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "watch_alert",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("boot_id", sa.Integer),
        sa.Column("logged_at", sa.String(32)),
        sa.Column("raised_at", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("delivered_at", sa.String(32)),
        sa.Column("body", sa.Text, nullable=False),
        sa.UniqueConstraint("source", "key", name="uq_watch_alert_key"),
    )


def downgrade() -> None:
    op.drop_table("watch_alert")
