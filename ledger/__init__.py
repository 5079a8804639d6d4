"""ledger: a boot and runtime log ledger for vLLM deployments.

The library behind the ``ledger`` command: ``ledger.db`` opens the SQLite (or PostgreSQL)
ledger, migrates it and writes into it (the only code that does), ``ledger.ingest`` turns log
files into stored boots, ``ledger.queries`` reads them back (history, show, export),
``ledger.verdicts`` reads the reconciliation views, ``ledger.diff`` compares two deploys.  Log
parsing itself lives in ``ledger.parsers``, which knows nothing of the database (the layer
contracts in pyproject.toml hold it to that).
"""

from pathlib import Path as _Path

__version__ = "0.1.0"

# The wheel installs the repository's top-level parsers/ and migrations/ folders as
# ledger/parsers and ledger/migrations (setuptools package-dir).  Run from a checkout instead
# (``python -m ledger`` in the repository), this package is the ledger/ folder alone: look for
# those two subpackages in the folder beside it too.
_checkout = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "parsers").is_dir() and (_checkout / "parsers" / "__init__.py").is_file():
    __path__.append(str(_checkout))
