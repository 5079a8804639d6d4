"""``ledger watch`` itself: a source read as it grows, each boot stored as soon as its start-up
ends, its runtime samples committed in batches, and the alerts raised on the way.

* **When a boot is written.**  A boot is first written once its start-up has ended — ready, or
  failed — and the lines have paused for ``settle`` seconds (a traceback comes in a burst: its
  lines belong to the failure), at most ``settle_max`` after the line that ended it: within a
  second either way.  A boot that finishes without that (the next start-up comes first, or the
  watch stops) is written then, as ``ingest`` writes it.
* **Batches.**  Once written, the boot is brought up to date in one transaction every
  ``commit_seconds`` (5 s) while lines come, as soon as ``commit_samples`` (500) samples are
  waiting, and within a second of a new failure line; and for the last time when it finishes.
  A kill -9 loses what was read since the last batch: nothing, for a file (a restarted watch
  reads it again from its start), the last batch for a stream.
* **Resuming.**  A restarted watch reads the file from its start: the boots it finishes were
  stored (found by content: nothing stored again), and the boot still running is found by
  the grown-log rule (``ledger.db.watching``) and rewritten in place with every sample read.
  Alerts are raised on what the ledger did not know yet (a boot's outcome is told once), and
  the runtime ones (KV usage, decode, hung) only on lines read live.
* **A lost database** is tried again ``db_tries`` times with back-off (0.5 s, doubling), then
  the watch stops with one line (``LedgerError``).
"""

from __future__ import annotations

import dataclasses
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ledger import parsers

from ..db.staging import SampleSpool, Staging
from ..db.writer import Writer
from ..db.writes import DeployInfo
from ..errors import LedgerError
from .alerts import Alert, Alerter, Thresholds

# How long one read waits for lines before the loop looks at the clock again (a due batch, a
# silence, Ctrl-C): a stop is seen within it.  A file is looked at every 0.05 s whatever this is
# (follow.POLL_S), so a shorter wait costs a pass of the loop, not a read; 0.5 s made every
# Ctrl-C and SIGTERM wait up to half a second.  While a boot's write is due, 0.05 s.
READ_WAIT_S = 0.1
READ_WAIT_DUE_S = 0.05
# A file's backlog ends at its end as the watch found it; a command's (journalctl, podman logs) or
# a pipe's at its first pause this long after the first lines: they print what they hold in
# pieces, and a short read is not the end of it
BACKLOG_QUIET_S = 0.5


@dataclass
class Settings:
    source: str  # the boots' stored source (a path, "-", container:NAME@id, unit:NAME)
    info: DeployInfo = field(default_factory=DeployInfo)
    origin: dict[str, str] = field(default_factory=dict)  # boot_origin rows (a container's facts)
    thresholds: Thresholds = field(default_factory=Thresholds)
    year: int | None = None
    commit_seconds: float = 5.0
    commit_samples: int = 500
    settle: float = 0.25
    settle_max: float = 1.0
    db_tries: int = 6
    db_backoff: float = 0.5
    heartbeat: float = 10.0
    image_given: bool = False  # --image: kept when a container is redeployed (else the new one's image)


@dataclass
class _BootState:
    """What the watch keeps about one boot until it is finished."""

    spool: SampleSpool  # its samples until it is first written
    pending: list[parsers.RuntimeSample] = field(default_factory=list)  # read since its last batch
    boot_id: int | None = None
    outcome: str | None = None  # as last written
    failures: int = 0  # failure lines as last written
    lines: int = 0  # stream lines read at its last batch
    trigger: float | None = None  # when its start-up end (or a new failure) was seen
    committed: float = 0.0
    deploy: str | None = None


class Follower:  # the interface of ledger.watch.follow's followers
    caught_up: bool
    new_run: bool  # the source starts again from its line 1 (a truncated file, a new container); reset by the watch
    down: str | None  # why the source is not there now (a container stopped or removed); None while it is

    def read(self, timeout: float) -> bytes | None: ...  # pragma: no cover

    def close(self) -> None: ...  # pragma: no cover


