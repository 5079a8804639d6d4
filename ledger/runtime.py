"""What a served boot did: decode speed, KV usage, prefix hits, speculative acceptance, requests,
uptime and how it ended (``ledger runtime``).  The charts (``ledger plot``, ``ledger serve``) are
drawn by ``ledger.serve.charts``.

Figures are read from the ``runtime_sample`` table; nothing here parses logs.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from typing import Any

from sqlalchemy import select

from ledger.parsers.vocabulary import Outcome, Phase

from .db import models as m
from .db.connect import Ledger
from .queries import deploy_name, resolve_boot
from .render import boot_id, iso

# how a boot that did not crash at runtime ended, by its outcome
_ENDED: dict[str, str] = {Outcome.ready: "still serving when the log ends", Outcome.failed: "never came up",
                          Outcome.incomplete: "the log ends before start-up completed"}


def _seconds_between(a: str | None, b: str | None) -> float | None:
    if not a or not b:
        return None
    fmt = "%Y-%m-%d %H:%M:%S"
    try:
        return (dt.datetime.strptime(b, fmt) - dt.datetime.strptime(a, fmt)).total_seconds()
    except ValueError:
        return None


def _quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p10": None, "p90": None, "max": None}
    if len(values) == 1:
        v = values[0]
        return {"median": v, "p10": v, "p90": v, "max": v}
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return {"median": statistics.median(values), "p10": deciles[0], "p90": deciles[-1], "max": max(values)}


def runtime_report(ledger: Ledger, ref: str) -> dict[str, Any]:
    with ledger.Session() as s:
        boot = resolve_boot(s, ref)
        S = m.RuntimeSample.c
        stats = s.execute(select(S.generation_throughput_tps, S.running_reqs, S.gpu_kv_cache_usage_pct,
                                 S.prefix_cache_hit_rate_pct, S.engine, S.logged_at)
                          .where(S.boot_id == boot.id, S.kind == "engine_stats").order_by(S.line)).all()
        spec = s.execute(select(S.spec_mean_acceptance_length, S.spec_draft_acceptance_rate_pct,
                                S.spec_accepted_tokens, S.spec_drafted_tokens)
                         .where(S.boot_id == boot.id, S.kind == "spec_decode").order_by(S.line)).all()
        failures = [f for f in boot.failures]
        ready_at, ended_at, outcome = boot.ready_at, boot.ended_at, boot.outcome
        name = deploy_name(boot.deploy)
        year_inferred = bool(boot.year_inferred)
        bid = boot.id
        access, requests = boot.access_lines, boot.request_lines
    busy = [r[0] for r in stats if r[0] is not None and (r[1] or 0) > 0]
    kv = [r[2] for r in stats if r[2] is not None]
    hits = [r[3] for r in stats if r[3] is not None]
    engines = sorted({r[4] for r in stats if r[4] is not None})
    accept_len = [r[0] for r in spec if r[0] is not None]
    accept_rate = [r[1] for r in spec if r[1] is not None]
    at_runtime = [f for f in failures if f.phase == Phase.runtime]
    crash = at_runtime[0] if at_runtime else None
    # the figures of the first runtime failure that printed any (an OOM behind "WorkerProc hit an exception")
    figured = next((f for f in at_runtime if json.loads(f.figures)), crash)
    end_at = crash.logged_at if crash and crash.logged_at else ended_at
    return {
        "boot": boot_id(bid),
        "deploy": name,
        "outcome": outcome,
        "engines": engines,
        "stats_intervals": len(stats),
        "decode_tps": {**_quantiles(busy), "intervals_with_running_requests": len(busy)},
        "peak_gpu_kv_cache_usage_pct": max(kv) if kv else None,
        "prefix_cache_hit_rate_pct": {"mean": statistics.fmean(hits) if hits else None,
                                      "last": hits[-1] if hits else None},
        "spec_decode": {
            "reports": len(spec),
            "mean_acceptance_length": statistics.fmean(accept_len) if accept_len else None,
            "draft_acceptance_rate_pct": statistics.fmean(accept_rate) if accept_rate else None,
        },
        "requests": {"access_lines": access, "request_lines": requests},
        "year_inferred": year_inferred,  # of ready_at, ended_at and the crash's time alike
        "ready_at": iso(ready_at),
        "ended_at": iso(end_at),
        "uptime_seconds": _seconds_between(ready_at, end_at),
        "ended": ({"how": "crashed", "kinds": [f.kind for f in at_runtime], "line": crash.line,
                   "logged_at": iso(crash.logged_at), "seconds_after_ready": _seconds_between(ready_at, crash.logged_at),
                   "figures": json.loads(figured.figures) if figured else {}} if crash else
                  {"how": _ENDED.get(outcome, outcome)}),
    }
