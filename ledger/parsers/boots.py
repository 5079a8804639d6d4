"""Events -> Boot records: split a log at each new start-up, attach facts, shape, failures and
runtime samples, and decide each boot's outcome (``docs/facts.md``, "Boot outcome").

``BootAssembler.consume`` takes the scan's item stream (``parsers.items``) and hands back each
boot once it is finished; ``Boot`` is that finished record, public fields only — what the
assembler needs while a boot is still open lives in its ``_Work``.

A new boot starts when a start-up marker (version banner, args dump, engine initialisation)
arrives after the current boot has moved on (any figure, failure or progress), or when the
engine-core / API-server process of the same name comes back with a new pid.  An identical
repeated start-up line (two API servers, a report that pasted it twice) is the same boot.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .items import Counts, CountTotals, End, Header, Item, LineHit, RuntimeRun
from .lines import Line
from .rules import (
    Event,
    FailureRule,
    HintRule,
    Kind,
    Marker,
    MarkerRule,
    RuntimeSample,
)
from .units import Quantity
from .vocabulary import (
    FACTS,
    SHAPE_DEFAULTS,
    Ended,
    FactName,
    FailureKind,
    Outcome,
    Phase,
    RuntimeKind,
    ShapeSource,
    summarize,
)

_START_RANK = {Marker.start_banner: 0, Marker.start_args: 1, Marker.start_engine: 2}
# figures the API server prints before its engine core starts (0.8+: "Using max model len N"
# after "Resolved architecture"); they do not end the start-up that the engine's lines continue
_PRELUDE_FACTS = frozenset({"max_model_len"})
_PROGRESS = [Marker.progress_load, Marker.progress_loaded, Marker.progress_profiled, Marker.progress_kv,
             Marker.progress_capture]
# where a failure happened when nothing but the boot's progress tells
_PHASE_AFTER: dict[str | None, Phase] = {
    None: Phase.unknown,
    Marker.progress_load: Phase.load,
    Marker.progress_loaded: Phase.profile,
    Marker.progress_profiled: Phase.kv_alloc,
    Marker.progress_kv: Phase.kv_alloc,
    Marker.progress_capture: Phase.graph_capture,
}
_SHAPE_PRECEDENCE: dict[str, int] = {ShapeSource.args: 0, ShapeSource.engine_config: 1, ShapeSource.log: 2, ShapeSource.default: 3}
_HINT_WINDOW = 150  # lines: a traceback's frames sit this close to its failure line
_MERGE_WINDOW = 3  # lines: a failure record split over adjacent lines is one failure
_DP_ENGINE = re.compile(r"^EngineCore_(?:DP)?(\d+)$")  # a data-parallel engine core: "EngineCore_DP1", 0.8's "EngineCore_1"
_RESTART_GAP = 600  # seconds: after a failure, new processes printing this much later are another run
_FRAME_GAP = 5  # lines: a traceback's frames (file, source, carets) sit this close to each other
# processes vLLM starts: a traceback they print is vLLM's, whatever code its frames are in
_VLLM_PROCESSES = ("EngineCore", "Worker", "VllmWorker", "APIServer", "ApiServer", "RayWorker", "DPSupervisor")
# Where one name is printed by several wordings, the one a boot keeps for a rank that printed more
# than one (facts.md: one name, one figure; the others are the same figure printed again or a
# part of it): rule names, first preferred; a wording not listed comes last.
WORDING_PREFERENCE: dict[str, tuple[str, ...]] = {
    FactName.model_load_seconds: ("model_loading", "v0_weights", "loading_weights"),
    FactName.model_weights_bytes: ("model_loading", "v0_weights", "v0_profile_breakdown"),
    FactName.max_model_len: ("max_model_len", "args_dict", "args_namespace", "engine_config"),
    FactName.available_kv_cache_bytes: ("v1_available_kv", "v0_profile_breakdown", "v0_064_profile",
                                        "free_memory_on_device"),
    FactName.total_gpu_memory_bytes: ("v0_profile_total", "v0_064_profile", "free_memory_on_device"),
    FactName.initial_free_memory_bytes: ("kv_reserved", "free_memory_on_device"),
    FactName.requested_memory_bytes: ("v0_profile_total", "free_memory_on_device"),
    FactName.activation_peak_bytes: ("v0_profile_breakdown", "free_memory_on_device"),
    FactName.gpu_blocks: ("v0_blocks", "v1_early_blocks", "num_gpu_blocks_is"),
    FactName.torch_compile_seconds: ("torch_compile", "torch_compile_with_warmup"),
}

Stamp = tuple[str, int | None]  # vLLM's "MM-DD HH:MM:SS" and the year a wrapper printed, if any


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
    runtime_kind: str | None = field(default=None, repr=False)  # the kind if its frames show serving
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
    outcome: Outcome = Outcome.incomplete
    ended: Ended | None = None  # how it ended (facts.md); None: the log ends before it was up
    stop_line: int | None = None  # the first line of a requested stop, if the boot had one
    started_at: str | None = None  # "YYYY-MM-DD HH:MM:SS"
    started_printed: str | None = None  # the boot's first timestamp as printed ("MM-DD HH:MM:SS")
    started_year: int | None = None  # and the year a wrapper printed on that line, if any
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

    def summary(self, name: str) -> Fact | None:
        """The boot's figure for a fact: per ``FactSpec.summary`` over all its values."""
        return summarize(name, [f for f in self.facts if f.name == name])


