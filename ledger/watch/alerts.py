"""What ``ledger watch`` tells a person, and when: ``Alert`` objects (words: ``ledger.render.watch``)
raised by an ``Alerter`` that is told of each boot as it is stored and of each runtime sample
read live.

Kinds (``docs/watch.md`` lists each one's fields):

* ``boot_failed`` — a boot's start-up failed (each failure as kind@phase, with its figures);
* ``boot_verdict`` — a boot came up with a reconciliation verdict off, its capacity contract
  broken or a ceiling over;
* ``crashed`` — a boot that had come up failed (how long after ready); each one until the
  outage is a restart loop;
* ``restart_loop`` — the third failed boot of one incident ("restart loop: 3 boots failed in
  2 min"); the failed boots after it say nothing more;
* ``source_down`` — the container watched stopped or was removed;
* ``kv_usage`` — GPU KV cache usage above ``kv_above`` percent for ``kv_for`` seconds (log time);
* ``decode_drop`` — the median decode throughput over the last ``decode_window`` seconds (log
  time) below the deploy's previous boot that came up by ``decode_drop`` percent;
* ``hung`` — no stats line for ``silent_for`` seconds (wall clock) while requests were running;
* ``recovered`` — the incident one of these opened is over: a boot has been up for
  ``RECOVERED_AFTER_S`` after failed ones, KV usage fell back, decode came back, stats resumed.

Each alert opens an incident that raises nothing more until it is over: a restart loop is one
``boot_failed``, one ``restart_loop`` and, once a boot stays up, one ``recovered``.  The same
failing verdicts on the next boot are not news either (they are once a boot had them ok).

What it raises follows from the boots in their order, not from when they were read: a boot's
outcome is taken once per boot (``outcomes``), an outage ends when a boot has been up for
``RECOVERED_AFTER_S`` of log time (looked at when it fails too), so a watch that reads the
source again from its start raises the same alerts, with the same ``key`` — and the watch, which
keeps the keys it told (``watch_alert``), tells none of them twice.  ``fork`` gives a copy to
decide with inside a transaction that may be tried again; ``adopt`` takes its state once it
committed.
"""

from __future__ import annotations

import copy
import datetime as dt
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from ledger import parsers

RESTART_LOOP = 3  # failed boots in one incident that make it a restart loop
RECOVERED_AFTER_S = 60.0  # a boot up this long (log time, or wall clock while watched) ends an outage
DECODE_MIN_INTERVALS = 3  # stats intervals with running requests a window needs for a median
FAILING = {"off", "broken", "over"}


class AlertKind(StrEnum):
    boot_failed = "boot_failed"
    boot_verdict = "boot_verdict"
    crashed = "crashed"
    restart_loop = "restart_loop"
    kv_usage = "kv_usage"
    decode_drop = "decode_drop"
    hung = "hung"
    source_down = "source_down"
    recovered = "recovered"


@dataclass
class Alert:
    """One thing a person should hear of.  ``figures`` depend on the kind (docs/watch.md)."""

    kind: AlertKind
    source: str  # what the watch reads (a path, "-", container:NAME, unit:NAME)
    raised_at: str  # when the watch raised it (UTC, ISO 8601)
    boot: str | None  # the boot's id in the ledger
    deploy: str | None  # the deploy's label (or commit, image)
    logged_at: str | None  # the log's time of what it is about (ISO 8601, no zone: the log's clock)
    line: int | None  # the line that shows it, where one does
    incident: str  # what it opens or closes: down, verdict, kv_usage, decode_drop, hung, source
    figures: dict[str, Any] = field(default_factory=dict)
    key: str = field(default="", repr=False)  # what it is about (kind, boot, incident): told once per source

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["kind"] = str(self.kind)
        out.pop("key")
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], key: str) -> Alert:
        """An alert as ``to_json`` gave it (a pending one, sent again)."""
        return cls(AlertKind(data["kind"]), str(data["source"]), str(data["raised_at"]), data.get("boot"),
                   data.get("deploy"), data.get("logged_at"), data.get("line"), str(data["incident"]),
                   dict(data.get("figures") or {}), key)


