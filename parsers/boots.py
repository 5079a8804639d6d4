"""Events -> Boot records: split a log at each new start-up, attach facts, shape, failures and
runtime samples, and decide each boot's outcome (``../shared/facts.md``, "Boot outcome").

A new boot starts when a start-up marker (version banner, args dump, engine initialisation)
arrives after the current boot has moved on (any figure, failure or progress), or when the
engine-core / API-server process of the same name comes back with a new pid.  An identical
repeated start-up line (two API servers, a report that pasted it twice) is the same boot.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .lines import Line
from .rules import (
    COUNT,
    FACT,
    FAILURE,
    HINT,
    MARKER,
    META,
    RUNTIME,
    SHAPE,
    Event,
    RuntimeRun,
    RuntimeSample,
)
from .units import Quantity
from .vocabulary import FACTS, SHAPE_DEFAULTS, F, O, P, S, summarize

_START_RANK = {"start:banner": 0, "start:args": 1, "start:engine": 2}
_PROGRESS = ["progress:load", "progress:loaded", "progress:profiled", "progress:kv", "progress:capture"]
# where a failure happened when nothing but the boot's progress tells
_PHASE_AFTER = {
    None: P.unknown,
    "progress:load": P.load,
    "progress:loaded": P.profile,
    "progress:profiled": P.kv_alloc,
    "progress:kv": P.kv_alloc,
    "progress:capture": P.graph_capture,
}
_SHAPE_PRECEDENCE = {S.args: 0, S.engine_config: 1, S.log: 2, S.default: 3}
_HINT_WINDOW = 150  # lines: a traceback's frames sit this close to its failure line
_MERGE_WINDOW = 3  # lines: a failure record split over adjacent lines is one failure


@dataclass
class Fact:
    name: str
    value: float | int
    unit: str
    precision: float | None
    rank: int | None
    process: str | None
    line: int
    text: str
    pack: str | None = None
    printed: str = ""  # the figure as printed ("9.74 GiB"); evidence for people and goldens


@dataclass
class Failure:
    kind: str
    phase: str | None
    line: int
    text: str
    rank: int | None
    process: str | None
    figures: dict[str, Any] = field(default_factory=dict)
    precision: dict[str, float] = field(default_factory=dict)
    pack: str | None = None
    implies_up: bool = False
    progress: str | None = field(default=None, repr=False)  # how far the boot had got
    timestamp: str | None = None  # vLLM's MM-DD HH:MM:SS of the line, when it has one
    logged_at: str | None = None  # with the year, once the boot is closed


@dataclass
class ShapeValue:
    key: str
    value: Any
    source: str
    line: int | None
    text: str | None
    pack: str | None = None


@dataclass
class Boot:
    index: int  # 0-based position in the file
    first_line: int
    first_offset: int = 0  # byte offset of first_line (0 for the first boot)
    last_line: int = 0
    engine_name: str = "vllm"
    engine_version: str | None = None
    engine_commit: str | None = None
    image_digests: list[str] = field(default_factory=list)
    outcome: str = O.incomplete
    started_at: str | None = None  # "YYYY-MM-DD HH:MM:SS"
    year_inferred: bool = False
    ready_line: int | None = None
    ready_at: str | None = None
    ended_at: str | None = None
    facts: list[Fact] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    shape: dict[str, ShapeValue] = field(default_factory=dict)
    runtime: list[RuntimeSample] = field(default_factory=list)
    access_lines: int = 0
    request_lines: int = 0
    samples: dict[str, int] = field(default_factory=lambda: {"engine_stats": 0, "spec_decode": 0})
    content_sha256: str = ""  # digest of every line the boot was read from: its identity
    # assembly state
    _digest: Any = field(default_factory=hashlib.sha256, repr=False)
    _starts: dict[str, str] = field(default_factory=dict, repr=False)
    _progress: str | None = field(default=None, repr=False)
    _moved_on: bool = field(default=False, repr=False)
    _hints: list[tuple[int, str, str | None]] = field(default_factory=list, repr=False)
    _pids: dict[str, int] = field(default_factory=dict, repr=False)
    _args_complete: bool = field(default=False, repr=False)
    _first_ts: tuple[str, int | None] | None = field(default=None, repr=False)
    _ready_ts: tuple[str, int | None] | None = field(default=None, repr=False)
    _last_ts: tuple[str, int | None] | None = field(default=None, repr=False)
    _up_line: int | None = field(default=None, repr=False)
    _last_stats: RuntimeSample | None = field(default=None, repr=False)

    # -- reading ------------------------------------------------------------------------------
    def summary(self, name: str) -> Fact | None:
        """The boot's figure for a fact: per ``FactSpec.summary`` over all its values."""
        return summarize(name, [f for f in self.facts if f.name == name])

    def fact_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for f in self.facts:
            seen.setdefault(f.name, None)
        return list(seen)

    @property
    def runtime_counts(self) -> dict[str, int]:
        return dict(self.samples)

    def seal_counts(self) -> None:
        """Fold the final access/request counts into the boot's identity digest."""
        d = self._digest.copy()
        d.update(f"access={self.access_lines};request={self.request_lines}".encode())
        self.content_sha256 = d.hexdigest()


