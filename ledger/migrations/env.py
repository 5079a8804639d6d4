"""Alembic environment for the ledger.

Run by ``ledger.db.migrate`` (migrate on open) with a live connection in ``config.attributes``;
it also works from the ``alembic`` command line with ``-x url=sqlite:///path/to/ledger.db``, and
``alembic revision --autogenerate`` drafts a migration from what the models (``ledger.db.models``)
declare and a ledger at the head revision lacks.
"""

from alembic import context
from sqlalchemy import create_engine

from ledger.db.models import Base

config = context.config


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite cannot ALTER most things in place; batch mode copies the table instead
        render_as_batch=connection.dialect.name == "sqlite",
        # ledger.db.migrate runs every pending migration inside one transaction it holds the lock of
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("alembic: name the ledger with -x url=sqlite:///path/to/ledger.db")
    engine = create_engine(url)
    with engine.begin() as conn:
        _run(conn)