@dataclass(slots=True)
class _Work:
    """What the assembler keeps about a boot while reading it."""

    digest: Any = field(default_factory=hashlib.sha256)  # every line read so far
    starts: dict[Marker, str] = field(default_factory=dict)  # start-up marker -> its line's message
    progress: Marker | None = None  # the furthest progress marker
    moved_on: bool = False  # a figure, failure or progress came since the start-up lines
    hints: list[tuple[int, Phase, str | None]] = field(default_factory=list)  # (line, phase, process)
    pids: dict[str, int] = field(default_factory=dict)  # one-per-boot process -> its pid
    args_complete: bool = False  # a whole (not cut) args dump was read
    first_ts: Stamp | None = None
    ready_ts: Stamp | None = None
    last_ts: Stamp | None = None
    up_line: int | None = None  # a line that tells the engine had been serving
    seen: set[tuple[str | None, int | None]] = field(default_factory=set)  # (process, pid) of its lines
    latest: str | None = None  # its latest vLLM timestamp ("MM-DD HH:MM:SS")
    last_stats: RuntimeSample | None = None  # held back one line: V0 may add its prefix-hit line
    wordings: dict[int, str] = field(default_factory=dict)  # id(fact) -> the rule that read it
    last_event: int = 0  # the last line that gave an event
    # the latest traceback (header or frames): its first line's number, text, rank, process and
    # time, and its last line
    tb_head: tuple[int, str, int | None, str | None, str | None] | None = None
    tb_last: int = 0
    tb_vllm: bool = False  # a line of it is vLLM's
    last_alive: int = 0  # the last line that shows the engine up (a start-up-complete line, a sample)
    prelude_only: bool = True  # nothing but the API server's own start-up lines so far


