"""The schema is spelled once, in ledger/db/models.py: the migrations, ledger/migrations/head_sqlite.sql
and the column lists the writes use (ledger/db/columns.py) must agree with it.  After a change
to the models: a migration (`alembic revision --autogenerate` drafts it), then
`python -m ledger.db.schema`."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine

from ledger.db.migrate import alembic_config
from ledger.db.models import Base


def test_the_migrations_build_what_the_models_declare(db):
    """Every migration run on an empty database (SQLite, or PostgreSQL in that pass) leaves
    nothing between it and the models: no table, column, type, index, constraint or key."""
    engine = create_engine(db if "://" in db else f"sqlite:///{db}")
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "head")
        with engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    finally:
        engine.dispose()
    assert diffs == []


def test_the_column_lists_are_generated_from_the_models():
    from ledger.db.schema import COLUMNS_FILE, columns_source

    assert COLUMNS_FILE.read_text() == columns_source(), "run: python -m ledger.db.schema"


def test_the_column_lists_name_every_column_of_every_table():
    from ledger.db.columns import COLUMNS

    assert set(COLUMNS) == set(Base.metadata.tables)
    for name, table in Base.metadata.tables.items():
        assert list(COLUMNS[name]) == [c.name for c in table.columns if c.name != "id"], name


def test_every_runtime_series_of_the_vocabulary_has_a_stored_column():
    """Each kind's figures fit runtime_sample_row's figure_1, figure_2, …; the one series that
    is not a number (spec decode's per-position list) has its own column."""
    from ledger.db.staging import FIGURE_SERIES, PER_POSITION, STORED_FIGURES, STORED_SERIES
    from ledger.parsers.vocabulary import RUNTIME_KIND_SERIES

    for kind, series in RUNTIME_KIND_SERIES.items():
        assert len(FIGURE_SERIES[kind]) <= len(STORED_FIGURES), kind
        assert set(series) - set(FIGURE_SERIES[kind]) <= {PER_POSITION}, kind
    assert PER_POSITION in STORED_SERIES
