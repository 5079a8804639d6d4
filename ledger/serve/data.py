"""What ``ledger serve``'s pages and ``ledger plot``'s charts add to the library's objects: the
boot page's context, the diff page's markdown, the chart frames (pandas, from the same rows),
and the server's memory of what it built.

The reads are the library's (``ledger.queries``, ``ledger.diff``, ``ledger.reconcile``,
``ledger.runtime``), so every page's JSON is the object the CLI prints.

The ledger is opened read-only: SQLite with ``mode=ro`` and ``query_only``, PostgreSQL in
read-only transactions; an out-of-date schema is refused, never migrated.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from ..db import models as m
from ..db.connect import Ledger
from ..diff import diff as diff_boots
from ..errors import LedgerError
from ..queries import (
    boot_figures,
    boot_neighbours,
    deploy_detail,
    deploy_name,
    history,
    resolve_boot,
    watched,
)
from ..runtime import runtime_report
from ..verdicts import view_rows

if TYPE_CHECKING:
    import pandas as pd

# what a deploy's boots are charted by: the figures of their history rows, and one fact more
# (queries.EXTRA_FACTS)
BOOT_SERIES = ("kv_tokens", "concurrency", "kv_memory", "weights", "graph_memory")
RUNTIME_SERIES = ("prompt_throughput_tps", "generation_throughput_tps", "running_reqs", "waiting_reqs",
                  "gpu_kv_cache_usage_pct")
SPEC_SERIES = ("spec_mean_acceptance_length", "spec_draft_acceptance_rate_pct")


# -- pages ------------------------------------------------------------------------------------------


def boot_page(ledger: Ledger, obj: dict[str, Any]) -> dict[str, Any]:
    """The boot page's object: ``show``'s (``obj``), its deploy's id and name, its neighbours
    (``queries.boot_neighbours``), its ``ledger runtime`` report, and the watch still reading
    it (``live``)."""
    bid = int(obj["boot"])
    near = boot_neighbours(ledger, bid)
    return {**obj, "deploy": {**obj["deploy"], **near["deploy"]}, "ready_at": near["ready_at"],
            "ended_at": near["ended_at"], "other_boots": near["other_boots"],
            "runtime_report": runtime_report(ledger, str(bid)), "live": watched(ledger)["boots"].get(bid)}


def deploy_sweep(ledger: Ledger, deploy_id: int) -> dict[str, Any] | None:
    """``ledger sweep --format json`` of the knob that varies between the deploy's boots (the
    first of ``ledger.sweep.KNOBS`` that does), or None: no knob varies, or its boots are of
    more than one group."""
    from ..sweep import sweep, varying_knob

    knob = varying_knob(ledger, deploy_id)
    if knob is None:
        return None
    try:
        return sweep(ledger, knob, deploy_ids=[deploy_id]).to_json()
    except LedgerError:
        return None


def diff(ledger: Ledger, a: str, b: str, show_all: bool = False) -> dict[str, Any]:
    """``ledger diff --format json --no-redact`` (the page redacts it, then adds the markdown
    ``--format markdown`` prints)."""
    return diff_boots(ledger, a, b, show_all).to_json()


def deploy_names(ledger: Ledger) -> list[str]:
    """Every deploy's name (its label, else commit/digest), to pick on the diff page: a deploy
    means its latest boot there as on the command line."""
    with ledger.Session() as s:
        return [deploy_name(d) for d in s.execute(select(m.Deploy).order_by(m.Deploy.id)).scalars()]


# -- chart frames -----------------------------------------------------------------------------------


def boots_frame(ledger: Ledger, rows: list[dict[str, Any]], figures: dict[str, dict[str, Any]] | None = None
                ) -> pd.DataFrame:
    """One row per boot — started (datetime), boot, deploy, outcome and the charted figures —
    oldest first, from ``history`` rows."""
    import pandas as pd

    figures = figures if figures is not None else boot_figures(ledger, [int(r["boot"]) for r in rows])
    frame = pd.DataFrame([{"boot": r["boot"], "deploy": r["deploy"], "outcome": r["outcome"],
                           "started": r["started_at"],
                           **{col: r.get(col) for col in BOOT_SERIES}, **figures.get(r["boot"], {})}
                          for r in rows],
                         columns=["boot", "deploy", "outcome", "started", *BOOT_SERIES])
    ids = [int(r["boot"]) for r in rows]
    groups = {str(r["boot_id"]): r["group_key"] for r in view_rows(ledger, "boot_kv", ids)} if ids else {}
    frame["group"] = frame["boot"].map(groups)
    frame["started"] = pd.to_datetime(frame["started"], errors="coerce")
    for col in BOOT_SERIES:
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
    return frame.sort_values(["started", "boot"], na_position="first").reset_index(drop=True)


def history_frame(ledger: Ledger, deploy_ref: str | None) -> tuple[pd.DataFrame, str]:
    """``ledger plot history``: every boot (or a deploy's), and a title."""
    rows = history(ledger, deploy_ref)
    if not rows:
        raise LedgerError("no boots to plot")
    title = f"history{' of ' + deploy_ref if deploy_ref else ''}: {_boots(len(rows))}"
    return boots_frame(ledger, rows), title


def deploy_frame(ledger: Ledger, ref: str, obj: dict[str, Any] | None = None) -> tuple[pd.DataFrame, str]:
    """``ledger plot deploy`` and the deploy page: a deploy's boots (from ``obj``, the deploy's
    object when the caller has it), and a title."""
    obj = obj if obj is not None else deploy_detail(ledger, ref)
    if not obj["boots"]:
        raise LedgerError(f"{ref}: that deploy has no boots")
    figures = {str(k): v for k, v in obj["figures"].items()}
    return boots_frame(ledger, obj["boots"], figures), f"deploy {obj['deploy']['name']}: {_boots(len(obj['boots']))}"


def _boots(n: int) -> str:
    return f"{n} boot{'s' if n != 1 else ''}"


# past this many stats intervals a chart's bins are averaged in SQL: a page costs what it draws,
# not a row of Python per sample (a 10-hour DP=4 log has 14,400; one of 10^6 took 14 s and 1 GB)
DOWNSAMPLE_OVER = 50_000


def runtime_frame(ledger: Ledger, ref: str, report: dict[str, Any] | None = None
                  ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A boot's runtime samples (one row per stats interval or spec-decode report, ``at`` the
    log time as a datetime) and its ``ledger runtime`` report (the crash is marked from it;
    pass it when the caller has it already).  A boot of more than ``DOWNSAMPLE_OVER`` timed
    stats intervals comes as one row per engine and chart bin, the bin's means, averaged by the
    database (``frame.attrs``: the bin and the interval, for ``charts.runtime_series``)."""
    with ledger.reading() as r:
        bid = resolve_boot(r, ref).id  # a reference to no boot is a 404 before pandas loads
    import pandas as pd

    with ledger.Session() as s:
        frame = _binned_runtime(s, bid)
        if frame is None:
            S = m.RuntimeSample.c
            cols = [S.kind, S.line, S.logged_at, S.engine, *(getattr(S, c) for c in RUNTIME_SERIES + SPEC_SERIES)]
            rows = s.execute(select(*cols).where(S.boot_id == bid).order_by(S.line)).all()
            names = ["kind", "line", "logged_at", "engine", *RUNTIME_SERIES, *SPEC_SERIES]
            frame = _frame(rows, names)
            frame["at"] = pd.to_datetime(frame["logged_at"], errors="coerce", format="%Y-%m-%d %H:%M:%S")
    report = report if report is not None else runtime_report(ledger, str(bid))
    return frame, report


def _frame(rows: Any, names: list[str]) -> pd.DataFrame:
    """A frame of result rows.  As plain tuples: pandas asks each SQLAlchemy ``Row`` whether it
    has a ``dtype`` (a failed attribute lookup each), 0.13 s of a 10-hour runtime page's 0.8 s."""
    import pandas as pd

    return pd.DataFrame.from_records(list(map(tuple, rows)), columns=names)


def _binned_runtime(s: Any, bid: int) -> pd.DataFrame | None:
    """The samples of a long-served boot averaged per kind, engine and chart bin, by the
    database; None for a boot the chart draws from every sample (at most ``DOWNSAMPLE_OVER``
    stats intervals, or times the log did not print as dates)."""
    import pandas as pd
    from sqlalchemy import and_, case, join

    from .charts import _bin

    R = m.RuntimeSampleRow
    stats = R.kind == 0  # staging.KIND_CODES: engine_stats
    n, untimed = s.execute(select(func.count(), func.count(case((R.logged_at_num.is_(None), 1))))
                           .where(R.boot_id == bid, stats)).one()
    if n <= DOWNSAMPLE_OVER or untimed:
        return None
    # the first engine's span and mean interval pick the bin, as charts.runtime_series does
    first = s.execute(select(func.min(func.coalesce(R.engine, 0))).where(R.boot_id == bid, stats)).scalar()
    count, lo, hi = s.execute(select(func.count(), func.min(R.logged_at_num), func.max(R.logged_at_num))
                              .where(R.boot_id == bid, stats, func.coalesce(R.engine, 0) == first)).one()
    if count < 2 or hi <= lo:
        return None
    step = (hi - lo) / (count - 1)
    size = _bin(float(hi - lo), step)
    if size is None:
        return None
    width = int(pd.Timedelta(size).total_seconds())
    S = m.RuntimeSample.c
    bucket = (R.logged_at_num // width).label("bucket")  # the bin's start is bucket * width
    series = RUNTIME_SERIES + SPEC_SERIES
    def mean(c: str) -> Any:
        # decode speed is a figure of the intervals that decoded (charts.runtime_series): an idle
        # interval's 0 t/s is not averaged into its bin
        if c == "generation_throughput_tps":
            return func.avg(case((S.running_reqs > 0, S.generation_throughput_tps)))
        return func.avg(getattr(S, c))

    q = (select(S.kind, func.min(S.line), bucket, S.engine, *(mean(c) for c in series))
         .select_from(join(m.RuntimeSample, R, and_(R.boot_id == S.boot_id, R.id == S.id)))
         .where(S.boot_id == bid, R.logged_at_num.is_not(None))
         .group_by(S.kind, S.engine, bucket).order_by(bucket, S.kind, S.engine))
    names = ["kind", "line", "bucket", "engine", *series]
    frame = _frame(s.execute(q).all(), names)
    for c in series:
        frame[c] = pd.to_numeric(frame[c], errors="coerce")
    frame["at"] = pd.to_datetime(frame["bucket"].astype("int64") * width, unit="s")
    frame["logged_at"] = frame["at"].dt.strftime("%Y-%m-%d %H:%M:%S")
    frame.attrs.update(bin=size, step=step)
    return frame.drop(columns="bucket")


# -- a read-only server's memory -------------------------------------------------------------------------


class Cache:
    """Page objects kept while the ledger stays as it was.

    Boots, facts and samples are never changed in place: the ledger changes by new boots and
    deploys, a renamed deploy or a deploy setting.  A cheap fingerprint of those (a few
    milliseconds) is taken on every request, and an object built under another fingerprint is
    not used.  Worth it because the reconciliation views are evaluated over every boot (about a
    second at 5,000 boots).

    Identical requests in flight are built once: the first builds, the others wait for its
    object (six requests for one heavy page cost one build, not six at once).  At most
    ``heavy`` objects are built at a time (the machine's cores); the others queue."""

    def __init__(self, ledger: Ledger, size: int = 64, heavy: int = 2):
        import threading
        from collections import OrderedDict

        self.ledger, self.size = ledger, size
        self.items: OrderedDict[Any, Any] = OrderedDict()
        self.lock = threading.Lock()
        self.flights: dict[Any, _Flight] = {}  # objects being built, by key
        self.heavy = threading.BoundedSemaphore(heavy)
        self._building = threading.local()  # a build that asks for another (a page for its object)

    def fingerprint(self) -> tuple[Any, ...]:
        import hashlib

        with self.ledger.Session() as s:
            boots = s.execute(select(func.count(), func.max(m.Boot.id))).one()
            settings = s.execute(select(func.count(), func.max(m.DeploySetting.set_at))).one()
            names = s.execute(select(m.Deploy.id, m.Deploy.label).order_by(m.Deploy.id)).all()
            # a watched boot grows in place (ledger watch): its samples and its watch's touches
            samples = s.execute(select(func.max(m.BootRuntime.last_sample_id))).scalar()
            watches = s.execute(select(func.count(), func.max(m.Watch.seen_at))).one()
        return (*boots, *settings, samples, *watches, hashlib.sha256(repr(names).encode()).hexdigest())

    def get(self, key: Any, make: Any) -> Any:
        full = (self.fingerprint(), key)
        with self.lock:
            if full in self.items:
                self.items.move_to_end(full)
                return self.items[full]
            flight = self.flights.get(full)
            leader = flight is None
            if flight is None:
                flight = self.flights[full] = _Flight()
        if not leader:
            return flight.result()
        try:
            nested = getattr(self._building, "depth", 0) > 0  # holds a slot already
            if not nested:
                self.heavy.acquire()
            self._building.depth = getattr(self._building, "depth", 0) + 1
            try:
                flight.value = make()
            finally:
                self._building.depth -= 1
                if not nested:
                    self.heavy.release()
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self.lock:
                if flight.error is None:
                    self.items[full] = flight.value
                    while len(self.items) > self.size:
                        self.items.popitem(last=False)
                self.flights.pop(full, None)
            flight.done.set()
        return flight.value


class _Flight:
    """One object being built: its followers wait for it."""

    def __init__(self) -> None:
        import threading

        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def result(self) -> Any:
        self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value


def jsonable(obj: Any) -> Any:
    """Keys as strings (JSON's), the way ``json.dumps`` of the CLI prints them."""
    return json.loads(json.dumps(obj, default=str))
