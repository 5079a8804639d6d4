"""Shared fixtures: paths to the real and synthetic logs, a fresh ledger per test, a CLI runner."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real"
SYNTH = ROOT / "fixtures" / "synthetic"
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Outputs are read as a pipe gives them (no terminal width) unless a test sets one: pytest-xdist's
# workers are started with COLUMNS=80 and LINES=24, and a shell may export COLUMNS, either of which
# would fit every table and wrap every line the tests compare
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

# The suite writes and reads bytecode as Python does by default, even where PYTHONDONTWRITEBYTECODE
# is set (container images often set it; bench/boot_ingest.py unsets it for its runs too). Without
# bytecode every xdist worker, and every `ledger` a test starts, compiles ledger's modules from
# source again, and pytest rewrites the assertions of every test module and of hypothesis's 120
# modules (a plugin's package: all of it is marked for rewriting) again in every worker: about a
# quarter of the everyday selection's CPU (217 -> 158 CPU-seconds, 2026-12-02). This runs in the
# controller before xdist starts its workers, so they and the tests' children inherit it. The
# .pyc files go where Python puts them, in __pycache__ folders (.gitignore lists them), or under
# PYTHONPYCACHEPREFIX if that is set.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False


# The modules whose tests take long on the clock, longest first: real servers drawing charts,
# watches waiting out idle thresholds and webhook retries, a chart drawn in a child. They run
# first (``pytest_collection_modifyitems``), and under xdist each worker takes the next few tests
# as it frees up (``pytest_configure``), so they spread over the workers and the quick tests fill
# in after them; in the alphabet's order the watch modules came last, and one worker ran the last
# of them alone for 10-15 s while the others had finished.
FIRST = ["test_watch_serve.py", "test_plot.py", "test_watch_alerts.py", "test_serve.py", "test_doctests.py",
         "test_docs.py", "test_upgrade.py", "test_watch.py", "test_runtime.py", "test_sweep_and_decode.py",
         "test_formula.py"]


def pytest_configure(config):
    # xdist's own default hands each worker a quarter of its share of the run at the start, so
    # where a test runs is fixed by its place in the list; at most four at a time, the first go to
    # whichever worker is free (a user's own --maxschedchunk is kept)
    if getattr(config.option, "maxschedchunk", False) is None:
        config.option.maxschedchunk = 4


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))  # stable: the rest keep their order


@pytest.fixture(autouse=True, scope="session")
def _no_terminal_size_in_childrens_environment():
    """GNU readline, once imported (pytest's debugging plugin does), sets COLUMNS and LINES in the
    process's C environment behind ``os.environ``'s back, and a child started without ``env=``
    inherits them: a run without xdist then fitted its children's tables to 80 columns."""
    for name in ("COLUMNS", "LINES"):
        if name not in os.environ:
            os.unsetenv(name)


@contextmanager
def new_ledger(folder: Path):
    """A fresh, empty ledger's location: a SQLite file in ``folder``; with
    LEDGER_TEST_DB=postgresql a new database on the server that LEDGER_TEST_PG names (an admin
    URL), dropped afterwards."""
    import os

    if os.environ.get("LEDGER_TEST_DB", "sqlite") != "postgresql":
        yield str(folder / "ledger.db")
        return
    import uuid

    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    admin_url = os.environ["LEDGER_TEST_PG"]
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"ledger_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        import dbutil

        dbutil.dispose(url)
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture
def db(tmp_path, monkeypatch):
    """A fresh, empty ledger; LEDGER_DB points at it so commands need no --db.

    SQLite by default; with LEDGER_TEST_DB=postgresql a new database on the server that
    LEDGER_TEST_PG names (an admin URL), dropped after the test."""
    with new_ledger(tmp_path) as url:
        monkeypatch.setenv("LEDGER_DB", url)
        yield url


@pytest.fixture(scope="session")
def quick_start_run(tmp_path_factory):
    """The README's quick start run as written (tests/quickstart.py) into a new SQLite ledger, once
    per run (``_template``: the first xdist worker to ask runs it, the others wait and read what it
    printed; test_docs checks that, the doctests copy the ledger): the ledger's path and what each
    of its lines printed."""
    import json
    import subprocess

    import quickstart

    printed = _shared_folder(tmp_path_factory) / "ledger-templates" / "quick-start.json"

    def run(db: str) -> None:
        done = quickstart.fill(db)
        # written before the template is in place, so a worker that finds the ledger finds this too
        printed.write_text(json.dumps([[r.args, r.returncode, r.stdout, r.stderr] for r in done]))

    path = _template("quick-start", run, tmp_path_factory)
    return path, [subprocess.CompletedProcess(*r) for r in json.loads(printed.read_text())]


_TEMPLATES: dict[str, Path] = {}


def _shared_folder(tmp_path_factory) -> Path:
    """A folder of this run that every xdist worker sees (the workers' base folders are inside
    one per run); without xdist, the run's own base folder."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _template(name: str, build, tmp_path_factory) -> Path:
    """The ledger ``build`` makes of an empty one, built once per run: the first worker to ask
    builds it under a lock (one build costs far more than waiting for it), the others copy it."""
    import fcntl

    import dbutil

    template = _TEMPLATES.get(name)
    if template is not None:
        return template
    folder = _shared_folder(tmp_path_factory) / "ledger-templates"
    folder.mkdir(exist_ok=True)
    template = folder / f"{name}.db"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            building = tmp_path_factory.mktemp(f"template-{name}") / "ledger.db"
            build(str(building))
            dbutil.dispose(str(building))
            # the copy is the file alone: everything committed must be in it, not in a -wal (a
            # read-only connection that closes last leaves an empty one)
            wal = Path(f"{building}-wal")
            assert not wal.exists() or wal.stat().st_size == 0, f"{wal} is left after the build"
            os.replace(building, template)  # whole or not at all, for the workers that wait
    _TEMPLATES[name] = template
    return template


def template_copy(name: str, build, tmp_path_factory) -> str:
    """A SQLite ledger of a module's own (for a fixture of ``scope="module"``) that ``build(path)``
    makes of an empty one: a copy of the run's template (``_template``), built once per run, not
    once in every xdist worker that runs one of the module's tests."""
    import shutil

    path = tmp_path_factory.mktemp(name) / "ledger.db"
    shutil.copyfile(_template(name, build, tmp_path_factory), path)
    return str(path)


@contextmanager
def module_ledger(name: str, build, tmp_path_factory):
    """``template_copy`` on SQLite; with LEDGER_TEST_DB=postgresql ``build(url)`` runs on a new
    database of the module's own, dropped afterwards."""
    if os.environ.get("LEDGER_TEST_DB", "sqlite") != "postgresql":
        yield template_copy(name, build, tmp_path_factory)
        return
    with new_ledger(tmp_path_factory.mktemp(name)) as db:
        build(db)
        yield db


def hears_ctrl_c() -> None:
    """A child's ``preexec_fn`` for a test that sends it SIGINT, as Ctrl-C at a terminal would: a
    suite started in the background by a shell without job control has SIGINT ignored, its
    children inherit that, and Python then hears no Ctrl-C at all."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ledger_on(db: str, *args: str):
    """``ledger --db DB ARGS`` in this process, asserted to exit 0 (for the builds of ``filled``)."""
    from click.testing import CliRunner

    from ledger.cli import main

    result = CliRunner().invoke(main, ["--db", db, *args], catch_exceptions=False)
    assert result.exit_code == 0, (args, result.output)
    return result


# the seed notes' four boots (fixtures/reconcile), in the order test_reconcile and test_notes name them
SEED_BOOTS = ["bf16-3x241664-ready", "fp8-5x262144-runtime-oom", "fp8-4x262144-ready", "fp8-3x262144-ready"]


def ingest_seed_boots(db: str) -> None:
    """A build for ``filled``: the ``SEED_BOOTS``, each ingested under its name as its label."""
    for name in SEED_BOOTS:
        ledger_on(db, "ingest", str(ROOT / "fixtures" / "reconcile" / f"{name}.log"), "--label", name)


@pytest.fixture
def filled(db, tmp_path_factory):
    """``filled(name, build)`` makes the test's fresh ledger what ``build(url)`` makes of an empty
    one, and returns its location. On SQLite ``build`` runs once per run (``_template``: the xdist
    workers share it), into a template ledger whose file is then copied (a schema and an ingest
    cost far more than a file copy); on PostgreSQL it runs on the test's own database. ``name`` names what ``build`` makes: one name,
    one build. A second fill in the same test builds on what the first made, in place."""
    filled_once: list[str] = []

    def fill(name: str, build) -> str:
        import shutil

        import dbutil

        if dbutil.IS_PG or filled_once:
            build(db)
            return db
        filled_once.append(name)
        shutil.copyfile(_template(name, build, tmp_path_factory), db)
        return db

    return fill


@pytest.fixture
def cli():
    from click.testing import CliRunner

    from ledger.cli import main

    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(main, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture(autouse=True)
def _no_hf_cache(tmp_path_factory, monkeypatch):
    """The ingest looks a model's config.json up in the local Hugging Face cache: every test
    sees an empty one (a test that wants one sets HF_HOME or HF_HUB_CACHE itself)."""
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path_factory.getbasetemp() / "empty-hf-hub"))