class BootAssembler:
    """``consume`` the scan's items in order; each call returns the boots it finished.

    ``counts_after_scan``: the counted lines (access, request) come from another reader, in a
    ``CountTotals`` item (grep's, or a boot's byte range counted), so a boot closed is ``held``
    until its counts come.  Nothing is kept of a boot once it is handed out."""

    def __init__(self, default_year: int | None = None,
                 runtime_sink: Callable[[Boot, list[RuntimeSample]], None] | None = None,
                 counts_after_scan: bool = False, not_after: str | None = None,
                 run_starts: Sequence[int] = ()):
        self.count = 0  # boots begun so far
        self.held: list[Boot] = []  # closed, waiting for their counts (counts_after_scan), in order
        # lines at which the process was started again (a container's restart, told by its
        # runtime): whatever the lines say, a boot ends before each
        self.run_starts = sorted(run_starts, reverse=True)
        self.current: Boot | None = None
        self.first_line = 1
        self.default_year = default_year
        # when the default year is the file's own (its modification time), a boot it would put
        # after that moment was logged the year before: a log is not written before it happens
        self.not_after = not_after
        # with a sink, runtime samples leave as they come (in line order, a list at a time)
        # instead of piling up in the boot
        self.runtime_sink = runtime_sink
        self.counts_after_scan = counts_after_scan
        self._pending_counts: dict[str, int] = {}
        self._work: dict[int, _Work] = {}  # by boot index, until the boot is sealed

    def consume(self, item: Item) -> list[Boot]:
        """Take one item of the stream; returns the boots it finished (for streaming)."""
        match item:
            case LineHit(line, events, counts):
                self._add_counts(counts)
                return self._feed(line, events)
            case RuntimeRun():
                finished = []
                for run in self._cut_at_run_starts(item):
                    self._add_counts(run.counts)
                    finished += self._feed_run(run)
                    self._add_counts(run.within)
                return finished
            case Counts(counts):
                self._add_counts(counts)
            case Header(lines, counts):
                self.first_line = lines + 1
                self._add_counts({k: -n for k, n in counts.items()})
            case End(total_lines):
                return self._end(total_lines)
            case CountTotals(per_boot):  # the counts of the first boots held
                done, self.held = self.held[:len(per_boot)], self.held[len(per_boot):]
                for boot, counts in zip(done, per_boot, strict=True):
                    boot.access_lines = boot.request_lines = 0
                    _credit(boot, counts)
                    _served(boot)
                    self._seal(boot)
                return done
        return []

    def _add_counts(self, counts: dict[str, int]) -> None:
        """Credit counted lines (access, request) to the current boot."""
        if not counts or not any(counts.values()):
            return
        if self.current is None:
            for k, n in counts.items():
                self._pending_counts[k] = self._pending_counts.get(k, 0) + n
            return
        _credit(self.current, counts)

    # -- feeding ------------------------------------------------------------------------------
    def _feed(self, line: Line, events: list[Event]) -> list[Boot]:
        """One line's events; returns the boots that this line finished."""
        finished: list[Boot] = []
        if not events:
            return finished
        starts = [e for e in events if e.kind == Kind.marker and cast(MarkerRule, e.rule).marker in _START_RANK]
        boot, work = self._boot_for(line.number, line.offset, line.process, line.pid, line.message, starts, finished,
                                    line.timestamp)
        # the line without a CR before its newline: the same log saved with CRLF endings is
        # the same boot (the evidence keeps the line as it was)
        work.digest.update(line.raw.removesuffix("\r").encode("utf-8", "surrogatepass"))
        work.digest.update(b"\n")
        if line.timestamp:
            stamp = (line.timestamp, line.year)
            work.first_ts = work.first_ts or stamp
            work.last_ts = stamp
        if any(e.kind == Kind.failure for e in events):
            # a generic wording ("SomethingError: …") yields to a known one on the same line
            known = any(e.kind == Kind.failure and not cast(FailureRule, e.rule).fallback for e in events)
            if known:
                events = [e for e in events if not (e.kind == Kind.failure and cast(FailureRule, e.rule).fallback)]
        for ev in events:
            handler = _HANDLERS[ev.kind]
            handler(self, boot, work, ev)
        work.last_event = line.number
        return finished

    def _feed_run(self, run: RuntimeRun) -> list[Boot]:
        """``_feed`` for each line of a run of runtime records (most lines of a served log), at
        once: the same result, without a Line or an Event per line.  The run's lines share a
        process, so only its first line can start a boot."""
        finished: list[Boot] = []
        boot, work = self._boot_for(run.number, run.offset, run.process, run.pid, None, (), finished,
                                    run.samples[0].timestamp)
        last = run.samples[-1].timestamp
        if last and (work.latest is None or last > work.latest):
            work.latest = last
        work.digest.update(b"\n".join(run.lines))
        work.digest.update(b"\n")
        samples = run.samples  # with rows: the first and the last only
        first, final = samples[0], samples[-1]
        work.first_ts = work.first_ts or (first.timestamp or "", None)
        work.last_ts = (final.timestamp or "", None)
        kinds = Counter(s.kind for s in samples) if run.kinds is None else run.kinds
        for kind, n in kinds.items():
            boot.samples[kind] = boot.samples.get(kind, 0) + n
        # as _on_runtime one at a time: each sample lets the held-back stats sample go, and a
        # stats sample is held back in turn (as a sample: V0's prefix-hit line may add to it)
        records: list[Any] = samples if run.rows is None else run.rows
        held = work.last_stats
        if final.kind == RuntimeKind.engine_stats:
            work.last_stats, records = final, records[:-1]
        else:
            work.last_stats = None
        out = records if held is None else [held, *records]
        if out:
            self._emit(boot, out)
        self._ready(boot, work, first.line, first.timestamp, None)
        work.last_event = work.last_alive = final.line
        return finished

    def _cut_at_run_starts(self, run: RuntimeRun) -> list[RuntimeRun]:
        """A run of runtime records as the runs of the process it spans (``run_starts``): one
        piece per run, each to be fed on its own."""
        cuts = [n for n in reversed(self.run_starts) if run.samples[0].line < n <= run.samples[-1].line]
        if not cuts:
            return [run]
        pieces, lines, samples, offset, first = [], run.lines, run.samples, run.offset, True
        for cut in [*cuts, None]:
            k = len(samples) if cut is None else next(i for i, s in enumerate(samples) if s.line >= cut)
            if k:
                pieces.append(RuntimeRun(samples[0].line, offset, run.process, run.pid, lines[:k], samples[:k],
                                         run.counts if first else {}, run.within if cut is None else {}))
                first = False
                if offset is not None:
                    offset += sum(len(raw) + 1 for raw in lines[:k])
            lines, samples = lines[k:], samples[k:]
        return pieces

    def _boot_for(self, number: int, offset: int | None, process: str | None, pid: int | None,
                  message: str | None, starts: Sequence[Event], finished: list[Boot],
                  timestamp: str | None = None) -> tuple[Boot, _Work]:
        boot = self.current
        if boot is None:
            boot = self._new(self.first_line)
        work = self._work[boot.index]
        new = False
        known_process = (process, pid) in work.seen
        # a paste out of time order: a start-up line printed before figures already read, by
        # processes already read, is this boot's own start-up (scrolled up to), not a restart —
        # unless the boot has had that start-up line already (a boot prints it once)
        earlier = timestamp is not None and work.latest is not None and timestamp < work.latest and known_process \
            and not any(cast(MarkerRule, ev.rule).marker in work.starts for ev in starts)
        # another data-parallel engine core of the same run starting up alongside the first
        sibling = process is not None and process not in work.pids and _DP_ENGINE.match(process) is not None \
            and any(_DP_ENGINE.match(p) for p in work.pids)
        if starts and not earlier and not sibling:
            if work.moved_on:
                new = True  # figures, failures or progress came since this boot's start-up
            for ev in starts:
                marker = cast(MarkerRule, ev.rule).marker
                if work.starts.get(marker) == message:
                    continue  # the same start-up line again before anything else: one boot
                if any(_START_RANK[m] >= _START_RANK[marker] for m in work.starts):
                    new = True
        one_per_boot = process is not None and pid is not None and _one_per_boot(process)
        if not new and one_per_boot:
            known = work.pids.get(cast(str, process))
            if known is not None and known != pid and work.moved_on:
                new = True
        if not new and boot.failures and not known_process and timestamp is not None and work.latest is not None \
                and _seconds(timestamp) - _seconds(work.latest) > _RESTART_GAP:
            new = True  # the boot had failed; new processes, much later: another run in the paste
        first = number
        if self.run_starts and number >= self.run_starts[-1]:
            while self.run_starts and number >= self.run_starts[-1]:
                cut = self.run_starts.pop()
            if work.seen:  # a new run of the process: a new boot from the run's first line on
                new, first = True, max(cut, boot.first_line + 1)
        if new:
            closed = self._close(boot, first - 1)
            if closed is not None:
                finished.append(closed)
            boot = self._new(first)
            boot.first_offset = offset or 0
            work = self._work[boot.index]
        if one_per_boot:
            work.pids.setdefault(cast(str, process), cast(int, pid))
        work.seen.add((process, pid))
        if timestamp is not None and (work.latest is None or timestamp > work.latest):
            work.latest = timestamp
        return boot, work

    def _new(self, first_line: int) -> Boot:
        boot = Boot(index=self.count, first_line=first_line)
        self.count += 1
        self._work[boot.index] = _Work()
        self.current = boot
        if self._pending_counts:
            _credit(boot, self._pending_counts)
            self._pending_counts = {}
        return boot

    # -- handlers -------------------------------------------------------------------------------
    def _on_fact(self, boot: Boot, work: _Work, ev: Event) -> None:
        rank = ev.line.rank if ev.rule.rank_from_prefix else None
        for name, q in ev.data.items():
            fact = _fact(name, q, rank, ev, ev.rule.pack)
            work.wordings[id(fact)] = ev.rule.name
            boot.facts.append(fact)
        # a pack's line never splits a boot (its rule may sit on a start-up line); nor does the
        # API server's own start-up figure before its engine starts (facts.md: one start, one
        # boot — "Using max model len N" belongs to the boot whose engine follows)
        if ev.rule.pack is None and not (ev.rule.name in _PRELUDE_FACTS and Marker.start_engine not in work.starts):
            work.moved_on = True

    def _on_shape(self, boot: Boot, work: _Work, ev: Event) -> None:
        data = ev.data
        if "items" in data:
            source, items = data["source"], data["items"]
            if source == ShapeSource.args and data.get("complete"):
                work.args_complete = True
        else:
            source = ShapeSource.log
            items = {k: (v.value if isinstance(v, Quantity) else v) for k, v in data.items()}
        for key, value in items.items():
            _set_shape(boot, ShapeValue(key, value, source, ev.line.number, ev.text, ev.rule.pack))
        # facts.md: max_model_len is also read from the args dump and the engine config
        mml = items.get("max_model_len")
        if source in (ShapeSource.args, ShapeSource.engine_config) and isinstance(mml, int) \
                and not isinstance(mml, bool) and mml > 0:
            fact = Fact(FactName.max_model_len, mml, FACTS[FactName.max_model_len].unit, None,
                        None, ev.line.process, ev.line.number, ev.text, None, str(mml))
            work.wordings[id(fact)] = ev.rule.name
            boot.facts.append(fact)

    def _on_meta(self, boot: Boot, work: _Work, ev: Event) -> None:
        d = ev.data
        if d.get("engine_version") and (boot.engine_version is None or
                                        (d.get("engine_commit") and not boot.engine_commit)):
            boot.engine_version = d["engine_version"]
        if d.get("engine_commit") and not boot.engine_commit:
            boot.engine_commit = d["engine_commit"]
        for digest in d.get("image_digests", []):
            if digest not in boot.image_digests:
                boot.image_digests.append(digest)

    def _on_marker(self, boot: Boot, work: _Work, ev: Event) -> None:
        rule = cast(MarkerRule, ev.rule)
        marker = rule.marker
        if marker in _START_RANK:
            work.starts.setdefault(marker, ev.line.message)
        elif marker in _PROGRESS:
            work.moved_on = True
            if work.progress is None or _PROGRESS.index(marker) > _PROGRESS.index(work.progress):
                work.progress = marker
        elif marker == Marker.ready:
            self._ready(boot, work, ev.line.number, ev.line.timestamp, ev.line.year)
        elif marker == Marker.serving:  # a line that tells requests were being served
            if rule.implies_up and work.up_line is None:
                work.up_line = ev.line.number
            self._ready(boot, work, ev.line.number, ev.line.timestamp, ev.line.year)
        elif marker == Marker.stop:
            # a stop that was asked for; after a failure it is the server's clean-up, not a stop
            if boot.stop_line is None and not boot.failures:
                boot.stop_line = ev.line.number
        elif marker == Marker.traceback:
            line = ev.line
            if work.tb_head is None or line.number - work.tb_last > _FRAME_GAP \
                    or line.message.startswith("Traceback"):
                work.tb_head = (line.number, ev.text, line.rank, line.process, line.timestamp)
                work.tb_vllm = False
            work.tb_last = line.number
            # vLLM's: a frame of vLLM's code, or a line its logger or one of its processes printed
            work.tb_vllm = work.tb_vllm or "/vllm/" in line.message or line.level is not None \
                or (line.process or "").startswith(_VLLM_PROCESSES)

    def _ready(self, boot: Boot, work: _Work, number: int, timestamp: str | None, year: int | None) -> None:
        work.moved_on = True
        work.last_alive = max(work.last_alive, number)
        if boot.ready_line is None:
            boot.ready_line = number
            if timestamp:
                work.ready_ts = (timestamp, year)

    def _on_hint(self, boot: Boot, work: _Work, ev: Event) -> None:
        work.hints.append((ev.line.number, cast(HintRule, ev.rule).phase, ev.line.process))
        if len(work.hints) > 4 * _HINT_WINDOW:  # only frames near a failure matter: stay bounded
            del work.hints[: 2 * _HINT_WINDOW]

    def _on_failure(self, boot: Boot, work: _Work, ev: Event) -> None:
        rule = cast(FailureRule, ev.rule)
        if boot.stop_line is not None:
            # facts.md: the stop's own lines never make a boot crashed — the output handler's
            # EngineDeadError racing a SIGTERM, a worker torn down by the stop
            return
        work.moved_on = work.moved_on or rule.pack is None  # as _on_fact
        figures: dict[str, Any] = {}
        precision: dict[str, float] = {}
        for name, v in ev.data.items():
            if isinstance(v, Quantity):
                figures[name] = v.value
                if v.precision:
                    precision[name] = v.precision
            else:
                figures[name] = v
        rank = ev.line.rank if rule.rank_from_prefix else None
        failure = Failure(rule.failure, rule.phase, ev.line.number, ev.text, rank,
                          ev.line.process, figures, precision, rule.pack, rule.implies_up,
                          work.progress, rule.runtime_kind, ev.line.timestamp)
        if rule.implies_up and work.up_line is None:
            work.up_line = ev.line.number
        between = False  # another kind of failure came after prev: a new incident
        for prev in reversed(boot.failures):
            if prev.kind != failure.kind:
                between = True
                continue
            if failure.line - prev.line <= _MERGE_WINDOW and prev.process == failure.process:
                _merge(prev, failure)  # one record over adjacent lines (pydantic's detail line)
                return
            if prev.rank == failure.rank and _same_figures(prev, failure) and _same_report(prev, failure, between):
                return  # the same failure printed again (re-raised, repeated per process)
        boot.failures.append(failure)

    def _on_runtime(self, boot: Boot, work: _Work, ev: Event) -> None:
        d = ev.data
        if d["kind"] == "engine_stats_extra":  # V0's separate prefix-hit line follows the stats line
            last = work.last_stats
            if last is not None and ev.line.number - last.line <= _MERGE_WINDOW:
                work.last_stats = RuntimeSample.of(last.kind, last.line, last.timestamp, last.engine,
                                                   {**last.values, **d["values"]})
            return
        sample = RuntimeSample.of(d["kind"], ev.line.number, ev.line.timestamp, d["engine"], d["values"])
        boot.samples[sample.kind] = boot.samples.get(sample.kind, 0) + 1
        self._flush_stats(boot, work)
        if sample.kind == RuntimeKind.engine_stats:
            work.last_stats = sample  # held back one line: V0 may add its prefix-hit line
        else:
            self._emit(boot, [sample])
        self._ready(boot, work, ev.line.number, ev.line.timestamp, ev.line.year)

    def _flush_stats(self, boot: Boot, work: _Work) -> None:
        if work.last_stats is not None:
            self._emit(boot, [work.last_stats])
            work.last_stats = None

    def _emit(self, boot: Boot, samples: list[RuntimeSample]) -> None:
        if self.runtime_sink is not None:
            self.runtime_sink(boot, samples)
        else:
            boot.runtime.extend(samples)

    # -- closing --------------------------------------------------------------------------------
    def peek(self, last_line: int) -> Boot | None:
        """The boot being read as it would be if the log ended at ``last_line``: a finished,
        sealed copy (outcome, phases, times, content digest), the assembler left as it was.  A
        stats sample held back for V0's prefix-hit line is not in the copy's ``runtime`` (nor
        given to the sink): it comes with the next line.  None before the first boot.  What
        ``ledger watch`` stores of a boot still running."""
        boot = self.current
        if boot is None or boot.index not in self._work:
            return None
        work = self._work[boot.index]
        copy = dataclasses.replace(boot, facts=list(boot.facts), failures=[dataclasses.replace(f) for f in boot.failures],
                                   shape=dict(boot.shape), runtime=list(boot.runtime), samples=dict(boot.samples),
                                   image_digests=list(boot.image_digests))
        held = dataclasses.replace(work, digest=work.digest.copy(), hints=list(work.hints), last_stats=None)
        self._finish(copy, held, last_line)
        self._seal(copy, held)
        return copy

    def _close(self, boot: Boot, last_line: int) -> Boot | None:
        """Close a boot; returns it when it is finished (its counts are final) and sealed."""
        work = self._work[boot.index]
        self._flush_stats(boot, work)
        self._finish(boot, work, last_line)
        if self.counts_after_scan:
            self.held.append(boot)
            return None  # sealed once the counts are known (CountTotals)
        self._seal(boot)
        return boot

    def _finish(self, boot: Boot, work: _Work, last_line: int) -> None:
        """A boot's outcome, failure phases, times and defaults, at its end."""
        boot.last_line = max(last_line, boot.first_line)
        _fill_defaults(boot, work)
        _one_wording(boot, work)
        _cut_traceback(boot, work)
        _decide(boot, work)
        year = None
        for stamp in (work.first_ts, work.ready_ts, work.last_ts):
            if stamp and stamp[1]:
                year = stamp[1]
                break
        boot.year_inferred = year is None
        year = year or self.default_year
        if boot.year_inferred and year is not None and self.not_after is not None:
            first = next((s for s in (work.first_ts, work.ready_ts, work.last_ts) if s), None)
            stamped = _stamp(first, year)
            if stamped is not None and stamped > self.not_after:
                year -= 1
        if work.first_ts is not None:
            boot.started_printed, boot.started_year = work.first_ts
        boot.started_at = _stamp(work.first_ts, year)
        boot.ready_at = _stamp(work.ready_ts, year)
        boot.ended_at = _stamp(work.last_ts, year)
        for f in boot.failures:
            if f.timestamp:
                f.logged_at = _stamp((f.timestamp, None), year)
        work.hints.clear()

    def _seal(self, boot: Boot, work: _Work | None = None) -> None:
        """Fold the final access/request counts into the boot's identity digest."""
        d = (work if work is not None else self._work.pop(boot.index)).digest.copy()
        d.update(f"access={boot.access_lines};request={boot.request_lines}".encode())
        boot.content_sha256 = d.hexdigest()

    def _end(self, total_lines: int) -> list[Boot]:
        """The scan is over: close the last boot (and make one, honest and empty, for a log of
        vLLM lines with not one figure or marker)."""
        finished: list[Boot] = []
        if self.current is None and self._pending_counts:
            self._new(self.first_line)  # count lines but no event line: still one boot
        if self.current is None and not self.count:
            self._new(self.first_line)
        if self.current is not None:
            closed = self._close(self.current, total_lines)
            self.current = None
            if closed is not None:
                finished.append(closed)
        return finished


