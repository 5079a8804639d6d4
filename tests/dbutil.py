"""Reading the test ledger, whatever database it is (SQLite file or PostgreSQL URL)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from sqlalchemy import create_engine, text

IS_PG = os.environ.get("LEDGER_TEST_DB", "sqlite") == "postgresql"
sqlite_only = pytest.mark.skipif(IS_PG, reason="about SQLite files; the PostgreSQL run covers its own twin")
postgres_only = pytest.mark.skipif(not IS_PG, reason="runs in the PostgreSQL pass")

_ENGINES: dict[str, Any] = {}


def _engine(db: str):
    if db not in _ENGINES:
        _ENGINES[db] = create_engine(db if "://" in db else f"sqlite:///{db}")
    return _ENGINES[db]


def rows(db: str, sql: str) -> list[tuple]:
    with _engine(db).connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def dict_rows(db: str, sql: str) -> list[dict[str, Any]]:
    with _engine(db).connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(sql))]


def dispose(db: str) -> None:
    engine = _ENGINES.pop(db, None)
    if engine is not None:
        engine.dispose()