class BootAssembler:
    """Feed ``(line, events)`` in line order; ``finish()`` returns the boots."""

    def __init__(self, first_line: int = 1, default_year: int | None = None,
                 runtime_sink: Callable[[Boot, list[RuntimeSample]], None] | None = None):
        self.boots: list[Boot] = []
        self.current: Boot | None = None
        self.first_line = first_line
        self.default_year = default_year
        # with a sink, runtime samples leave as they come (in line order, a list at a time)
        # instead of piling up in the boot
        self.runtime_sink = runtime_sink
        self._pending_counts: dict[str, int] = {}
        self.defer_counts = False  # counts arrive after the scan (external counter)

    def add_counts(self, counts: dict[str, int]) -> None:
        """Credit counted lines (access, request) to the current boot."""
        if not any(counts.values()):
            return
        if self.current is None:
            for k, n in counts.items():
                self._pending_counts[k] = self._pending_counts.get(k, 0) + n
            return
        self._credit(self.current, counts)

    @staticmethod
    def _credit(boot: Boot, counts: dict[str, int]) -> None:
        boot.access_lines += counts.get("access", 0)
        boot.request_lines += counts.get("request", 0)

    # -- feeding ------------------------------------------------------------------------------
    def feed(self, line: Line, events: list[Event]) -> list[Boot]:
        """Consume one line's events; returns the boots that this line closed (for streaming)."""
        closed: list[Boot] = []
        if not events:
            return closed
        starts = [e for e in events if e.kind == MARKER and e.rule.marker in _START_RANK]
        boot = self._boot_for(line.number, line.offset, line.process, line.pid, line.message, starts, closed)
        # the line without a CR before its newline: the same log saved with CRLF endings is
        # the same boot (the evidence keeps the line as it was)
        boot._digest.update(line.raw.removesuffix("\r").encode("utf-8", "surrogatepass"))
        boot._digest.update(b"\n")
        if line.timestamp:
            stamp = (line.timestamp, line.year)
            boot._first_ts = boot._first_ts or stamp
            boot._last_ts = stamp
        for ev in events:
            handler = _HANDLERS[ev.kind]
            handler(self, boot, ev)
        return closed

    def feed_run(self, run: RuntimeRun) -> list[Boot]:
        """``feed`` for each line of a run of runtime records (most lines of a served log), at
        once: the same result, without a Line or an Event per line.  The run's lines share a
        process, so only its first line can start a boot."""
        closed: list[Boot] = []
        boot = self._boot_for(run.number, run.offset, run.process, run.pid, None, (), closed)
        boot._digest.update(b"\n".join(run.lines))
        boot._digest.update(b"\n")
        samples = run.samples
        first = samples[0]
        boot._first_ts = boot._first_ts or (first.timestamp, None)
        boot._last_ts = (samples[-1].timestamp, None)
        for kind, n in Counter(s.kind for s in samples).items():
            boot.samples[kind] = boot.samples.get(kind, 0) + n
        # as _on_runtime one at a time: each sample lets the held-back stats sample go, and a
        # stats sample is held back in turn
        out = samples if boot._last_stats is None else [boot._last_stats, *samples]
        if samples[-1].kind == "engine_stats":
            boot._last_stats, out = out[-1], out[:-1]
        else:
            boot._last_stats = None
        if out:
            self._emit(boot, out)
        self._ready(boot, first.line, first.timestamp, None)
        return closed

    def _boot_for(self, number: int, offset: int | None, process: str | None, pid: int | None,
                  message: str | None, starts: list[Event] | tuple[()], closed: list[Boot]) -> Boot:
        boot = self.current
        if boot is None:
            boot = self._new(self.first_line)
        new = False
        if starts:
            if boot._moved_on:
                new = True  # figures, failures or progress came since this boot's start-up
            for ev in starts:
                if boot._starts.get(ev.rule.marker) == message:
                    continue  # the same start-up line again before anything else: one boot
                if any(_START_RANK[m] >= _START_RANK[ev.rule.marker] for m in boot._starts):
                    new = True
        one_per_boot = pid is not None and _one_per_boot(process)
        if not new and one_per_boot:
            known = boot._pids.get(process)
            if known is not None and known != pid and boot._moved_on:
                new = True
        if new:
            closed.append(self._close(boot, number - 1))
            boot = self._new(number)
            boot.first_offset = offset or 0
        if one_per_boot:
            boot._pids.setdefault(process, pid)
        return boot

    def _new(self, first_line: int) -> Boot:
        boot = Boot(index=len(self.boots), first_line=first_line)
        self.boots.append(boot)
        self.current = boot
        if self._pending_counts:
            self._credit(boot, self._pending_counts)
            self._pending_counts = {}
        return boot

    # -- handlers -------------------------------------------------------------------------------
    def _on_fact(self, boot: Boot, ev: Event) -> None:
        rank = ev.line.rank if ev.rule.rank_from_prefix else None
        for name, q in ev.data.items():
            boot.facts.append(_fact(name, q, rank, ev, ev.rule.pack))
        if ev.rule.pack is None:  # a pack's line never splits a boot (its rule may sit on a start-up line)
            boot._moved_on = True

    def _on_shape(self, boot: Boot, ev: Event) -> None:
        data = ev.data
        if "items" in data:
            source, items = data["source"], data["items"]
            if source == S.args and data.get("complete"):
                boot._args_complete = True
        else:
            source, items = S.log, {k: (v.value if isinstance(v, Quantity) else v) for k, v in data.items()}
        for key, value in items.items():
            _set_shape(boot, ShapeValue(key, value, source, ev.line.number, ev.text, ev.rule.pack))
        # facts.md: max_model_len is also read from the args dump and the engine config
        mml = items.get("max_model_len")
        if source in (S.args, S.engine_config) and isinstance(mml, int) and not isinstance(mml, bool):
            if mml > 0:
                boot.facts.append(Fact(F.max_model_len, mml, FACTS[F.max_model_len].unit, None,
                                       None, ev.line.process, ev.line.number, ev.text, None, str(mml)))

    def _on_meta(self, boot: Boot, ev: Event) -> None:
        d = ev.data
        if d.get("engine_version") and (boot.engine_version is None or
                                        (d.get("engine_commit") and not boot.engine_commit)):
            boot.engine_version = d["engine_version"]
        if d.get("engine_commit") and not boot.engine_commit:
            boot.engine_commit = d["engine_commit"]
        for digest in d.get("image_digests", []):
            if digest not in boot.image_digests:
                boot.image_digests.append(digest)

    def _on_marker(self, boot: Boot, ev: Event) -> None:
        marker = ev.rule.marker
        if marker in _START_RANK:
            boot._starts.setdefault(marker, ev.line.message)
        elif marker in _PROGRESS:
            boot._moved_on = True
            if boot._progress is None or _PROGRESS.index(marker) > _PROGRESS.index(boot._progress):
                boot._progress = marker
        elif marker == "ready":
            self._ready(boot, ev.line.number, ev.line.timestamp, ev.line.year)
        elif marker == "serving":  # a line that tells requests were being served
            if ev.rule.implies_up and boot._up_line is None:
                boot._up_line = ev.line.number
            self._ready(boot, ev.line.number, ev.line.timestamp, ev.line.year)

    def _ready(self, boot: Boot, number: int, timestamp: str | None, year: int | None) -> None:
        boot._moved_on = True
        if boot.ready_line is None:
            boot.ready_line = number
            if timestamp:
                boot._ready_ts = (timestamp, year)

    def _on_hint(self, boot: Boot, ev: Event) -> None:
        boot._hints.append((ev.line.number, ev.rule.phase, ev.line.process))
        if len(boot._hints) > 4 * _HINT_WINDOW:  # only frames near a failure matter: stay bounded
            del boot._hints[: 2 * _HINT_WINDOW]

    def _on_failure(self, boot: Boot, ev: Event) -> None:
        boot._moved_on = boot._moved_on or ev.rule.pack is None  # as _on_fact
        figures: dict[str, Any] = {}
        precision: dict[str, float] = {}
        for name, v in ev.data.items():
            if isinstance(v, Quantity):
                figures[name] = v.value
                if v.precision:
                    precision[name] = v.precision
            else:
                figures[name] = v
        rank = ev.line.rank if ev.rule.rank_from_prefix else None
        failure = Failure(ev.rule.failure or "", ev.rule.phase, ev.line.number, ev.text, rank,
                          ev.line.process, figures, precision, ev.rule.pack, ev.rule.implies_up,
                          boot._progress, ev.line.timestamp)
        if ev.rule.implies_up and boot._up_line is None:
            boot._up_line = ev.line.number
        for prev in reversed(boot.failures):
            if prev.kind != failure.kind:
                continue
            if failure.line - prev.line <= _MERGE_WINDOW and prev.process == failure.process:
                _merge(prev, failure)  # one record over adjacent lines (pydantic's detail line)
                return
            if prev.rank == failure.rank and _same_figures(prev, failure):
                return  # the same failure printed again (re-raised, repeated per process)
        boot.failures.append(failure)

    def _on_runtime(self, boot: Boot, ev: Event) -> None:
        d = ev.data
        if d["kind"] == "engine_stats_extra":  # V0's separate prefix-hit line follows the stats line
            last = boot._last_stats
            if last is not None and ev.line.number - last.line <= _MERGE_WINDOW:
                boot._last_stats = RuntimeSample.of(last.kind, last.line, last.timestamp, last.engine,
                                                    {**last.values, **d["values"]})
            return
        sample = RuntimeSample.of(d["kind"], ev.line.number, ev.line.timestamp, d["engine"], d["values"])
        boot.samples[sample.kind] = boot.samples.get(sample.kind, 0) + 1
        self._flush_stats(boot)
        if sample.kind == "engine_stats":
            boot._last_stats = sample  # held back one line: V0 may add its prefix-hit line
        else:
            self._emit(boot, [sample])
        self._ready(boot, ev.line.number, ev.line.timestamp, ev.line.year)

    def _flush_stats(self, boot: Boot) -> None:
        if boot._last_stats is not None:
            self._emit(boot, [boot._last_stats])
            boot._last_stats = None

    def _emit(self, boot: Boot, samples: list[RuntimeSample]) -> None:
        if self.runtime_sink is not None:
            self.runtime_sink(boot, samples)
        else:
            boot.runtime.extend(samples)

    def _on_count(self, boot: Boot, ev: Event) -> None:
        if ev.rule.marker == "access":
            boot.access_lines += 1
        else:
            boot.request_lines += 1
        if ev.rule.implies_up and boot._up_line is None:
            boot._up_line = ev.line.number
        self._ready(boot, ev.line.number, ev.line.timestamp, ev.line.year)

    # -- closing --------------------------------------------------------------------------------
    def _close(self, boot: Boot, last_line: int) -> Boot:
        self._flush_stats(boot)
        boot.last_line = max(last_line, boot.first_line)
        boot.content_sha256 = ""  # sealed once the counts are final (seal_counts)
        if not self.defer_counts:
            boot.seal_counts()
        _fill_defaults(boot)
        _decide(boot)
        year = None
        for stamp in (boot._first_ts, boot._ready_ts, boot._last_ts):
            if stamp and stamp[1]:
                year = stamp[1]
                break
        boot.year_inferred = year is None
        year = year or self.default_year
        boot.started_at = _stamp(boot._first_ts, year)
        boot.ready_at = _stamp(boot._ready_ts, year)
        boot.ended_at = _stamp(boot._last_ts, year)
        for f in boot.failures:
            if f.timestamp:
                f.logged_at = _stamp((f.timestamp, None), year)
        return boot


    def finish(self, total_lines: int) -> list[Boot]:
        if self.current is None and self._pending_counts:
            self._new(self.first_line)  # count lines but no event line: still one boot
        if self.current is not None:
            self._close(self.current, total_lines)
            self.current = None
        return self.boots


