"""Where the everyday test selection's time goes (docs/architecture.md, "Guards").

Runs ``pytest -m "not heavy" -n 3`` from the repository (``--pytest-args`` for another
selection) with this file as a pytest plugin in every worker, and prints:

* the wall time and the CPU-seconds charged to the run (its processes and the children they
  waited for), split into the tests' own work in the workers, the processes the tests started,
  the workers' start and collection, and the controller;
* the modules whose tests took the most CPU (their own and their children's);
* the charts the workers saved (``ledger.serve.charts.svg`` and ``save``: how many, their CPU) and
  the new SQLite ledgers they built (``ledger.db.sqlite.build_new``: how many, ms each).

``--overhead N`` instead times pytest's own work per test under xdist: N empty tests, N taking
``tmp_path``, and one test, each run with ``-n 3``; the differences over N are the cost per test.

``--layout`` instead times one chart (the boots chart of every real fixture, and of one log) as
SVG with its constrained layout, with the ``tight`` layout and with none, in this process.

Nothing is asserted; the figures go into docs/architecture.md.  The machine's speed moves the
CPU-seconds themselves (on the project's VM the same commit took 122-156 CPU-seconds within an
hour): compare runs made one after the other, not across days.

Usage: python bench/selection.py [--pytest-args '-m "not heavy" -n 3'] [--top 15]
       python bench/selection.py --overhead 1000
       python bench/selection.py --layout [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUT_ENV = "LEDGER_BENCH_SELECTION_OUT"  # the folder the plugin writes each process's figures into


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


# -- the plugin (loaded by pytest in the controller and in each worker: -p selection) ---------------


class _Figures:
    def __init__(self) -> None:
        self.tests: list[tuple[str, float, float]] = []  # node id, own CPU, its children's CPU
        self.charts = [0, 0.0]  # saved, CPU-seconds
        self.ledgers = [0, 0.0]  # built, seconds

    def wrap(self, module, name: str, tally: list, clock) -> None:
        original = getattr(module, name)

        def timed(*args, **kwargs):
            start = clock()
            try:
                return original(*args, **kwargs)
            finally:
                tally[0] += 1
                tally[1] += clock() - start

        setattr(module, name, timed)


_FIGURES = _Figures()


def pytest_configure(config) -> None:
    if not os.environ.get(OUT_ENV):
        return
    # the modules that draw and build: cheap to import (pandas and matplotlib load when a chart is drawn)
    from ledger.db import sqlite
    from ledger.serve import charts

    _FIGURES.wrap(charts, "svg", _FIGURES.charts, lambda: _cpu(resource.RUSAGE_SELF))
    _FIGURES.wrap(charts, "save", _FIGURES.charts, lambda: _cpu(resource.RUSAGE_SELF))
    _FIGURES.wrap(sqlite, "build_new", _FIGURES.ledgers, time.perf_counter)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ARG001 (pytest's hook signature)
    own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    yield
    _FIGURES.tests.append((item.nodeid, _cpu(resource.RUSAGE_SELF) - own, _cpu(resource.RUSAGE_CHILDREN) - children))


def pytest_unconfigure(config) -> None:
    folder = os.environ.get(OUT_ENV)
    if not folder:
        return
    name = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    Path(folder, f"{name}.json").write_text(json.dumps({
        "tests": _FIGURES.tests, "charts": _FIGURES.charts, "ledgers": _FIGURES.ledgers,
        "cpu": _cpu(resource.RUSAGE_SELF), "children": _cpu(resource.RUSAGE_CHILDREN)}))


# -- the bench ------------------------------------------------------------------------------------


def _pytest(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float, str]:
    """Wall seconds, CPU-seconds charged and the last line of a pytest run."""
    before = _cpu(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=cwd,
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return wall, _cpu(resource.RUSAGE_CHILDREN) - before, last


def selection(pytest_args: list[str], top: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, **{OUT_ENV: folder})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "bench"), env.get("PYTHONPATH")]))
        wall, charged, last = _pytest([*pytest_args, "-p", "selection"], env)
        found = {p.stem: json.loads(p.read_text()) for p in Path(folder).glob("*.json")}
    workers = {k: v for k, v in found.items() if k != "controller"} or found
    tests = [t for w in workers.values() for t in w["tests"]]
    own, children = sum(t[1] for t in tests), sum(t[2] for t in tests)
    rest = sum(w["cpu"] for w in workers.values()) - own
    print(f"pytest {shlex.join(pytest_args)}: {last}")
    print(f"wall {wall:.1f} s, {charged:.1f} CPU-seconds charged to the run")
    print(f"  the tests' own work in the workers   {own:6.1f}")
    print(f"  the processes the tests started      {children:6.1f}")
    print(f"  the workers' start and collection    {rest:6.1f}  ({len(workers)} workers)")
    if "controller" in found and workers is not found:
        print(f"  the controller                       {found['controller']['cpu']:6.1f}")
    charts = [sum(w["charts"][i] for w in workers.values()) for i in (0, 1)]
    ledgers = [sum(w["ledgers"][i] for w in workers.values()) for i in (0, 1)]
    print(f"charts saved in the workers: {charts[0]}, {charts[1]:.1f} CPU-seconds")
    if ledgers[0]:
        print(f"new SQLite ledgers built in the workers: {ledgers[0]}, {1000 * ledgers[1] / ledgers[0]:.1f} ms each")
    modules: dict[str, list[float]] = {}
    for node, cpu, child in tests:
        tally = modules.setdefault(node.split("::")[0], [0.0, 0.0, 0])
        tally[0] += cpu
        tally[1] += child
        tally[2] += 1
    print(f"the {top} modules that took the most CPU (own + children, tests):")
    for name, (cpu, child, n) in sorted(modules.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:top]:
        print(f"  {cpu + child:6.1f} = {cpu:5.1f} + {child:5.1f}  {n:5d}  {name}")


def overhead(n: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "conftest.py").write_text("")
        Path(folder, "test_empty.py").write_text(
            f"import pytest\n\n\n@pytest.mark.parametrize('i', range({n}))\ndef test_empty(i):\n    pass\n")
        Path(folder, "test_tmp_path.py").write_text(
            f"import pytest\n\n\n@pytest.mark.parametrize('i', range({n}))\ndef test_tmp_path(i, tmp_path):\n    pass\n")
        runs = {name: _pytest(["-n", "3", target], dict(os.environ), cwd=Path(folder))
                for name, target in [("one test", "test_empty.py::test_empty[0]"), ("empty", "test_empty.py"),
                                     ("tmp_path", "test_tmp_path.py")]}
    for name, (wall, cpu, _) in runs.items():
        print(f"{name:>9}: wall {wall:5.2f} s, {cpu:5.2f} CPU-seconds")
    base = runs["one test"][1]
    print(f"per test under -n 3: {1000 * (runs['empty'][1] - base) / n:.1f} ms of CPU empty, "
          f"{1000 * (runs['tmp_path'][1] - base) / n:.1f} ms with tmp_path")


@contextlib.contextmanager
def _layout(engine: str | None):
    """The charts' figures made with this layout engine instead of theirs (None: no engine, as
    a figure made without one; switching an engine off afterwards leaves a placeholder that
    still makes savefig draw twice)."""
    import matplotlib.figure

    made = matplotlib.figure.Figure

    class Laid(made):
        def __init__(self, *args, layout=None, **kwargs):  # noqa: ARG002 (the charts' own, replaced)
            super().__init__(*args, layout=engine, **kwargs)

    matplotlib.figure.Figure = Laid
    try:
        yield
    finally:
        matplotlib.figure.Figure = made


def layout(repeat: int) -> None:
    from click.testing import CliRunner

    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "ledger.db")
        one = os.path.join(folder, "one.db")
        runner = CliRunner()
        real = sorted(str(p) for p in (ROOT / "fixtures" / "real").glob("*.log"))
        from ledger.cli import main

        for target, logs in ((db, real), (one, [str(ROOT / "fixtures" / "real" / "005_v1-runpod-iso-timestamps-gptoss120b-workerproc-failed.log")])):
            runner.invoke(main, ["--db", target, "ingest", *logs], catch_exceptions=False)
        from ledger.db.connect import open_read_only
        from ledger.serve import charts, data

        for target, what in ((one, "one log (005)"), (db, "every real fixture's boots")):
            ledger = open_read_only(target)
            try:
                frame, title = data.history_frame(ledger, None)
            finally:
                ledger.dispose()
            charts.svg(charts.boots_figure(frame, title))  # imports and font cache, once
            times = {}
            for engine in ("constrained", "tight", None):
                start = time.perf_counter()
                with _layout(engine):
                    for _ in range(repeat):
                        charts.svg(charts.boots_figure(frame, title))
                times[engine or "no"] = (time.perf_counter() - start) / repeat
            print(f"boots chart of {what} ({len(frame)} boots) as SVG: "
                  + ", ".join(f"{k} layout {v:.2f} s" for k, v in times.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pytest-args", default='-m "not heavy" -n 3')
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--overhead", type=int, metavar="N")
    ap.add_argument("--layout", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if args.overhead:
        overhead(args.overhead)
    elif args.layout:
        layout(args.repeat)
    else:
        selection(shlex.split(args.pytest_args), args.top)


if __name__ == "__main__":
    main()
