"""Reading the test ledger, whatever database it is (SQLite file or PostgreSQL URL)."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

import pytest

IS_PG = os.environ.get("LEDGER_TEST_DB", "sqlite") == "postgresql"
sqlite_only = pytest.mark.skipif(IS_PG, reason="about SQLite files; the PostgreSQL run covers its own twin")
postgres_only = pytest.mark.skipif(not IS_PG, reason="runs in the PostgreSQL pass")

_ENGINES: dict[str, Any] = {}


def _engine(db: str):
    from sqlalchemy import create_engine

    if db not in _ENGINES:
        _ENGINES[db] = create_engine(db if "://" in db else f"sqlite:///{db}")
    return _ENGINES[db]


def query(db: str, sql: str) -> tuple[list[str], list[tuple]]:
    """The column names and rows of ``sql``. A SQLite file (the SQLite pass's ledgers are paths)
    is read with sqlite3, the driver SQLAlchemy's SQLite dialect would use, so that a test worker
    that never needs SQLAlchemy does not import it (a third of a second a worker); a URL
    (PostgreSQL) goes through SQLAlchemy."""
    if "://" not in db:
        conn = sqlite3.connect(db)
        try:
            cur = conn.execute(sql)
            return [d[0] for d in cur.description or ()], [tuple(r) for r in cur]
        finally:
            conn.close()
    from sqlalchemy import text

    with _engine(db).connect() as conn:
        result = conn.execute(text(sql))
        return (list(result.keys()) if result.returns_rows else []), [tuple(r) for r in result]


def rows(db: str, sql: str) -> list[tuple]:
    return query(db, sql)[1]


def dict_rows(db: str, sql: str) -> list[dict[str, Any]]:
    names, found = query(db, sql)
    return [dict(zip(names, r, strict=True)) for r in found]


def dispose(db: str) -> None:
    engine = _ENGINES.pop(db, None)
    if engine is not None:
        engine.dispose()


# runs ledger commands one after another in this fresh interpreter, as `ledger ARGS` runs each, then
# prints (last, on stdout) each one's exit code and the modules (full names) loaded after each
_IMPORTS_PROBE = """import json, sys
from ledger.cli import main
codes, loaded = [], []
for args in json.loads(sys.argv[1]):
    try:
        main(args, prog_name="ledger")
        codes.append(0)
    except SystemExit as exit:
        codes.append(0 if exit.code is None else exit.code if isinstance(exit.code, int) else 1)
    loaded.append(sorted(sys.modules))
print("\\n" + json.dumps([codes, loaded]))
"""


def _probe(commands: tuple[list[str], ...], cwd: str | None, env: dict[str, str] | None
           ) -> tuple[list[int], list[list[str]], Any]:
    """The commands' exit codes and, after each, the modules loaded (full names), and the run."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _IMPORTS_PROBE, json.dumps(commands)], capture_output=True,
                          text=True, check=False, cwd=cwd, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    codes, loaded = json.loads(done.stdout.splitlines()[-1])
    return codes, loaded, done


def _top_level(modules: list[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def imports_of(*commands: list[str], cwd: str | None = None, env: dict[str, str] | None = None,
               submodules: bool = False) -> tuple[list[int], set[str], str]:
    """Runs each command (``ledger``'s arguments) in turn in one new Python process: the exit code
    of each, the top-level modules that process had loaded after the last (every module's full
    name with ``submodules``), and its stderr."""
    codes, loaded, done = _probe(commands, cwd, env)
    return codes, set(loaded[-1]) if submodules else _top_level(loaded[-1]), done.stderr


def imports_after_each(*commands: list[str], cwd: str | None = None, submodules: bool = False
                       ) -> tuple[list[int], list[set[str]], str]:
    """``imports_of`` that says which top-level modules (every module's full name with
    ``submodules``) were loaded after each command (one process for a test that asks of several
    commands, instead of one process each)."""
    codes, loaded, done = _probe(commands, cwd, None)
    return codes, [set(modules) if submodules else _top_level(modules) for modules in loaded], done.stderr


def loaded_modules(*commands: list[str], env: dict[str, str] | None = None) -> tuple[list[int], set[str], str]:
    """``imports_of`` with every module by its full name (``importlib.metadata``, not
    ``importlib``), the process's stdout instead of its stderr, and ``env`` for the process (a
    completion's variables)."""
    codes, loaded, done = _probe(commands, None, env)
    return codes, set(loaded[-1]), done.stdout
