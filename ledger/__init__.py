"""ledger: a boot and runtime log ledger for vLLM deployments.

The library behind the ``ledger`` command: ``ledger.db`` opens the SQLite (or PostgreSQL)
ledger, migrates it and writes into it (the only code that does), ``ledger.ingest`` turns log
files into stored boots, ``ledger.queries`` reads them back (history, show, export),
``ledger.verdicts`` reads the reconciliation views, ``ledger.diff`` compares two deploys.  Log parsing itself
lives in the separate ``parsers`` package, which knows nothing of the database.
"""

__version__ = "0.1.0"