_HANDLERS = {
    FACT: BootAssembler._on_fact,
    SHAPE: BootAssembler._on_shape,
    META: BootAssembler._on_meta,
    MARKER: BootAssembler._on_marker,
    HINT: BootAssembler._on_hint,
    FAILURE: BootAssembler._on_failure,
    RUNTIME: BootAssembler._on_runtime,
    COUNT: BootAssembler._on_count,
}


@functools.lru_cache(maxsize=256)
def _one_per_boot(process: str | None) -> bool:
    """Processes a boot has exactly one of, so a new pid under the same name is a new boot."""
    return process is not None and (process.startswith("EngineCore") or process == "APIServer")


def _fact(name: str, q: Quantity, rank: int | None, ev: Event, pack: str | None) -> Fact:
    unit = q.unit or (FACTS[name].unit if name in FACTS else "")
    return Fact(name, q.value, unit, q.precision, rank, ev.line.process, ev.line.number, ev.text, pack,
                q.printed)


def _set_shape(boot: Boot, new: ShapeValue) -> None:
    old = boot.shape.get(new.key)
    if old is None or _SHAPE_PRECEDENCE[new.source] < _SHAPE_PRECEDENCE[old.source]:
        boot.shape[new.key] = new


def _fill_defaults(boot: Boot) -> None:
    """Defaults only where a complete non-default args dump shows the key was left alone."""
    if not boot._args_complete:
        return
    for key, value in SHAPE_DEFAULTS.items():
        if key not in boot.shape:
            boot.shape[key] = ShapeValue(key, value, S.default, None, None)


