"""Shared fixtures: paths to the real and synthetic logs, a fresh ledger per test, a CLI runner."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real"
SYNTH = ROOT / "fixtures" / "synthetic"
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def db(tmp_path, monkeypatch) -> str:
    """A fresh ledger file; LEDGER_DB points at it so commands need no --db."""
    path = str(tmp_path / "ledger.db")
    monkeypatch.setenv("LEDGER_DB", path)
    return path


@pytest.fixture
def cli():
    from click.testing import CliRunner

    from ledger.cli import main

    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(main, list(args), input=input, catch_exceptions=False)

    return invoke
