"""ledger: a boot and runtime log ledger for vLLM deployments.

The library behind the ``ledger`` command: ``ledger.store`` opens the SQLite (or PostgreSQL)
ledger with SQLAlchemy and migrates it, ``ledger.writing`` writes boots into it through the
database driver, ``ledger.ingest`` turns log files into stored boots, ``ledger.queries`` reads
them back (history, show, export), ``ledger.diff`` compares two deploys.  Log parsing itself
lives in the separate ``parsers`` package, which knows nothing of the database.
"""

__version__ = "0.1.0"
