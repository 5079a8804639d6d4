"""ledger: a boot and runtime log ledger for vLLM deployments.

The library behind the ``ledger`` command: ``ledger.store`` opens and writes the SQLite (or
PostgreSQL) ledger, ``ledger.ingest`` turns log files into stored boots, ``ledger.queries`` reads
them back (history, show, export), ``ledger.diff`` compares two deploys.  Log parsing itself
lives in the separate ``parsers`` package, which knows nothing of the database.
"""

__version__ = "0.1.0"