def _credit(boot: Boot, counts: dict[str, int]) -> None:
    boot.access_lines += counts.get("access", 0)
    boot.request_lines += counts.get("request", 0)


_Handler = Callable[[BootAssembler, Boot, _Work, Event], None]

_HANDLERS: dict[str, _Handler] = {
    Kind.fact: BootAssembler._on_fact,
    Kind.shape: BootAssembler._on_shape,
    Kind.meta: BootAssembler._on_meta,
    Kind.marker: BootAssembler._on_marker,
    Kind.hint: BootAssembler._on_hint,
    Kind.failure: BootAssembler._on_failure,
    Kind.runtime: BootAssembler._on_runtime,
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


def _fill_defaults(boot: Boot, work: _Work) -> None:
    """Defaults only where a complete non-default args dump shows the key was left alone."""
    if not work.args_complete:
        return
    for key, value in SHAPE_DEFAULTS.items():
        if key not in boot.shape:
            boot.shape[key] = ShapeValue(key, value, ShapeSource.default, None, None)


def _merge(into: Failure, other: Failure) -> None:
    for name, value in other.figures.items():
        if name == "message" and "message" in into.figures and into.figures["message"] != value:
            old = into.figures["message"]
            if value in old or old in value:  # two rules read one statement (one line): its longer reading
                into.figures["message"] = max(old, value, key=len)
            else:
                into.figures["message"] = f"{old}: {value}"
        else:
            into.figures.setdefault(name, value)
    for name, p in other.precision.items():
        into.precision.setdefault(name, p)
    # the evidence stays the first line, as printed: joined lines would not be text of the input
    into.implies_up = into.implies_up or other.implies_up


def _same_figures(a: Failure, b: Failure) -> bool:
    return a.figures == b.figures


def _same_report(a: Failure, b: Failure, between: bool) -> bool:
    """Whether failure ``b``, with ``a``'s figures, is ``a`` reported again.  With figures, it is
    (a worker's OOM re-raised by the engine core).  Without, it is unless the two lines come from
    two data-parallel engines (``EngineCore_0`` and ``EngineCore_1`` each lose their workers), or
    another kind of failure came between them: a new incident (220: each DP engine's executor,
    then its client, report the fatal signal)."""
    if a.figures:
        return True
    ea = _DP_ENGINE.match(a.process or "")
    eb = _DP_ENGINE.match(b.process or "")
    return not between and not (ea and eb and ea.group(1) != eb.group(1))


def _one_wording(boot: Boot, work: _Work) -> None:
    """Per name and rank, the facts of one wording only (``WORDING_PREFERENCE``)."""
    seen: dict[tuple[str, int | None], set[str]] = {}
    for f in boot.facts:
        seen.setdefault((f.name, f.rank), set()).add(work.wordings.get(id(f), ""))
    drop: set[tuple[str, int | None, str]] = set()
    for (name, rank), rules in seen.items():
        if len(rules) < 2 or name not in WORDING_PREFERENCE:
            continue
        order = WORDING_PREFERENCE[name]
        keep = min(rules, key=lambda r: order.index(r) if r in order else len(order))
        drop.update((name, rank, r) for r in rules if r != keep)
    if drop:
        boot.facts = [f for f in boot.facts if (f.name, f.rank, work.wordings.get(id(f), "")) not in drop]


def _cut_traceback(boot: Boot, work: _Work) -> None:
    """facts.md "exception": a boot whose text ends in a traceback of vLLM's, with no failure
    stated in or just before it (the excerpt cut the exception line off), failed by an exception
    whose class and message are not in the text; its phase from the traceback's own frames."""
    if work.tb_head is None or not work.tb_vllm or work.tb_last != work.last_event:
        return
    line, text, rank, process, timestamp = work.tb_head
    if boot.stop_line is not None and line > boot.stop_line:
        return  # the stop's own traceback (the output handler's EngineDeadError): not a failure
    if any(f.line >= line - _HINT_WINDOW for f in boot.failures):
        return
    frames = [h for h in work.hints if line <= h[0] <= work.tb_last]
    startup = [h[1] for h in frames if h[1] != Phase.runtime]
    failure = Failure(FailureKind.exception, startup[-1] if startup else None, line, text, rank, process,
                      progress=work.progress, timestamp=timestamp)
    failure.implies_up = not startup and bool(frames)
    boot.failures.append(failure)


def _decide(boot: Boot, work: _Work) -> None:
    """Outcome and failure phases, per facts.md: a phase the text tells, else the traceback's
    frames, else how far the boot had got; frames of the serving path show the engine had come
    up, so the boot crashed."""
    # an exception the engine served on after (a request's error, logged with its traceback, and
    # stats records after it) did not end it: facts.md "exception" is one that ends a start-up or
    # a served engine
    failures = sorted((f for f in boot.failures if not (f.kind == FailureKind.exception and work.last_alive > f.line)),
                      key=lambda f: f.line)
    boot.failures = failures
    hinted = {id(f): _hinted_phase(work, f) for f in failures if f.phase is None}
    for f in failures:
        if hinted.get(id(f)) == Phase.runtime:
            f.implies_up = True
            if f.runtime_kind:
                f.kind = f.runtime_kind
    first = failures[0].line if failures else None
    up = boot.ready_line is not None and (first is None or boot.ready_line < first)
    implied = work.up_line is not None or any(f.implies_up for f in failures)
    if not failures:
        boot.outcome = Outcome.ready if boot.ready_line is not None else Outcome.incomplete
        _served(boot)
    elif up or implied:
        boot.outcome = Outcome.crashed
    else:
        boot.outcome = Outcome.failed
    boot.ended = _ended(boot)
    for f in failures:
        if f.phase is not None:
            continue
        if boot.outcome == Outcome.crashed:
            f.phase = Phase.runtime
            continue
        f.phase = hinted[id(f)] or _PHASE_AFTER[f.progress]


def _ended(boot: Boot) -> Ended | None:
    """facts.md, "How a boot ended": a stop asked for with no failure before it; else the
    outcome's failure; else serving at the end of the log; None for a start-up the log cuts off."""
    if boot.stop_line is not None and not boot.failures:
        return Ended.stopped
    if boot.outcome == Outcome.failed:
        return Ended.failed
    if boot.outcome == Outcome.crashed:
        return Ended.crashed
    if boot.outcome == Outcome.ready:
        return Ended.running
    return None


def _served(boot: Boot) -> None:
    """facts.md "ready": serving activity — a request received or answered (the counted request
    and access lines) — makes a boot with no failure ready, even where no start-up line was read."""
    if boot.outcome == Outcome.incomplete and not boot.failures and (boot.access_lines or boot.request_lines):
        boot.outcome = Outcome.ready
        boot.ended = _ended(boot)


def _hinted_phase(work: _Work, f: Failure) -> Phase | None:
    """The innermost start-up frame of the traceback near the failure (the frames before it, else
    those of the traceback that follows it: "EngineCore failed to start." precedes its frames);
    ``runtime`` when the frames there are only the serving path's."""
    before = [h for h in work.hints if f.line - _HINT_WINDOW <= h[0] <= f.line]
    near = before or [h for h in work.hints if f.line < h[0] <= f.line + _HINT_WINDOW]
    startup = [h for h in near if h[1] != Phase.runtime]
    if startup:
        return startup[-1][1]
    return near[-1][1] if near else None


def _seconds(timestamp: str) -> int:
    """vLLM's "MM-DD HH:MM:SS" as seconds, to measure gaps within a paste (months as 31 days:
    the order and the size of a gap are what matter)."""
    md, hms = timestamp.split(" ")
    month, day = md.split("-")
    h, m, sec = hms.split(":")
    return ((int(month) * 31 + int(day)) * 24 + int(h)) * 3600 + int(m) * 60 + int(sec)


def _stamp(ts: tuple[str, int | None] | None, year: int | None) -> str | None:
    if ts is None:
        return None
    md, hms = ts[0].split(" ")
    if year is None:
        return None
    return f"{year:04d}-{md} {hms}"