def _merge(into: Failure, other: Failure) -> None:
    for name, value in other.figures.items():
        if name == "message" and "message" in into.figures and into.figures["message"] != value:
            into.figures["message"] = f"{into.figures['message']}: {value}"
        else:
            into.figures.setdefault(name, value)
    for name, p in other.precision.items():
        into.precision.setdefault(name, p)
    # the evidence stays the first line, as printed: joined lines would not be text of the input
    into.implies_up = into.implies_up or other.implies_up


def _same_figures(a: Failure, b: Failure) -> bool:
    return a.figures == b.figures


def _decide(boot: Boot) -> None:
    """Outcome and failure phases, per facts.md."""
    failures = sorted(boot.failures, key=lambda f: f.line)
    boot.failures = failures
    first = failures[0].line if failures else None
    up = boot.ready_line is not None and (first is None or boot.ready_line < first)
    implied = boot._up_line is not None
    if not failures:
        boot.outcome = O.ready if boot.ready_line is not None else O.incomplete
    elif up or implied:
        boot.outcome = O.crashed
    else:
        boot.outcome = O.failed
    for f in failures:
        if f.phase is not None:
            continue
        if boot.outcome == O.crashed:
            f.phase = P.runtime
            continue
        f.phase = _hinted_phase(boot, f) or _PHASE_AFTER[f.progress]


def _hinted_phase(boot: Boot, f: Failure) -> str | None:
    """The innermost traceback frame near the failure: the last one before it, else the last
    one of the traceback that follows it ("EngineCore failed to start." precedes its frames)."""
    before = [h for h in boot._hints if f.line - _HINT_WINDOW <= h[0] <= f.line]
    if before:
        return before[-1][1]
    after = [h for h in boot._hints if f.line < h[0] <= f.line + _HINT_WINDOW]
    return after[-1][1] if after else None


def _stamp(ts: tuple[str, int | None] | None, year: int | None) -> str | None:
    if ts is None:
        return None
    md, hms = ts[0].split(" ")
    if year is None:
        return None
    return f"{year:04d}-{md} {hms}"