class Watch:
    """One source watched into one ledger.  ``open_writer()`` opens the ledger (again, after a
    lost connection); ``emit(alert)`` hears each alert; ``on_note(text)`` the watch's own
    notes (a rotation, a retried database)."""

    def __init__(self, open_writer: Callable[[], Writer], follower: Follower, settings: Settings,
                 rules: Any = None, emit: Callable[[Alert], None] | None = None,
                 on_note: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic,
                 sinks: Any = None, alert_since: str | None = None):
        self.open_writer, self.follower, self.s = open_writer, follower, settings
        self.emit = emit or (lambda _a: None)
        self.on_note = on_note or (lambda _t: None)
        self.clock = clock
        # --exec and --webhook (``sinks.Sinks``): an alert is delivered once stdout and each had it
        self.sinks = sinks
        if sinks is not None:
            sinks.on_done = self._sink_done
        self._done: queue.Queue[tuple[str, str]] = queue.Queue()  # (source, key) of alerts delivered
        self.told: dict[str, str] = {}  # the alerts the ledger holds for the source: key -> state
        self.first_watch = True  # no watch of this source before this one: its backlog is not told
        # the backlog told after all (--since): None, none of it; "": all of it; else from that log time on
        self.alert_since = alert_since
        self.backlog_lines: int | None = None  # lines the source held when the watch began (once read)
        self.runs = 0  # new runs since the start (a truncation, a redeploy): read live, never backlog
        self._trial: tuple[Alerter, list[Alert]] | None = None
        self.alerter = Alerter(settings.source, self._raised, settings.thresholds, clock)
        self.rules = rules
        self.live = _live(rules, settings.year, self._sink)
        self.lines_before = 0  # lines of the source's earlier runs (before a truncation)
        self.staging = Staging(None)  # private: it outlives a lost ledger connection
        self.states: dict[int, _BootState] = {}
        self.writer: Writer | None = None
        self.watch_id: int | None = None
        self.stopping = False
        self.down: str | None = None  # why the source is not there, as last told
        self.last_data = 0.0
        self.seen_at = 0.0
        self.serving: int | None = None  # the boot whose samples feed the runtime alerts
        self.written: set[int] = set()
        self.samples_written = 0
        self.alerts = 0

    # -- the loop -------------------------------------------------------------------------------------
    def stop(self, *_args: Any) -> None:
        """Stop at the next pause (a signal handler: Ctrl-C, SIGTERM)."""
        self.stopping = True

    def run(self) -> dict[str, Any]:
        """Watch until the source ends or ``stop``; store what was read; the summary."""
        from ..db.watching import (
            alert_keys,
            pending_alerts,
            watch_started,
            watch_stopped,
            watched_before,
        )

        handlers = self._signals()
        try:
            self.writer = self.open_writer()
            self.first_watch = not self._db(watched_before, self.s.source, None)
            self.watch_id = self._db(watch_started, self.s.source)
            self.told = self._db(alert_keys, self.s.source)
            for key, body in self._db(pending_alerts, self.s.source):
                self._deliver(Alert.from_json(body, key))  # raised by a watch stopped before it was delivered
            ended = False
            while not self.stopping:
                waiting = self._waiting()
                data = self.follower.read(READ_WAIT_DUE_S if waiting else READ_WAIT_S)
                now = self.clock()
                if data is None:
                    ended = True
                    break
                if data:
                    self.last_data = now
                    self._finished(self.live.feed(data))
                if self.backlog_lines is None and self.follower.caught_up and (
                        getattr(self.follower, "exact_catch_up", False) or now - self.last_data >= BACKLOG_QUIET_S):
                    self.backlog_lines = self.live.lines  # what the source held at the start: read
                # (getattr: a follower of a test or a library may have neither)
                if getattr(self.follower, "new_run", False):
                    self.follower.new_run = False
                    self._new_run()
                down = getattr(self.follower, "down", None)
                if (down is None) != (self.down is None):
                    self._down_or_up(down)
                self._commit_due(now)
                self.alerter.tick(self._year())
                if now - self.seen_at >= self.s.heartbeat:
                    self._seen()
                self._mark_delivered()
            self._finished(self.live.end())
            if self.sinks is not None:
                self.sinks.close()  # what is queued, delivered (a bounded wait) before it is marked so
            self._mark_delivered()
            self._db(watch_stopped, self.watch_id)
            return self.summary(ended)
        finally:
            self.follower.close()
            for st in self.states.values():
                st.spool.close()
            self.staging.close()
            if self.writer is not None:
                self.writer.close()
            for sig, old in handlers:
                signal.signal(sig, old)

    def _new_run(self) -> None:
        """The source starts again from its line 1 (a file truncated, a container redeployed
        under its name): the boot being read ends here, and what follows is parsed as an
        ``ingest`` of the source now reads it — a new container as a source of its own (its
        name, facts and image)."""
        from ..db.watching import watch_started, watch_stopped

        self._finished(self.live.end())
        self.lines_before += self.live.lines
        self.live = _live(self.rules, self.s.year, self._sink)
        self.runs += 1
        origin = getattr(self.follower, "origin", None)
        if origin is not None and origin.source_name != self.s.source:
            self.s.source, self.s.origin = origin.source_name, dict(origin.facts)
            if not self.s.image_given:
                self.s.info = dataclasses.replace(self.s.info, image=origin.image)
            self.alerter.source = origin.source_name
            self._db(watch_stopped, self.watch_id)
            self.watch_id = self._db(watch_started, self.s.source)

    def _down_or_up(self, why: str | None) -> None:
        """The source went (``why``) or came back (None): one alert each way."""
        if why is not None:
            self.alerter.source_down(why)
        else:
            self.alerter.source_up(self.down or "", self.s.source)
        self.down = why

    def _signals(self) -> list[tuple[int, Any]]:
        if threading.current_thread() is not threading.main_thread():
            return []
        out: list[tuple[int, Any]] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            out.append((sig, signal.signal(sig, self.stop)))
        return out

    def summary(self, ended: bool = False) -> dict[str, Any]:
        return {"source": self.s.source, "lines": self.lines_before + self.live.lines, "boots_written": len(self.written),
                "samples_written": self.samples_written, "alerts": self.alerts, "source_ended": ended}

    def _waiting(self) -> bool:
        """Whether a boot's write is due within the settling time (read in short steps then)."""
        cur = self.live.current
        st = self.states.get(id(cur)) if cur is not None else None
        return st is not None and st.trigger is not None

    # -- alerts: told once, delivered at least once -----------------------------------------------------
    def _backlog(self, alert: Alert) -> bool:
        """Whether ``alert`` is about what the source held when the first watch of it began (a
        log months old: not news), and was not asked for with ``--since``."""
        if not self.first_watch or self.runs or alert.incident == "source":
            return False  # (a container down is now, whatever was read before)
        if self.alert_since is not None and (self.alert_since == ""
                                             or (alert.logged_at or "").replace("T", " ") >= self.alert_since):
            return False
        if alert.line is not None and self.backlog_lines is not None:
            return alert.line <= self.backlog_lines
        return self.backlog_lines is None

    def _sorted(self, alerts: list[Alert], alerter: Alerter) -> tuple[list[dict[str, Any]], list[Alert]]:
        """The rows to record of alerts just raised (none of those the ledger holds), and those of
        them to tell now; the others are the backlog, and ``alerter`` hears they were not told."""
        from ..db.watching import alert_row

        rows, tell = [], []
        for a in alerts:
            state = self.told.get(a.key)
            if state is None:
                state = "backlog" if self._backlog(a) else "pending"
                rows.append(alert_row(a.source, a.key, a.to_json(), state))
                if state == "pending":
                    tell.append(a)
            if state == "backlog":
                alerter.silent(a)
        return rows, tell

    def _raised(self, alert: Alert) -> None:
        """An alert raised outside a boot's write (runtime figures, silence, the source): recorded
        pending, then told."""
        from ..db.watching import record_alerts

        rows, tell = self._sorted([alert], self.alerter)
        if rows:
            self._db(record_alerts, rows)
            self.told.update((r["key"], r["state"]) for r in rows)
        for a in tell:
            self._deliver(a)

    def _decide(self, boot: parsers.Boot, live: bool, st: _BootState | None) -> Callable[..., list[dict[str, Any]]]:
        """What ``store_watched``/``append_watched`` call inside the boot's transaction: the
        alerts of the boot as written (an ``Alerter.fork`` decides them, adopted once the
        transaction committed: a retried write decides again from the same state)."""
        from ..db.watching import boot_checks, boot_place

        def decide(writer: Writer, cur: Any, bid: int, _before: str | None) -> list[dict[str, Any]]:
            deploy = st.deploy if st is not None and st.deploy else None
            if deploy is None:
                deploy = _deploy_name(boot_place(writer, bid, cur))
                if st is not None:
                    st.deploy = deploy
            checks = None
            if Alerter.wants_checks(str(bid), boot, self.alerter.outcomes):
                checks = _check_lines(boot_checks(writer, bid, cur))
            raised: list[Alert] = []
            trial = self.alerter.fork(raised.append)
            trial.on_boot(str(bid), boot, deploy, checks, live)
            rows, tell = self._sorted(raised, trial)
            self._trial = (trial, tell)
            return rows

        self._trial = None
        return decide

    def _decided(self, stored: Any) -> None:
        """After a boot's write committed: the alerter takes the decision's state; its alerts are told."""
        if self._trial is None:
            return
        trial, tell = self._trial
        self._trial = None
        self.alerter.adopt(trial)
        self.told.update((r["key"], r["state"]) for r in stored.alerts)
        for a in tell:
            self._deliver(a)

    def _deliver(self, alert: Alert) -> None:
        """On stdout, then to the sinks; delivered (marked so in the ledger) once every one had it."""
        self.alerts += 1
        self.emit(alert)
        if self.sinks is not None:
            self.sinks.send(alert)
        else:
            self._done.put((alert.source, alert.key))

    def _sink_done(self, alert: Alert) -> None:  # a sink's thread
        self._done.put((alert.source, alert.key))

    def _mark_delivered(self) -> None:
        from ..db.watching import alerts_delivered

        by_source: dict[str, list[str]] = {}
        while True:
            try:
                source, key = self._done.get_nowait()
            except queue.Empty:
                break
            by_source.setdefault(source, []).append(key)
        for source, keys in by_source.items():
            self._db(alerts_delivered, source, keys)

    def _year(self) -> int | None:
        return self.s.year or self.live.assembler.default_year

    # -- samples and boots ------------------------------------------------------------------------------
    def _state(self, boot: parsers.Boot) -> _BootState:
        st = self.states.get(id(boot))
        if st is None:
            st = self.states[id(boot)] = _BootState(SampleSpool(self.staging))
        return st

    def _sink(self, boot: parsers.Boot, samples: list[parsers.RuntimeSample]) -> None:
        st = self._state(boot)
        if st.boot_id is None:
            st.spool.add(samples)
            return
        st.pending.extend(samples)
        if st.boot_id == self.serving and self.follower.caught_up:
            self.alerter.on_samples(samples, self._year())

    def _finished(self, boots: list[parsers.Boot]) -> None:
        """Boots the parse finished: written for the last time."""
        from ..db.watching import append_watched, store_watched

        for boot in boots:
            st = self._state(boot)
            try:
                if not self.live.is_vllm:
                    continue
                decide = self._decide(boot, self.follower.caught_up, st)
                if st.boot_id is not None:
                    stored = self._db(append_watched, st.boot_id, boot, self.s.source, self.s.info, st.pending,
                                      self.s.origin, decide)
                    self.samples_written += len(st.pending)
                    st.pending = []
                else:
                    stored = self._db(store_watched, boot, self.s.source, self.s.info, st.spool, False, self.s.origin,
                                      decide)
                    if stored.boot_id is None:
                        continue  # a longer version of it is stored
                    self.samples_written += sum(st.spool.counts().values())
                bid = stored.boot_id
                self.written.add(bid)
                self._decided(stored)
                if self.serving == bid:
                    self.alerter.boot_over()
                    self.serving = None
            finally:
                st.spool.close()
                self.states.pop(id(boot), None)

    def _commit_due(self, now: float) -> None:
        """Write the boot being read if its start-up has ended, or its batch if one is due.  A
        failure waits for the lines of its burst — ``settle`` seconds of quiet, at most
        ``settle_max`` after it was seen — and, while every failure read names a consequence
        (a worker died, the engine is dead) and not its cause, the whole ``settle_max``: the
        line that names the cause (an OOM) often comes a little later."""
        from ..db.watching import append_watched, previous_decode, store_watched

        cur = self.live.current
        if cur is None or not self.live.is_vllm or not self.follower.caught_up:
            return
        st = self._state(cur)
        quiet = now - self.last_data >= self.s.settle and not _only_consequences(cur)
        if st.boot_id is None:
            if cur.ready_line is None and not cur.failures:
                return  # still starting up
            if st.trigger is None:
                st.trigger = now
            if not quiet and now - st.trigger < self.s.settle_max:
                return
            snap = self.live.peek()
            assert snap is not None
            stored = self._db(store_watched, snap, self.s.source, self.s.info, st.spool, True, self.s.origin,
                              self._decide(snap, True, st))
            if stored.boot_id is None:
                return
            self.samples_written += sum(st.spool.counts().values())
            st.spool.close()
            st.boot_id, st.outcome, st.failures, st.lines = stored.boot_id, str(snap.outcome), len(snap.failures), \
                self.live.lines
            st.trigger, st.committed = None, now
            self.written.add(stored.boot_id)
            self._decided(stored)
            if str(snap.outcome) == "ready":
                self.serving = stored.boot_id
                self.alerter.on_serving(str(stored.boot_id), st.deploy, self._db(previous_decode, stored.boot_id))
            self._seen(stored.boot_id)
            return
        failed_more = len(cur.failures) != st.failures
        if failed_more and st.trigger is None:
            st.trigger = now
        due = (len(st.pending) >= self.s.commit_samples
               or (now - st.committed >= self.s.commit_seconds and (st.pending or self.live.lines != st.lines))
               or (st.trigger is not None and (quiet or now - st.trigger >= self.s.settle_max)))
        if not due:
            return
        snap = self.live.peek()
        assert snap is not None
        stored = self._db(append_watched, st.boot_id, snap, self.s.source, self.s.info, st.pending, self.s.origin,
                          self._decide(snap, True, st))
        self.samples_written += len(st.pending)
        st.pending = []
        st.failures, st.lines, st.trigger, st.committed = len(snap.failures), self.live.lines, None, now
        st.outcome = str(snap.outcome)
        self._decided(stored)
        if st.outcome in ("failed", "crashed") and self.serving == st.boot_id:
            self.alerter.boot_over()
            self.serving = None
        self._seen(st.boot_id)

    def _seen(self, boot_id: int | None = None) -> None:
        from ..db.watching import watch_seen

        if self.watch_id is None:
            return
        if boot_id is None:
            cur = self.live.current
            st = self.states.get(id(cur)) if cur is not None else None
            boot_id = st.boot_id if st is not None else None
        self._db(watch_seen, self.watch_id, boot_id)
        self.seen_at = self.clock()

    # -- the database, retried --------------------------------------------------------------------------
    def _db(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(writer, *args)``; a lost database is opened again and the call tried again
        (``db_tries`` in all, with back-off), then one ``LedgerError``."""
        from ..db.errors import is_database_error

        last: BaseException | None = None
        for attempt in range(self.s.db_tries):
            try:
                if self.writer is None:
                    self.writer = self.open_writer()
            except Exception as exc:  # the ledger cannot be opened again (yet): tried again below
                if not (is_database_error(exc) or isinstance(exc, LedgerError)):
                    raise
                last = exc
            else:
                try:
                    return fn(self.writer, *args)
                except LedgerError:
                    raise
                except Exception as exc:
                    if not is_database_error(exc):
                        raise
                    last = exc
                    self._drop_writer()
            if attempt + 1 == self.s.db_tries:
                break
            pause = self.s.db_backoff * 2 ** attempt
            self.on_note(f"{_said(last)}; trying again in {pause:g} s")
            time.sleep(pause)
        assert last is not None
        raise LedgerError(f"lost the ledger: {_said(last)} (tried {self.s.db_tries} times); "
                          f"what was read since the last batch is not stored")

    def _drop_writer(self) -> None:
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001 (a connection already gone)
                pass
            self.writer = None


def _said(exc: BaseException) -> str:
    from ..db.errors import describe_db_error

    return str(exc) if isinstance(exc, LedgerError) else describe_db_error(exc)


def _live(rules: Any, year: int | None, sink: Any) -> Any:
    from ledger.parsers.live import LiveParse

    return LiveParse(rules, year, sink)


# failure kinds that say what happened, not why: an alert naming only these waits a little for
# the line that names the cause (a CUDA OOM printed after "worker died", issue 38)
_CONSEQUENCES = frozenset({"worker_died", "engine_dead", "engine_init_failed", "exception"})


def _only_consequences(boot: parsers.Boot) -> bool:
    return bool(boot.failures) and all(str(f.kind) in _CONSEQUENCES for f in boot.failures)


def _check_lines(rows: dict[str, Any]) -> list[dict[str, Any]]:
    """A boot's verdict lines (what, verdict, detail), as ``ledger check`` words them."""
    from ..verdicts import capacity_line, ceiling_lines, kv_line

    lines = [kv_line(rows["kv_reconciliation"]), capacity_line(rows["capacity_contract"]),
             *ceiling_lines(rows["budget_ceilings"])]
    return [dict(line.__dict__) for line in lines]


def _deploy_name(place: dict[str, Any]) -> str | None:
    if not place:
        return None
    if place.get("label"):
        return str(place["label"])
    commit, image = place.get("commit_sha"), place.get("image_digest")
    said = " ".join(x for x in ((commit or "")[:10], (image or "").removeprefix("sha256:")[:12]) if x)
    return said or f"deploy:{place['deploy_id']}"
