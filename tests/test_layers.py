"""Who may import what: ledger.db is the only code that opens a ledger, so it is the only code
that imports a database driver."""

from __future__ import annotations

import ast

from conftest import ROOT

DRIVERS = {"sqlite3", "psycopg", "psycopg2"}


def imported_modules(path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_database_layer_imports_a_driver():
    outside = [p for p in (ROOT / "ledger").rglob("*.py") if (ROOT / "ledger" / "db") not in p.parents]
    assert len(outside) > 10
    offenders = {str(p.relative_to(ROOT)): sorted(imported_modules(p) & DRIVERS) for p in outside}
    assert {p: d for p, d in offenders.items() if d} == {}


def test_the_database_layer_does_import_the_drivers():
    """The check above reads the imports it should: sqlite3 is found where it is used."""
    assert "sqlite3" in imported_modules(ROOT / "ledger" / "db" / "sqlite.py")
