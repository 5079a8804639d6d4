"""ledger: a boot and runtime log ledger for vLLM deployments.

The library behind the ``ledger`` command: ``ledger.db`` opens the SQLite (or PostgreSQL)
ledger, migrates it and writes into it (the only code that does), ``ledger.ingest`` turns log
files into stored boots, ``ledger.queries`` reads them back (history, show, export),
``ledger.verdicts`` reads the reconciliation views, ``ledger.diff`` compares two deploys.  Log
parsing itself lives in ``ledger.parsers``, which knows nothing of the database (the layer
contracts in pyproject.toml hold it to that).
"""

__version__ = "0.1.0"
