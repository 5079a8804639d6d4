"""Boots are identified by their content: a digest of the lines they were read from.

Revision ID: 0003_boot_identity
Revises: 0002_reconciliation
Create Date: 2026-11-29

A boot read from a stream is stored as soon as it completes, before the whole input (and so
its sha256) is known; and the same boot read from two overlapping files is one boot.  So the
identity moves from (file sha256, position) to ``content_sha256``; ``source_sha256`` stays as
evidence and may be null for a stream that was cut.  Failures keep the time they were logged.
"""

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0003_boot_identity"
down_revision = "0002_reconciliation"
branch_labels = None
depends_on = None


def _saved_sqlite_views() -> list[tuple[str, str]]:
    """SQLite rebuilds a table to alter it, and a view that names the table breaks the rebuild:
    take the views out first and put them back after, unchanged."""
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return []
    views = conn.execute(sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid")).fetchall()
    for name, _ in reversed(views):
        op.execute(f'DROP VIEW "{name}"')
    return [(name, sql) for name, sql in views]


def _restore(views: list[tuple[str, str]]) -> None:
    for _, sql in views:
        op.execute(sql)


def upgrade() -> None:
    views = _saved_sqlite_views()
    with op.batch_alter_table("boot") as batch:
        batch.add_column(sa.Column("content_sha256", sa.String(64)))
        batch.drop_constraint("uq_boot_source", type_="unique")
        batch.alter_column("source_sha256", existing_type=sa.String(64), nullable=True)
    conn = op.get_bind()
    boot = sa.table("boot", sa.column("id", sa.Integer), sa.column("source_sha256", sa.String),
                    sa.column("boot_index", sa.Integer), sa.column("content_sha256", sa.String))
    for row_id, sha, index in conn.execute(sa.select(boot.c.id, boot.c.source_sha256, boot.c.boot_index)).fetchall():
        # boots stored before this revision keep their old identity, hashed into the new column
        legacy = hashlib.sha256(f"legacy:{sha}:{index}".encode()).hexdigest()
        conn.execute(boot.update().where(boot.c.id == row_id).values(content_sha256=legacy))
    with op.batch_alter_table("boot") as batch:
        batch.alter_column("content_sha256", existing_type=sa.String(64), nullable=False)
        batch.create_unique_constraint("uq_boot_content", ["content_sha256"])
    with op.batch_alter_table("failure") as batch:
        batch.add_column(sa.Column("logged_at", sa.String(32)))
    _restore(views)


def downgrade() -> None:
    views = _saved_sqlite_views()
    with op.batch_alter_table("failure") as batch:
        batch.drop_column("logged_at")
    with op.batch_alter_table("boot") as batch:
        batch.drop_constraint("uq_boot_content", type_="unique")
        batch.drop_column("content_sha256")
        batch.create_unique_constraint("uq_boot_source", ["source_sha256", "boot_index"])
    _restore(views)