@dataclass
class Thresholds:
    kv_above: float = 95.0  # percent
    kv_for: float = 300.0  # seconds, log time
    decode_drop: float = 10.0  # percent below the previous boot's median
    decode_window: float = 600.0  # seconds, log time
    silent_for: float = 600.0  # seconds, wall clock


def _iso(stamp: str | None) -> str | None:
    return stamp.replace(" ", "T") if stamp else None


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _seconds(a: str | None, b: str | None) -> float | None:
    """Seconds from a to b, both 'YYYY-MM-DD HH:MM:SS'."""
    if not a or not b:
        return None
    try:
        fmt = "%Y-%m-%d %H:%M:%S"
        return (dt.datetime.strptime(b, fmt) - dt.datetime.strptime(a, fmt)).total_seconds()
    except ValueError:
        return None


def _stamp_seconds(stamp: str | None) -> float | None:
    """vLLM's 'MM-DD HH:MM:SS' as seconds (for spans within one boot; months as 31 days)."""
    if not stamp:
        return None
    try:
        md, hms = stamp.split(" ")
        month, day = md.split("-")
        h, m, s = hms.split(":")
        return float(((int(month) * 31 + int(day)) * 24 + int(h)) * 3600 + int(m) * 60 + int(s))
    except ValueError:
        return None


def failure_figures(boot: parsers.Boot) -> list[dict[str, Any]]:
    return [{"kind": f.kind, "phase": f.phase, "line": f.line, "logged_at": _iso(f.logged_at),
             "figures": dict(f.figures)} for f in boot.failures]


@dataclass
class _Down:
    """An outage: boots that failed one after another."""

    first_at: str | None
    boots: list[str] = field(default_factory=list)
    looped: bool = False
    up_boot: str | None = None  # a boot that came up since, and when (log time; wall clock)
    up_at: str | None = None
    up_wall: float | None = None
    silent: bool = False  # opened by an alert not told (the backlog): not carried into what is told


