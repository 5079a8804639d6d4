"""The examples people copy run as written: the ``pycon`` blocks of the README and of docs/ (the
guide's) and every ``>>>`` example in a docstring of ``ledger`` (``ledger.parsers`` too), from the
repository's folder, on the ledger the README's quick start fills (its commands run as written
into a new ledger: the real excerpts, then the reconcile and radiance boots, labelled)."""

from __future__ import annotations

import doctest
import importlib
import io
import re
from pathlib import Path

import pytest
from conftest import ROOT

import ledger

# fenced ```pycon blocks: interactive sessions with their output
_PYCON_BLOCK = re.compile(r"^```pycon\n(.*?)^```", re.MULTILINE | re.DOTALL)
_FLAGS = doctest.NORMALIZE_WHITESPACE


# a doctest's prompt at the start of a line (inside a docstring)
_PROMPT = re.compile(r"^\s*>>> ", re.MULTILINE)


def _modules_with_examples() -> list[str]:
    """Every module of the package (the parsers are ``ledger.parsers``) whose docstrings hold a
    ``>>>`` example (``__main__`` runs the CLI when imported; the migrations are Alembic's
    scripts, not a library).  Found in the source text, not by importing every module: this runs
    at collection, in every worker (importing them all, pandas and matplotlib included, took
    1.7 s a worker); the test below imports each module found and fails on one without examples."""
    package = Path(ledger.__file__).parent
    names = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__main__" or parts[:2] == ("ledger", "migrations"):
            continue
        if _PROMPT.search(path.read_text(encoding="utf-8")):
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _run(tests: list[doctest.DocTest]) -> tuple[doctest.TestResults, str]:
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    for test in tests:
        runner.run(test, out=out.write)
    return runner.summarize(verbose=False), out.getvalue()


@pytest.fixture(scope="session")
def _quick_start_file(quick_start_run):
    """A SQLite ledger the README's quick start filled, run as written (conftest's quick_start_run)."""
    path, done = quick_start_run
    for line in done:
        assert line.stderr == "", line.stderr
    return path


@pytest.fixture
def quick_start(db, monkeypatch, _quick_start_file):
    """The README's quick start's ledger, in a new ledger (a copy of the file; on PostgreSQL,
    the quick start run into the server's), with the repository's folder as the working one."""
    import shutil

    import quickstart

    monkeypatch.chdir(ROOT)
    if "://" in db:
        for done in quickstart.fill(db):
            assert done.stderr == "", done.stderr
    else:
        shutil.copy(_quick_start_file, db)
    return db


def test_the_readme_examples_run_as_shown(quick_start):
    parser = doctest.DocTestParser()
    tests = [parser.get_doctest(block, {}, f"{path.relative_to(ROOT)} pycon block {n}", str(path), 0)
             for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
             for n, block in enumerate(_PYCON_BLOCK.findall(path.read_text()), 1)]
    result, report = _run(tests)
    assert result.failed == 0, report
    assert len(tests) >= 2 and result.attempted >= 10  # the frames and the parser examples


def test_the_modules_with_examples_include_the_two_entry_points():
    """The module list below is found, not written out: it must at least hold the two documented
    ways in, or the parametrized test would check nothing."""
    assert {"ledger.parsers", "ledger.frames"} <= set(_modules_with_examples())


@pytest.mark.parametrize("name", _modules_with_examples())
def test_the_docstring_examples_run_as_shown(quick_start, name):
    tests = [test for test in doctest.DocTestFinder().find(importlib.import_module(name)) if test.examples]
    result, report = _run(tests)
    assert result.failed == 0, report
    assert result.attempted > 0
