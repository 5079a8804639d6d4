"""The ledger as pandas DataFrames, for notebooks (``import ledger.frames as lf``).  Each function
takes the ledger (a path, a URL or an open ``Ledger``; by default the one ``$LEDGER_DB`` names,
else ``~/.local/share/ledger/ledger.db``).  On the ledger the README's quick start fills:

    >>> import ledger.frames as lf
    >>> facts = lf.facts()
    >>> wide = facts.pivot_table(index="boot_id", columns="name", values="value", aggfunc="min")
    >>> wide.loc[15, ["kv_cache_tokens", "max_concurrency"]].to_dict()
    {'kv_cache_tokens': 198784.0, 'max_concurrency': 24.27}
    >>> lf.boots().outcome.value_counts().to_dict()
    {'failed': 43, 'incomplete': 38, 'ready': 21, 'crashed': 11}

pandas is imported here only; the CLI never imports this module.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import text

from .db.connect import Ledger, connect
from .verdicts import RECONCILIATION_VIEWS


def _read(db: str | Ledger | None, sql: str, **params) -> pd.DataFrame:
    ledger = db if isinstance(db, Ledger) else connect(db, mode="read")
    try:
        with ledger.engine.connect() as conn:
            return pd.read_sql_query(text(sql), conn, params=params or None)
    finally:
        if ledger is not db:
            ledger.dispose()


def boots(db: str | Ledger | None = None) -> pd.DataFrame:
    """One row per boot with its deploy."""
    return _read(db, "SELECT b.*, d.commit_sha, d.image_digest, d.label FROM boot b "
                     "JOIN deploy d ON d.id = b.deploy_id ORDER BY b.id")


def facts(db: str | Ledger | None = None) -> pd.DataFrame:
    """Every fact, long form (boot_id, name, value, unit, precision, rank, line, text, pack)."""
    return _read(db, "SELECT boot_id, name, value, unit, precision, rank, process, line, text, pack "
                     "FROM fact ORDER BY boot_id, id")


def runtime(db: str | Ledger | None = None, boot_id: int | None = None) -> pd.DataFrame:
    """Runtime samples (all boots, or one), with logged_at parsed as a datetime."""
    sql = "SELECT * FROM runtime_sample"
    frame = (_read(db, sql + " WHERE boot_id = :boot ORDER BY line", boot=boot_id) if boot_id is not None
             else _read(db, sql + " ORDER BY boot_id, line"))
    frame["logged_at"] = pd.to_datetime(frame["logged_at"], errors="coerce")
    return frame


def view(name: str, db: str | Ledger | None = None) -> pd.DataFrame:
    """A reconciliation view: kv_cost_per_token, kv_reconciliation, capacity_contract, budget_ceilings."""
    if name not in RECONCILIATION_VIEWS:
        raise ValueError(f"no view {name!r}")
    return _read(db, f"SELECT * FROM {name}")  # one of the fixed names
