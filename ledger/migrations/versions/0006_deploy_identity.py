"""Boots from where they run: what a container's or a unit's runtime reported about a boot.

Revision ID: 0006_deploy_identity
Revises: 0004_scale
Create Date: 2026-12-01

* ``boot_origin``: (boot, key, value) rows written by ``ledger ingest --container`` and
  ``--unit`` — the container's id and name, its image id and digest, created and started
  times, restart count, the boot's run of the container, the OCI labels of the image, the unit
  and its invocation.  No view reads it; a boot's rows go with it (``ledger rm``, a grown boot).
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_deploy_identity"
down_revision = "0004_scale"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "boot_origin",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("boot_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=80), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["boot_id"], ["boot.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("boot_id", "key", name="uq_boot_origin_key"),
    )
    op.create_index(op.f("ix_boot_origin_boot_id"), "boot_origin", ["boot_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_boot_origin_boot_id"), table_name="boot_origin")
    op.drop_table("boot_origin")
