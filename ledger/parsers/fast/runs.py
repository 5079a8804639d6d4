"""Hits into the item stream: runs of runtime records read in one match each, the rest of the
event lines through the line model and the rules.

``gather_runs`` turns consecutive hits that hold nothing but a runtime record in its one common
shape (``RuntimeRule.fast``) into ``RuntimeRun`` items — the bulk of a served log, read without
a ``Line`` or an ``Event`` each; ``line_hits`` makes every other hit a ``LineHit``.  Either may
run in the scanning child or here: the items mean the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from ..items import Counts, End, LineHit, RuntimeRun, ShapeRow, Store
from ..lines import fast_line, parse_line
from ..rules import Rule, RuleSet, RuntimeRule
from .scanner import Hit


def gather_runs(hits: Iterable[Hit | RuntimeRun | Counts | End], rules: RuleSet, anchor_texts: list[str],
                run_limit: int, store: Store | None = None) -> Iterator[Hit | RuntimeRun | Counts | End]:
    """The items with consecutive fast runtime records gathered into ``RuntimeRun``s (at most
    ``run_limit`` records each); other items pass through, runs already gathered too.
    ``anchor_texts``: the scanner's anchors, which a hit's ``anchors`` index; ``store``: each
    run's records as the runtime sink stores them (``RuntimeRun.rows``)."""
    # an anchor only one rule keys on, and that rule has a FastShape: a line holding it alone
    # and in the plain shape is read in one match
    shortcut: list[RuntimeRule | None] = []
    for text in anchor_texts:
        keyed = rules.anchors[text]
        rule = keyed[0] if len(keyed) == 1 else None
        fits = isinstance(rule, RuntimeRule) and rule.fast is not None and not rule.wraps
        shortcut.append(rule if isinstance(rule, RuntimeRule) and fits else None)
    if store is not None:
        for item in _gather_rows(hits, shortcut, run_limit, store):
            yield _stored(item, store) if type(item) is RuntimeRun and item.rows is None else item
        return
    run: RuntimeRun | None = None
    for hit in hits:
        if type(hit) is Hit and len(hit.anchors) == 1:
            fast = shortcut[hit.anchors[0]]
            record = None if fast is None else fast.fast_runtime(hit.number, hit.raw)
            if record is not None:
                process, pid, sample = record
                if run is not None and (process != run.process or pid != run.pid or len(run.samples) >= run_limit):
                    yield run
                    run = None
                if run is None:
                    run = RuntimeRun(sample.line, hit.offset, process, pid, [hit.raw], [sample], hit.counts, {})
                    continue
                run.lines.append(hit.raw)
                run.samples.append(sample)
                if hit.counts:
                    _add_counts(run.within, hit.counts)
                continue
        if run is not None:
            yield run
            run = None
        yield hit
    if run is not None:
        yield run


_UNASKED = object()


