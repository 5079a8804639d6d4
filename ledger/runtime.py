"""What a served boot did: decode speed, KV usage, prefix hits, speculative acceptance, requests,
uptime and how it ended (``ledger runtime``), and the charts of ``ledger plot``.

Figures are read from the ``runtime_sample`` table; nothing here parses logs.  matplotlib is
imported only by the plotting functions.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from pathlib import Path
from typing import Any

from sqlalchemy import select

from .db import models as m
from .db.connect import Ledger
from .errors import LedgerError
from .queries import boot_summaries, deploy_name, deploys_named, resolve_boot


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
        bid = boot.id
        access, requests = boot.access_lines, boot.request_lines
    busy = [r[0] for r in stats if r[0] is not None and (r[1] or 0) > 0]
    kv = [r[2] for r in stats if r[2] is not None]
    hits = [r[3] for r in stats if r[3] is not None]
    engines = sorted({r[4] for r in stats if r[4] is not None})
    accept_len = [r[0] for r in spec if r[0] is not None]
    accept_rate = [r[1] for r in spec if r[1] is not None]
    at_runtime = [f for f in failures if f.phase == "runtime"]
    crash = at_runtime[0] if at_runtime else None
    # the figures of the first runtime failure that printed any (an OOM behind "WorkerProc hit an exception")
    figured = next((f for f in at_runtime if json.loads(f.figures)), crash)
    end_at = crash.logged_at if crash and crash.logged_at else ended_at
    return {
        "boot": bid,
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
        "ready_at": ready_at,
        "ended_at": end_at,
        "uptime_seconds": _seconds_between(ready_at, end_at),
        "ended": ({"how": "crashed", "kinds": [f.kind for f in at_runtime], "line": crash.line,
                   "logged_at": crash.logged_at, "seconds_after_ready": _seconds_between(ready_at, crash.logged_at),
                   "figures": json.loads(figured.figures) if figured else {}} if crash else
                  {"how": {"ready": "still serving when the log ends", "failed": "never came up",
                           "incomplete": "the log ends before start-up completed"}.get(outcome, outcome)}),
    }


def render_runtime(r: dict[str, Any]) -> str:
    from .output import figures_text

    def f(v: Any, fmt: str = "{:.1f}") -> str:
        return "—" if v is None else fmt.format(v)

    d = r["decode_tps"]
    sp = r["spec_decode"]
    up = r["uptime_seconds"]
    lines = [
        f"boot {r['boot']} — {r['deploy']} — {r['outcome']}",
        f"  decode t/s     median {f(d['median'])}  p10 {f(d['p10'])}  p90 {f(d['p90'])}  max {f(d['max'])}"
        f"  over {d['intervals_with_running_requests']} of {r['stats_intervals']} stats intervals with running "
        f"requests (engines {', '.join(map(str, r['engines'])) or '—'})",
        f"  KV usage       peak {f(r['peak_gpu_kv_cache_usage_pct'])}%",
        f"  prefix hits    mean {f(r['prefix_cache_hit_rate_pct']['mean'])}%  last "
        f"{f(r['prefix_cache_hit_rate_pct']['last'])}%",
        f"  spec decode    {sp['reports']} reports, mean acceptance length {f(sp['mean_acceptance_length'], '{:.2f}')}, "
        f"draft acceptance {f(sp['draft_acceptance_rate_pct'])}%",
        f"  requests       {r['requests']['access_lines']:,} access lines, {r['requests']['request_lines']:,} request lines",
        f"  uptime         {'—' if up is None else str(dt.timedelta(seconds=int(up)))} "
        f"(ready {r['ready_at'] or '—'}, end {r['ended_at'] or '—'})",
    ]
    e = r["ended"]
    if e["how"] == "crashed":
        shown = figures_text(e["figures"])
        after = e["seconds_after_ready"]
        lines.append(f"  ended          crashed: {', '.join(e['kinds'])} from line {e['line']}"
                     + (f", {dt.timedelta(seconds=int(after))} after ready" if after is not None else "")
                     + (f" ({shown})" if shown else ""))
    else:
        lines.append(f"  ended          {e['how']}")
    return "\n".join(lines)


# -- charts ------------------------------------------------------------------------------------------


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise LedgerError("ledger plot needs matplotlib: pip install 'vllm-ledger[plot]'") from None
    return plt


def plot_runtime(ledger: Ledger, ref: str, out: Path) -> Path:
    """A boot's runtime series: decode and prompt throughput, KV usage, running/waiting."""
    plt = _pyplot()
    with ledger.Session() as s:
        boot = resolve_boot(s, ref)
        S = m.RuntimeSample.c
        rows = s.execute(select(S.line, S.engine, S.generation_throughput_tps, S.prompt_throughput_tps,
                                S.gpu_kv_cache_usage_pct, S.running_reqs, S.waiting_reqs)
                         .where(S.boot_id == boot.id, S.kind == "engine_stats").order_by(S.line)).all()
        title = f"boot {boot.id} — {deploy_name(boot.deploy)} — {boot.outcome}"
    if not rows:
        raise LedgerError(f"boot {ref}: no stats intervals to plot")
    fig, axes = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    engines = sorted({r[1] for r in rows}, key=lambda e: (e is None, e))
    for e in engines:
        sel = [r for r in rows if r[1] == e]
        x = [r[0] for r in sel]
        label = f"engine {e}" if e is not None else "engine"
        axes[0].plot(x, [r[2] for r in sel], label=f"{label} decode")
        axes[0].plot(x, [r[3] for r in sel], linestyle=":", label=f"{label} prompt")
        axes[1].plot(x, [r[4] for r in sel], label=label)
        axes[2].plot(x, [r[5] for r in sel], label=f"{label} running")
        axes[2].plot(x, [r[6] for r in sel], linestyle="--", label=f"{label} waiting")
    axes[0].set_ylabel("tokens/s")
    axes[1].set_ylabel("GPU KV cache %")
    axes[2].set_ylabel("requests")
    axes[2].set_xlabel("log line")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def plot_history(ledger: Ledger, deploy: str | None, out: Path) -> Path:
    """KV tokens, concurrency and median decode t/s of a deploy's boots (all boots if none named)."""
    plt = _pyplot()
    with ledger.Session() as s:
        q = select(m.Boot).order_by(m.Boot.started_at.asc().nulls_first(), m.Boot.id)
        if deploy:
            deploys = deploys_named(s, deploy)
            q = q.where(m.Boot.deploy_id.in_([d.id for d in deploys]))
        boots = list(s.execute(q).scalars())
        sums = boot_summaries(s, [b.id for b in boots])
        S = m.RuntimeSample.c
        decode: dict[int, float] = {}
        for b in boots:
            v = [r[0] for r in s.execute(select(S.generation_throughput_tps).where(
                S.boot_id == b.id, S.kind == "engine_stats", S.running_reqs > 0)).all() if r[0] is not None]
            if v:
                decode[b.id] = statistics.median(v)
    if not boots:
        raise LedgerError("no boots to plot")
    labels = [str(b.id) for b in boots]
    tokens = [sums.get(b.id, {}).get("kv_cache_tokens") for b in boots]
    conc = [sums.get(b.id, {}).get("max_concurrency") for b in boots]
    fig, axes = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    axes[0].bar(labels, [t.value if t else 0 for t in tokens], color="tab:blue")
    axes[0].set_ylabel("KV cache tokens")
    axes[1].bar(labels, [c.value if c else 0 for c in conc], color="tab:green")
    axes[1].set_ylabel("max concurrency (x)")
    axes[2].bar(labels, [decode.get(b.id, 0) for b in boots], color="tab:orange")
    axes[2].set_ylabel("median decode t/s")
    axes[2].set_xlabel("boot")
    for ax in axes:
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(f"history{' of ' + deploy if deploy else ''}: {len(boots)} boots")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
