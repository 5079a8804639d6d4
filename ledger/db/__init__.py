"""The ledger's database layer: the only code that opens a ledger or imports a database driver.

* ``location``: where the ledger is (``--db``, ``$LEDGER_DB``, the default file) and whether it
  is a SQLite file.
* ``connect``: ``connect(db, mode="read" | "write")`` gives a ``Ledger`` (``reading()`` for the
  queries: a ``reader.Reader``, on sqlite3 alone for a SQLite file opened to read; in write mode
  it also hands out a ``Writer``); ``open_writer(db)`` gives the
  ingest's ``Writer`` without loading SQLAlchemy for a SQLite ledger at the head revision.
* ``errors``: a driver's or SQLAlchemy's error as one line the user can act on.
* ``migrate``: Alembic (the schema revision, upgrades with a backup, refusing newer ledgers).
* ``sqlite``: a SQLite file's settings, the head schema a new file is built from, backups.
* ``models``: the schema, spelled once; ``columns`` (generated from it by
  ``python -m ledger.db.schema``, with ``ledger/migrations/head_sqlite.sql``) is what the writes use.
* ``writer`` (the DB-API connection every write goes through), ``writes`` (boots, deploy
  settings), ``staging`` (runtime samples waiting for their boot's transaction).
* ``reader``: the read commands' SQL text on a sqlite3 or SQLAlchemy connection, and the light
  records (``Boot``, ``Fact`` …) its rows become.
* ``readonly``: ``ledger sql``, one statement on a connection that cannot write.

Importing this package loads nothing: the ingest of one boot log should not pay for
SQLAlchemy's import (a third of a second) before it writes a row.
"""
