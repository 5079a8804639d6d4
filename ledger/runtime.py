"""What a served boot did: decode speed, KV usage, prefix hits, speculative acceptance, requests,
uptime and how it ended (``ledger runtime``).  The charts (``ledger plot``, ``ledger serve``) are
drawn by ``ledger.serve.charts``.

Figures are read from the ``runtime_sample`` table; nothing here parses logs.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from ledger.parsers.vocabulary import Outcome, Phase

from .db.connect import Ledger
from .db.reader import Reader, with_children
from .queries import deploy_name, resolve_boot
from .render import boot_id, iso
from .verdicts import seconds_between

# how a boot that did not crash at runtime ended, by its outcome
_ENDED: dict[str, str] = {Outcome.ready: "still serving when the log ends", Outcome.failed: "never came up",
                          Outcome.incomplete: "the log ends before start-up completed"}


def _quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p10": None, "p90": None, "max": None}
    if len(values) == 1:
        v = values[0]
        return {"median": v, "p10": v, "p90": v, "max": v}
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return {"median": statistics.median(values), "p10": deciles[0], "p90": deciles[-1], "max": max(values)}


# past this many samples of a kind the report's figures are computed by the database (a sort
# per quantile) instead of a Python row per sample: a boot of 10^6 held them all
LARGE_BOOT = 50_000


def runtime_report(ledger: Ledger, ref: str) -> dict[str, Any]:
    with ledger.reading() as s:
        boot = with_children(s, [resolve_boot(s, ref)], facts=False, shape=False)[0]
        n_stats, n_spec = s.one("SELECT COUNT(CASE WHEN kind = 'engine_stats' THEN 1 END), "
                                "COUNT(CASE WHEN kind = 'spec_decode' THEN 1 END) FROM runtime_sample "
                                "WHERE boot_id = :b", {"b": boot.id}) or (0, 0)
        if max(n_stats, n_spec) > LARGE_BOOT:
            figures = _figures_in_sql(s, boot.id)
        else:
            stats = s.tuples("SELECT generation_throughput_tps, running_reqs, gpu_kv_cache_usage_pct, "
                             "prefix_cache_hit_rate_pct, engine, logged_at FROM runtime_sample "
                             "WHERE boot_id = :b AND kind = 'engine_stats' ORDER BY line", {"b": boot.id})
            spec = s.tuples("SELECT spec_mean_acceptance_length, spec_draft_acceptance_rate_pct, "
                            "spec_accepted_tokens, spec_drafted_tokens FROM runtime_sample "
                            "WHERE boot_id = :b AND kind = 'spec_decode' ORDER BY line", {"b": boot.id})
            figures = _figures(stats, spec)
        failures = [f for f in boot.failures]
        ready_at, ended_at, outcome = boot.ready_at, boot.ended_at, boot.outcome
        name = deploy_name(boot.deploy)
        year_inferred = bool(boot.year_inferred)
        bid = boot.id
        access, requests = boot.access_lines, boot.request_lines
    at_runtime = [f for f in failures if f.phase == Phase.runtime]
    crash = at_runtime[0] if at_runtime else None
    # the figures of the first runtime failure that printed any (an OOM behind "WorkerProc hit an exception")
    figured = next((f for f in at_runtime if json.loads(f.figures)), crash)
    end_at = crash.logged_at if crash and crash.logged_at else ended_at
    return {
        "boot": boot_id(bid),
        "deploy": name,
        "outcome": outcome,
        **figures,
        "requests": {"access_lines": access, "request_lines": requests},
        "year_inferred": year_inferred,  # of ready_at, ended_at and the crash's time alike
        "ready_at": iso(ready_at),
        "ended_at": iso(end_at),
        "uptime_seconds": seconds_between(ready_at, end_at),
        "ended": ({"how": "crashed", "kinds": [f.kind for f in at_runtime], "line": crash.line,
                   "logged_at": iso(crash.logged_at), "seconds_after_ready": seconds_between(ready_at, crash.logged_at),
                   "figures": json.loads(figured.figures) if figured else {}} if crash else
                  {"how": _ENDED.get(outcome, outcome)}),
    }


def _figures(stats: Any, spec: Any) -> dict[str, Any]:
    """The report's figures from every sample's row."""
    busy = [r[0] for r in stats if r[0] is not None and (r[1] or 0) > 0]
    kv = [r[2] for r in stats if r[2] is not None]
    hits = [r[3] for r in stats if r[3] is not None]
    accept_len = [r[0] for r in spec if r[0] is not None]
    accept_rate = [r[1] for r in spec if r[1] is not None]
    return {
        "engines": sorted({r[4] for r in stats if r[4] is not None}),
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
    }


def _figures_in_sql(s: Reader, bid: int) -> dict[str, Any]:
    """The same figures computed by the database: counts, max and means by aggregates, each
    quantile read at its place in the sorted values (as ``statistics.quantiles`` interpolates
    them, method "inclusive"), the last prefix hit rate by the line order."""
    p = {"b": bid}
    stats = "boot_id = :b AND kind = 'engine_stats'"
    spec = "boot_id = :b AND kind = 'spec_decode'"
    busy = f"{stats} AND generation_throughput_tps IS NOT NULL AND COALESCE(running_reqs, 0) > 0"
    n_stats, n_busy, peak, hits = s.one(f"SELECT COUNT(*), COUNT(CASE WHEN {busy} THEN 1 END), "
                                        "MAX(gpu_kv_cache_usage_pct), AVG(prefix_cache_hit_rate_pct) "
                                        f"FROM runtime_sample WHERE {stats}", p) or (0, 0, None, None)
    last = s.scalar(f"SELECT prefix_cache_hit_rate_pct FROM runtime_sample WHERE {stats} "
                    "AND prefix_cache_hit_rate_pct IS NOT NULL ORDER BY line DESC LIMIT 1", p)
    engines = sorted(s.scalars(f"SELECT DISTINCT engine FROM runtime_sample WHERE {stats} AND engine IS NOT NULL",
                               p))
    n_spec, accept_len, accept_rate = s.one("SELECT COUNT(*), AVG(spec_mean_acceptance_length), "
                                            f"AVG(spec_draft_acceptance_rate_pct) FROM runtime_sample WHERE {spec}",
                                            p) or (0, None, None)

    def at(i: int) -> float:
        return float(s.scalar(f"SELECT generation_throughput_tps FROM runtime_sample WHERE {busy} "
                              f"ORDER BY generation_throughput_tps LIMIT 1 OFFSET {int(i)}", p))

    def number(v: Any) -> float | None:
        return None if v is None else float(v)

    if n_busy == 0:
        decode: dict[str, float | None] = _quantiles([])
    elif n_busy == 1:
        decode = _quantiles([at(0)])
    else:
        def cut(i: int, n: int = 10) -> float:
            j, delta = divmod(i * (n_busy - 1), n)
            lo = at(j)
            return (lo * (n - delta) + (at(j + 1) if delta else lo) * delta) / n

        half = n_busy // 2
        median = at(half) if n_busy % 2 else (at(half - 1) + at(half)) / 2
        decode = {"median": median, "p10": cut(1), "p90": cut(9), "max": at(n_busy - 1)}
    return {
        "engines": engines,
        "stats_intervals": n_stats,
        "decode_tps": {**decode, "intervals_with_running_requests": n_busy},
        "peak_gpu_kv_cache_usage_pct": number(peak),
        "prefix_cache_hit_rate_pct": {"mean": number(hits), "last": number(last)},
        "spec_decode": {"reports": n_spec, "mean_acceptance_length": number(accept_len),
                        "draft_acceptance_rate_pct": number(accept_rate)},
    }
