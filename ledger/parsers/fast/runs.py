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

from ..items import Counts, End, LineHit, RuntimeRun, Store
from ..lines import fast_line, parse_line
from ..rules import Rule, RuleSet, RuntimeRule
from .scanner import Hit


def gather_runs(hits: Iterable[Hit | RuntimeRun | Counts | End], rules: RuleSet, anchor_texts: list[str],
                run_limit: int, store: Store | None = None) -> Iterator[Hit | RuntimeRun | Counts | End]:
    """The items with consecutive fast runtime records gathered into ``RuntimeRun``s (at most
    ``run_limit`` records each); other items pass through, runs already gathered too.
    ``anchor_texts``: the scanner's anchors, which a hit's ``anchors`` index; ``store``: each
    run's records as the runtime sink stores them (``RuntimeRun.rows``)."""
    if store is not None:
        for item in gather_runs(hits, rules, anchor_texts, run_limit):
            yield _stored(item, store) if type(item) is RuntimeRun and item.rows is None else item
        return
    # an anchor only one rule keys on, and that rule has a FastShape: a line holding it alone
    # and in the plain shape is read in one match
    shortcut: list[RuntimeRule | None] = []
    for text in anchor_texts:
        keyed = rules.anchors[text]
        rule = keyed[0] if len(keyed) == 1 else None
        fits = isinstance(rule, RuntimeRule) and rule.fast is not None and not rule.wraps
        shortcut.append(rule if isinstance(rule, RuntimeRule) and fits else None)
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
                    within = run.within
                    for kind, n in hit.counts.items():
                        within[kind] = within.get(kind, 0) + n
                continue
        if run is not None:
            yield run
            run = None
        yield hit
    if run is not None:
        yield run


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
