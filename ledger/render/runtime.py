"""``ledger runtime``: what a served boot did (``ledger.runtime.runtime_report``'s object) in a
format: json as it is, for people a block of figures."""

from __future__ import annotations

import datetime as dt
from typing import Any

from .table import figures_text
from .values import document


def runtime_text(report: dict[str, Any], fmt: str) -> str:
    return document(report, fmt, render_runtime)


def render_runtime(r: dict[str, Any]) -> str:
    def f(v: Any, fmt: str = "{:.1f}") -> str:
        return "—" if v is None else fmt.format(v)

    d = r["decode_tps"]
    sp = r["spec_decode"]
    up = r["uptime_seconds"]
    lines = [f"boot {r['boot']} — {r['deploy']} — {r['outcome']}"]
    if r["stats_intervals"]:
        lines += [
            f"  decode t/s     median {f(d['median'])}  p10 {f(d['p10'])}  p90 {f(d['p90'])}  max {f(d['max'])}"
            f"  over {d['intervals_with_running_requests']} of {r['stats_intervals']} stats intervals with running "
            f"requests (engines {', '.join(map(str, r['engines'])) or '—'})",
            f"  KV usage       peak {f(r['peak_gpu_kv_cache_usage_pct'])}%",
            f"  prefix hits    mean {f(r['prefix_cache_hit_rate_pct']['mean'])}%  last "
            f"{f(r['prefix_cache_hit_rate_pct']['last'])}%",
        ]
    else:  # a boot-only log: nothing to take a median of
        lines.append("  stats          no stats intervals in this log (decode, KV usage and prefix hits are "
                     "read from them)")
    if sp["reports"]:
        lines.append(f"  spec decode    {sp['reports']} reports, mean acceptance length "
                     f"{f(sp['mean_acceptance_length'], '{:.2f}')}, draft acceptance {f(sp['draft_acceptance_rate_pct'])}%")
    else:
        lines.append("  spec decode    no spec-decode reports in this log")
    lines += [
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
    from .terminal import width
    from .wrap import wrap_labelled

    return "\n".join(wrap_labelled(lines, width()))