def _gather_rows(hits: Iterable[Hit | RuntimeRun | Counts | End], shortcut: list[RuntimeRule | None],
                 run_limit: int, store: Store) -> Iterator[Hit | RuntimeRun | Counts | End]:
    """``gather_runs`` for a store: each run's records go straight to their stored rows
    (``Store.for_shape``: no sample made per record), its first and last records to samples
    too (what ``BootAssembler`` reads of a run with rows); a record the shape's row function
    cannot read goes through its sample and the store."""
    # each anchor's row function, asked of the store when a record of its shape is first met (a
    # boot log has none: making one generates code)
    makers: list[ShapeRow | None | object] = [_UNASKED] * len(shortcut)
    run: RuntimeRun | None = None
    run_pid: str | None = None  # the run's pid as printed
    last: tuple[RuntimeRule, tuple[Any, ...], int] | None = None  # the run's last record, if not its first
    for hit in hits:
        if type(hit) is Hit and len(hit.anchors) == 1:
            rule = shortcut[hit.anchors[0]]
            groups = None if rule is None else rule.fast_groups(hit.raw)
            if groups is not None:
                assert rule is not None and rule.fast is not None
                maker = makers[hit.anchors[0]]
                if maker is _UNASKED:
                    maker = makers[hit.anchors[0]] = store.for_shape(rule.fast)
                row = None if maker is None else maker(groups, hit.number)  # type: ignore[operator]
                # PLAIN_SHAPE's groups: process, pid, …
                if run is not None and (groups[0] != run.process or len(run.lines) >= run_limit
                                        or (groups[1] != run_pid and _pid(groups[1]) != run.pid)):
                    yield _ended(run, last)
                    run = None
                kind = rule.fast.kind
                if run is None:
                    process, pid, sample = rule.fast.read_line(groups, hit.number)
                    run = RuntimeRun(sample.line, hit.offset, process, pid, [hit.raw], [sample], hit.counts, {},
                                     [store(sample) if row is None else row], {kind: 1})
                    run_pid, last = groups[1], None
                    continue
                run.lines.append(hit.raw)
                run.rows.append(store(rule.fast.read_line(groups, hit.number)[2]) if row is None else row)  # type: ignore[union-attr]
                kinds = run.kinds
                kinds[kind] = kinds.get(kind, 0) + 1  # type: ignore[index, union-attr]
                last = (rule, groups, hit.number)
                if hit.counts:
                    _add_counts(run.within, hit.counts)
                continue
        if run is not None:
            yield _ended(run, last)
            run = None
        yield hit
    if run is not None:
        yield _ended(run, last)


def _add_counts(within: dict[str, int], counts: dict[str, int]) -> None:
    """The counted lines between a run's records, added up."""
    for kind, n in counts.items():
        within[kind] = within.get(kind, 0) + n


def _pid(printed: str | None) -> int | None:
    return None if printed is None else int(printed)


def _ended(run: RuntimeRun, last: tuple[RuntimeRule, tuple[Any, ...], int] | None) -> RuntimeRun:
    """A run of ``_gather_rows`` with its last record's sample beside its first."""
    if last is not None:
        rule, groups, number = last
        run.samples.append(rule.fast.read_line(groups, number)[2])  # type: ignore[union-attr]
    return run


def _stored(run: RuntimeRun, store: Store) -> RuntimeRun:
    """``run`` with its records' stored rows, its first and last sample only."""
    samples = run.samples
    run.rows = list(map(store, samples))
    run.kinds = dict(Counter(s.kind for s in samples))
    run.samples = [samples[0], samples[-1]] if len(samples) > 1 else samples
    return run


def line_hits(items: Iterable[Hit | RuntimeRun | Counts | End], rules: RuleSet,
              anchor_texts: list[str]) -> Iterator[LineHit | RuntimeRun | Counts | End]:
    """Each ``Hit`` as a ``LineHit``: its Line and the events of the rules its anchors call for."""
    by_anchor = [rules.anchors[a] for a in anchor_texts]
    order = rules.order
    for hit in items:
        if type(hit) is not Hit:  # a run; the tail counts, then the end
            yield hit  # type: ignore[misc]
            continue
        # most lines of a served log are in vLLM's plain shape: read without the general model
        line = fast_line(hit.number, hit.raw) or parse_line(hit.number, hit.raw.decode("utf-8", errors="replace"))
        line.offset = hit.offset

        def lazy(hit: Hit = hit) -> list[str]:
            return [f.decode("utf-8", errors="replace") for f in hit.following()]

        rules_here: list[Rule]
        if len(hit.anchors) == 1:
            rules_here = by_anchor[hit.anchors[0]]
        else:
            rules_here = sorted({id(r): r for i in hit.anchors for r in by_anchor[i]}.values(),
                                key=lambda r: order[id(r)])
        yield LineHit(line, rules.match_line(line, lazy, rules_here), hit.counts)