class Alerter:
    """Turns what the watch stored and read into alerts, each once per incident.  ``emit(alert)``
    hears of each one as it is raised."""

    def __init__(self, source: str, emit: Callable[[Alert], None], thresholds: Thresholds | None = None,
                 clock: Callable[[], float] | None = None):
        import time

        self.source, self.emit = source, emit
        self.t = thresholds or Thresholds()
        self.clock = clock or time.monotonic
        self.down: _Down | None = None
        self.verdicts: set[tuple[str, str]] = set()  # failing verdicts already told
        self.outcomes: dict[str, str] = {}  # each boot's outcome as last taken
        self._boot_reset(None, None)

    def silent(self, alert: Alert) -> None:
        """``alert`` was not told (the backlog): the incident it opened is not one a person knows
        of, so it holds back nothing that follows (the next failure is told, a verdict again)."""
        if alert.incident == "down" and self.down is not None and alert.kind != AlertKind.recovered:
            self.down.silent = True
        elif alert.kind == AlertKind.boot_verdict:
            self.verdicts = set()

    def fork(self, emit: Callable[[Alert], None]) -> Alerter:
        """A copy that raises to ``emit`` and whose state this one takes only by ``adopt``."""
        twin = copy.copy(self)
        state = {k: v for k, v in self.__dict__.items() if k not in ("emit", "clock")}
        twin.__dict__.update(copy.deepcopy(state))
        twin.emit = emit
        return twin

    def adopt(self, twin: Alerter) -> None:
        """Take the state of a fork (its decisions were committed)."""
        for k, v in twin.__dict__.items():
            if k not in ("emit", "clock"):
                setattr(self, k, v)

    # -- helpers ------------------------------------------------------------------------------------
    def _raise(self, kind: AlertKind, boot: str | None, deploy: str | None, logged_at: str | None,
               line: int | None, incident: str, **figures: Any) -> None:
        alert = Alert(kind, self.source, _utc_now(), boot, deploy, logged_at, line, incident, figures)
        if kind in (AlertKind.kv_usage, AlertKind.decode_drop, AlertKind.hung) or incident in ("kv_usage", "decode_drop",
                                                                                                "hung"):
            alert.key = f"{kind}:{boot}:{incident}:{line}"  # a boot's runtime incidents, each by its line
        elif incident == "source":
            alert.key = f"{kind}:{incident}:{alert.raised_at}:{figures.get('reason')}"
        else:
            alert.key = f"{kind}:{boot}:{incident}"  # a boot's outcome, verdict, outage: once
        self.emit(alert)

    def _boot_reset(self, boot: str | None, deploy: str | None) -> None:
        """A new boot: the runtime incidents were the last boot's."""
        self.boot, self.deploy = boot, deploy
        self.kv_since: dict[int | None, tuple[float, str | None, int]] = {}  # engine -> (since, stamp, line)
        self.kv_open = False
        self.window: deque[tuple[float, float]] = deque()  # (log seconds, decode t/s)
        self.previous: tuple[str, float] | None = None  # (boot, median) of the deploy's previous boot up
        self.decode_open = False
        self.last_stats_wall: float | None = None
        self.last_stats: parsers.RuntimeSample | None = None
        self.hung_open = False

    # -- boots ----------------------------------------------------------------------------------------
    def on_boot(self, boot_id: str, boot: parsers.Boot, deploy: str | None,
                checks: list[dict[str, Any]] | None = None, live: bool = True) -> None:
        """A boot was stored: each of its outcomes is taken once (a boot written again with the
        same outcome only moves an outage towards its end).  ``checks``: its verdict lines (what,
        verdict, detail), for a boot that came up.  ``live``: read as it happened (the wall
        clock counts), not caught up with."""
        if boot_id != self.boot:
            self._boot_reset(boot_id, deploy)
        outcome = str(boot.outcome)
        before = self.outcomes.get(boot_id)
        if outcome == before:
            self._maybe_recovered(boot, live)
            return
        self.outcomes[boot_id] = outcome
        came_up = boot.ready_line is not None and before in (None, "incomplete")
        if outcome in ("failed", "crashed"):
            if outcome == "crashed" and came_up:
                self._up(boot_id, boot, deploy, checks, live)  # it came up first (read in one go)
            self._failed(boot_id, boot, deploy)
            return
        if outcome == "ready" and came_up:
            self._up(boot_id, boot, deploy, checks, live)
            self._maybe_recovered(boot, live)

    @staticmethod
    def wants_checks(boot_id: str, boot: parsers.Boot, outcomes: dict[str, str]) -> bool:
        """Whether ``on_boot`` of this boot now reads its verdicts (it comes up, to the alerter)."""
        return boot.ready_line is not None and outcomes.get(boot_id) in (None, "incomplete") \
            and str(boot.outcome) in ("ready", "crashed")

    def _up(self, boot_id: str, boot: parsers.Boot, deploy: str | None, checks: list[dict[str, Any]] | None,
            live: bool) -> None:
        if self.down is not None and self.down.up_boot != boot_id:
            self.down.up_boot, self.down.up_at = boot_id, boot.ready_at
            self.down.up_wall = self.clock() if live else None
        self._verdicts(boot_id, boot, deploy, checks or [])

    def _failed(self, boot_id: str, boot: parsers.Boot, deploy: str | None) -> None:
        first = boot.failures[0] if boot.failures else None
        crashed = str(boot.outcome) == "crashed"
        when = (first.logged_at if first else None) or boot.ended_at
        down = self.down
        if down is not None and down.silent:
            self.down = down = None  # nobody heard of that outage: this failure opens one
        if down is not None and down.up_boot is not None:
            # the boot that was up since the last failure: an outage ends after a minute up (log
            # time), whenever it is looked at — so a crash after that is a new outage
            up = _seconds(down.up_at, when)
            if up is not None and up >= RECOVERED_AFTER_S:
                self._recovered_down(down.up_at)
                down = None
        if down is None:
            self.down = down = _Down(boot.started_at, [boot_id])
            if crashed:
                self._raise(AlertKind.crashed, boot_id, deploy, _iso(when), first.line if first else None, "down",
                            failures=failure_figures(boot), ready_at=_iso(boot.ready_at),
                            seconds_after_ready=_seconds(boot.ready_at, when))
            else:
                self._raise(AlertKind.boot_failed, boot_id, deploy, _iso(when), first.line if first else None,
                            "down", failures=failure_figures(boot))
            return
        if boot_id not in down.boots:
            down.boots.append(boot_id)
        down.up_boot = down.up_at = None
        down.up_wall = None
        if len(down.boots) >= RESTART_LOOP and not down.looped:
            down.looped = True
            self._raise(AlertKind.restart_loop, boot_id, deploy, _iso(when), first.line if first else None, "down",
                        failed_boots=len(down.boots), seconds=_seconds(down.first_at, boot.ended_at),
                        boots=list(down.boots), failures=failure_figures(boot))
        elif crashed and not down.looped:
            # a boot that came up and crashed is news within an outage too, until it is a loop
            self._raise(AlertKind.crashed, boot_id, deploy, _iso(when), first.line if first else None, "down",
                        failures=failure_figures(boot), ready_at=_iso(boot.ready_at),
                        seconds_after_ready=_seconds(boot.ready_at, when))

    def _maybe_recovered(self, boot: parsers.Boot, live: bool) -> None:
        down = self.down
        if down is None or down.up_boot is None or str(boot.outcome) != "ready":
            return
        up_log = _seconds(down.up_at, boot.ended_at)
        up_wall = None if down.up_wall is None else self.clock() - down.up_wall
        if max(up_log or 0.0, up_wall or 0.0) >= RECOVERED_AFTER_S:
            self._recovered_down(boot.ready_at)

    def _recovered_down(self, ready_at: str | None) -> None:
        down = self.down
        assert down is not None
        self.down = None
        if down.silent:
            return  # an outage nobody was told of ends without a word
        self._raise(AlertKind.recovered, down.up_boot, self.deploy, _iso(ready_at), None, "down",
                    recovered_from="down", failed_boots=len(down.boots), boots=list(down.boots),
                    seconds_down=_seconds(down.first_at, ready_at))

    def _verdicts(self, boot_id: str, boot: parsers.Boot, deploy: str | None, checks: list[dict[str, Any]]) -> None:
        failing = [c for c in checks if c["verdict"] in FAILING]
        keys = {(c["what"], c["verdict"]) for c in failing}
        new = keys - self.verdicts
        self.verdicts = keys
        if new:
            self._raise(AlertKind.boot_verdict, boot_id, deploy, _iso(boot.ready_at), boot.ready_line, "verdict",
                        verdicts=failing)

    # -- the boot being served ------------------------------------------------------------------------
    def on_serving(self, boot_id: str, deploy: str | None, previous: tuple[str, list[float]] | None) -> None:
        """The boot ``boot_id`` is being read live; ``previous``: the deploy's previous boot
        that came up and its decode figures (what a drop is measured against)."""
        if boot_id != self.boot:
            self._boot_reset(boot_id, deploy)
        if previous is not None and previous[1]:
            self.previous = (previous[0], statistics.median(previous[1]))

    def on_samples(self, samples: list[parsers.RuntimeSample], year: int | None) -> None:
        """Runtime samples read live, of the boot ``on_serving`` named."""
        for s in samples:
            if s.kind != "engine_stats":
                continue
            self.last_stats_wall, self.last_stats = self.clock(), s
            if self.hung_open:
                self.hung_open = False
                self._raise(AlertKind.recovered, self.boot, self.deploy, self._at(s, year), s.line, "hung",
                            recovered_from="hung")
            values = s.values
            at = _stamp_seconds(s.timestamp)
            self._kv(s, values.get("gpu_kv_cache_usage_pct"), at, year)
            tps, running = values.get("generation_throughput_tps"), values.get("running_reqs")
            if at is not None and tps is not None and running:
                self._decode(s, float(tps), at, year)

    @staticmethod
    def _at(s: parsers.RuntimeSample, year: int | None) -> str | None:
        return f"{year:04d}-{s.timestamp}".replace(" ", "T") if s.timestamp and year else None

    def _kv(self, s: parsers.RuntimeSample, usage: float | None, at: float | None, year: int | None) -> None:
        if usage is None or at is None:
            return
        if usage > self.t.kv_above:
            since = self.kv_since.setdefault(s.engine, (at, s.timestamp, s.line))
            if not self.kv_open and at - since[0] >= self.t.kv_for:
                self.kv_open = True
                self._raise(AlertKind.kv_usage, self.boot, self.deploy, self._at(s, year), s.line, "kv_usage",
                            usage_pct=usage, above_pct=self.t.kv_above, for_seconds=at - since[0],
                            since=f"{year:04d}-{since[1]}".replace(" ", "T") if year and since[1] else None,
                            since_line=since[2], engine=s.engine)
            return
        self.kv_since.pop(s.engine, None)
        if self.kv_open and not self.kv_since:
            self.kv_open = False
            self._raise(AlertKind.recovered, self.boot, self.deploy, self._at(s, year), s.line, "kv_usage",
                        recovered_from="kv_usage", usage_pct=usage, above_pct=self.t.kv_above)

    def _decode(self, s: parsers.RuntimeSample, tps: float, at: float, year: int | None) -> None:
        window = self.window
        window.append((at, tps))
        while window and at - window[0][0] > self.t.decode_window:
            window.popleft()
        if self.previous is None or len(window) < DECODE_MIN_INTERVALS:
            return
        median = statistics.median(v for _, v in window)
        previous_boot, previous = self.previous
        if previous <= 0:
            return
        drop = (previous - median) / previous * 100.0
        if drop >= self.t.decode_drop and not self.decode_open:
            self.decode_open = True
            self._raise(AlertKind.decode_drop, self.boot, self.deploy, self._at(s, year), s.line, "decode_drop",
                        median_tps=median, previous_median_tps=previous, previous_boot=previous_boot,
                        drop_pct=drop, threshold_pct=self.t.decode_drop, window_seconds=self.t.decode_window,
                        intervals=len(window))
        elif drop < self.t.decode_drop and self.decode_open:
            self.decode_open = False
            self._raise(AlertKind.recovered, self.boot, self.deploy, self._at(s, year), s.line, "decode_drop",
                        recovered_from="decode_drop", median_tps=median, previous_median_tps=previous)

    def tick(self, year: int | None = None) -> None:
        """Time passes (the watch calls this while it waits for lines): a server silent while
        requests ran is hung; a boot up long enough after an outage ends it."""
        last = self.last_stats
        if (last is not None and not self.hung_open and self.last_stats_wall is not None
                and (last.values.get("running_reqs") or 0) > 0
                and self.clock() - self.last_stats_wall >= self.t.silent_for):
            self.hung_open = True
            self._raise(AlertKind.hung, self.boot, self.deploy, self._at(last, year), last.line, "hung",
                        silent_seconds=self.clock() - self.last_stats_wall, running_reqs=last.values.get("running_reqs"),
                        last_stats_line=last.line)
        down = self.down
        if down is not None and down.up_wall is not None and self.clock() - down.up_wall >= RECOVERED_AFTER_S:
            self._recovered_down(down.up_at)

    # -- the source itself ------------------------------------------------------------------------------
    def source_down(self, why: str) -> None:
        """The source is gone (a container stopped or removed): said once, until it is back."""
        self._raise(AlertKind.source_down, self.boot, self.deploy, None, None, "source", reason=why)

    def source_up(self, why: str, source: str) -> None:
        """The source is back (the same container running again, or a new one of the name)."""
        self._raise(AlertKind.recovered, None, None, None, None, "source", recovered_from="source", reason=why,
                    now_reading=source)

    def boot_over(self) -> None:
        """The boot being served ended (another started, or it failed): its runtime incidents
        end with it, unannounced (the boot's own alert, if any, says why)."""
        self.kv_open = self.decode_open = self.hung_open = False
        self.last_stats = self.last_stats_wall = None
