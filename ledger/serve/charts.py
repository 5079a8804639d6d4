"""The charts, defined once: ``ledger serve`` puts them in its pages as inline SVG and ``ledger
plot`` writes them to PNG or SVG files.

matplotlib draws them (no pyplot: each chart is its own ``Figure``, so the server's threads do
not share state); the frames come from ``ledger.serve.data``.  Time is on the x axis, units are
on the y axes, outcomes are coloured (and shaped, for readers who do not see colour), missing
values are gaps, never zeros.  A long runtime log is resampled (pandas) to at most a few hundred
points per series, so a 10-hour run stays readable and the page light.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LedgerError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# colour and marker per boot outcome: the pages' CSS (--ready, --crashed, ...) uses the same
# colours; failed and crashed are both reds (as on the terminal), told apart by a darker shade
# and the marker
OUTCOME_STYLE = {
    "ready": ("#2a9d4b", "o"),
    "crashed": ("#8b1a1a", "X"),
    "failed": ("#d62728", "v"),
    "incomplete": ("#8c8c8c", "s"),
}
GIB = 2**30
BOOT_PANELS = [  # (column, panel title, unit on the axis, divisor)
    ("kv_tokens", "KV cache size", "tokens", 1),
    ("concurrency", "maximum concurrency at max_model_len", "×", 1),
    ("kv_memory", "KV cache memory (reserved, else available)", "GiB", GIB),
    ("weights", "model weights", "GiB", GIB),
    ("graph_memory", "CUDA graph memory", "GiB", GIB),
]
# resampling bins, smallest first; a bin is at least the span / MAX_POINTS and 1.5 sampling intervals
BINS = ["10s", "15s", "30s", "1min", "2min", "5min", "10min", "15min", "30min", "1h", "2h", "6h", "12h", "1D"]
MAX_POINTS = 400


def _mpl() -> None:
    try:
        import matplotlib
    except ImportError:
        raise LedgerError("charts need matplotlib: pip install 'vllm-ledger[plot]' (or [serve])") from None
    # SVG text as <text> elements: smaller files, text the browser can find and select
    matplotlib.rcParams["svg.fonttype"] = "none"


def _figure(panels: int, width: float = 10.0) -> tuple[Figure, list[Any]]:
    _mpl()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, 1.9 * panels + 0.9), layout="constrained")
    axes = fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    return fig, list(axes)


def _time_axis(ax: Any) -> None:
    """Dates and times people read: ticks never a bare ``05`` of seconds (a short run's ticks
    say ``01:06:45``), and the offset names the day."""
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator(maxticks=10)
    ax.xaxis.set_major_locator(locator)
    clock = ["%Y", "%b %d", "%b %d", "%H:%M", "%H:%M", "%H:%M:%S"]
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(
        locator, formats=clock, zero_formats=["", "%Y", "%b %d", "%b %d", "%H:%M", "%H:%M:%S"],
        offset_formats=["", "%Y", "%Y-%m-%d", "%Y-%m-%d", "%Y-%m-%d", "%Y-%m-%d"]))


# -- boots over time (a deploy, the history) ----------------------------------------------------------


def boots_figure(frame: pd.DataFrame, title: str, link: Callable[[int], str] | None = None) -> Figure:
    """KV tokens, concurrency, KV memory, weights and graph memory of boots against their start
    time: a thin line per deploy and comparable group (broken where a figure is missing), a
    marker per boot coloured and shaped by outcome; ``link(boot)`` makes each marker a link (in
    SVG)."""
    timed = frame[frame["started"].notna()]
    untimed = len(frame) - len(timed)
    fig, axes = _figure(len(BOOT_PANELS))
    # a line joins the boots of one deploy and one comparable group only (model, KV dtype, TP,
    # block size, release: the group key): unrelated boots, or a boot whose group is not known,
    # stand alone
    grouped = timed[timed["group"].notna()] if "group" in timed else timed.iloc[0:0]
    series = list(dict.fromkeys(zip(grouped["deploy"], grouped["group"], strict=True)))
    for ax, (col, heading, unit, div) in zip(axes, BOOT_PANELS, strict=True):
        values = timed[col] / div
        for name, group in series:
            sel = (grouped["deploy"] == name) & (grouped["group"] == group)
            if sel.sum() < 2:
                continue
            ax.plot(grouped.loc[sel, "started"], values[sel.index[sel]], color="#9aa5b1", linewidth=1, zorder=1)
        for outcome, (colour, marker) in OUTCOME_STYLE.items():
            sel = (timed["outcome"] == outcome) & values.notna()
            if not sel.any():
                continue
            pts = ax.scatter(timed.loc[sel, "started"], values[sel], color=colour, marker=marker, s=36,
                             zorder=2, label=outcome, edgecolors="white", linewidths=0.5)
            if link is not None:
                pts.set_urls([link(int(b)) for b in timed.loc[sel, "boot"]])
        if values.notna().sum() == 0:
            ax.text(0.5, 0.5, "not printed by these boots", transform=ax.transAxes, ha="center",
                    va="center", color="#8c8c8c")
        _label(ax, heading, unit)
        ax.set_ylim(bottom=0)
    if timed.empty:
        axes[0].text(0.5, 0.5, "no boot has a start time", transform=axes[0].transAxes, ha="center")
    else:
        _time_axis(axes[-1])
        _pad_x(axes[-1], timed["started"])
    handles = [_outcome_handle(o) for o in OUTCOME_STYLE if (frame["outcome"] == o).any()]
    if handles:
        axes[0].legend(handles=handles, loc="upper right", fontsize=8, ncols=len(handles), frameon=False,
                       bbox_to_anchor=(0, 1.0, 1, 0.2), borderaxespad=0)
    axes[-1].set_xlabel("boot start (log time)")
    fig.suptitle(title + (f" ({untimed} without a start time not drawn)" if untimed else ""), fontsize=11)
    return fig


# -- a sweep (a deploy's boots by the knob that varies) -----------------------------------------------


def sweep_figure(obj: dict[str, Any], link: Callable[[int], str] | None = None) -> Figure:
    """``ledger sweep``'s report as a chart: the knob on x, KV tokens on y, a marker per boot
    coloured and shaped by outcome (came up, crashed later, or not), the capacity contract (max_num_seqs x
    max_model_len of each boot) as a dashed line, and the frontier in the title."""
    from ..render.sweep import frontier_text

    fig, (ax,) = _figure(1, width=10.0)
    rows = [r for r in obj["rows"] if isinstance(r["value"], (int, float)) and not isinstance(r["value"], bool)]
    div = GIB if obj["knob"].endswith("_bytes") else 1
    contract = sorted((r["value"] / div, r["contract_tokens"]) for r in rows if r["contract_tokens"] is not None)
    if contract:
        ax.plot([x for x, _ in contract], [y for _, y in contract], linestyle="--", color="#4c6ef5", linewidth=1,
                zorder=1, label="capacity contract (seqs x max-model-len)")
    for outcome, (colour, marker) in OUTCOME_STYLE.items():
        sel = [r for r in rows if r["outcome"] == outcome and r["kv_tokens"] is not None]
        if not sel:
            continue
        label = outcome + {"ready": "", "crashed": " (passed boot, crashed at runtime)"}.get(outcome, " (did not come up)")
        pts = ax.scatter([r["value"] / div for r in sel], [r["kv_tokens"] for r in sel], color=colour, marker=marker,
                         s=44, zorder=2, label=label, edgecolors="white", linewidths=0.5)
        if link is not None:
            pts.set_urls([link(int(r["boot"])) for r in sel])
    if not rows:
        ax.text(0.5, 0.5, f"no boot prints a numeric {obj['knob']}", transform=ax.transAxes, ha="center")
    from matplotlib.ticker import FuncFormatter

    f = obj["frontier"]
    for key, colour in (("largest_passing", OUTCOME_STYLE["ready"][0]), ("smallest_failing", OUTCOME_STYLE["failed"][0])):
        if isinstance(f.get(key), (int, float)) and not isinstance(f.get(key), bool):
            ax.axvline(f[key] / div, color=colour, linestyle=":", linewidth=1, zorder=0)
    _label(ax, f"KV cache size by {obj['knob']} (dotted: the frontier)", "tokens")
    ax.set_xlabel(obj["knob"] + (" (GiB)" if div != 1 else ""))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}" if abs(v) >= 1000 else f"{v:g}"))
    ax.margins(x=0.05, y=0.15)
    ax.legend(loc="best", fontsize=8, frameon=False)
    fig.suptitle(frontier_text(obj), fontsize=10)
    return fig


def _label(ax: Any, title: str, unit: str) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.set_title(title, loc="left", fontsize=9)
    ax.set_ylabel(unit, fontsize=9)
    # 1,356,080 rather than 1.36 with "1e6" in the corner
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}" if abs(v) >= 1000 else f"{v:g}"))


def _outcome_handle(outcome: str) -> Any:
    from matplotlib.lines import Line2D

    colour, marker = OUTCOME_STYLE[outcome]
    return Line2D([], [], color=colour, marker=marker, linestyle="", label=outcome)


def _pad_x(ax: Any, times: pd.Series) -> None:
    """Room around one boot, or boots a few seconds apart, so markers are not on the frame."""
    import pandas as pd

    lo, hi = times.min(), times.max()
    pad = max((hi - lo) * 0.03, pd.Timedelta(minutes=5))
    ax.set_xlim(lo - pad, hi + pad)


# -- a boot's runtime ----------------------------------------------------------------------------------


def _step(times: pd.Series) -> float:
    """The usual seconds between two samples of one engine (its stats interval)."""
    steps = times.sort_values().diff().dt.total_seconds()
    return float(steps[steps > 0].median()) if (steps > 0).any() else 10.0


def _bin(span: float, step: float) -> str | None:
    """None when every sample can be drawn (at most MAX_POINTS); else the smallest bin that
    keeps a series under MAX_POINTS and holds at least one sample of a steady stream (1.5
    intervals), so a gap drawn is a gap in the log."""
    import pandas as pd

    if span / step <= MAX_POINTS:
        return None
    need = max(span / MAX_POINTS, step * 1.5)
    for b in BINS:
        if pd.Timedelta(b).total_seconds() >= need:
            return b
    return BINS[-1]


def _with_gaps(series: pd.Series, step: float) -> pd.Series:
    """A NaN after each sample followed by a silence of more than 2.5 intervals: the line breaks."""
    import pandas as pd

    if len(series) < 2:
        return series
    gaps = series.index.to_series().diff().dt.total_seconds() > 2.5 * step
    if not gaps.any():
        return series
    breaks = pd.Series(float("nan"), index=series.index[gaps] - pd.Timedelta(seconds=step))
    return pd.concat([series, breaks]).sort_index()


def runtime_series(frame: pd.DataFrame, split: bool = False) -> tuple[dict[str, Any], str, str]:
    """The runtime series to draw: ``{series: {line label: Series}}``, the x label and how the
    values were aggregated.  Engines are summed (KV usage: averaged) unless split; a run longer
    than MAX_POINTS intervals is resampled to bins of mean values."""
    import pandas as pd

    stats = frame[frame["kind"] == "engine_stats"].copy()
    spec = frame[frame["kind"] == "spec_decode"].copy()
    timed = not stats.empty and bool(stats["at"].notna().all())
    stats["engine"] = stats["engine"].fillna(0).astype(int)
    engines = sorted(stats["engine"].unique())
    if timed and "bin" in frame.attrs:  # averaged per bin by the database (data.runtime_frame)
        step, size = frame.attrs["step"], frame.attrs["bin"]
    elif timed:
        first = stats[stats["engine"] == engines[0]]["at"]
        step = _step(first)
        size = _bin((first.max() - first.min()).total_seconds(), step)
    if timed:
        xlabel, how = "log time", f"mean per {size}" if size else "every stats interval"
        # engines print their intervals within a second or two of each other: a round of
        # intervals is the interval they fall in
        stats["x"] = stats["at"].dt.floor(size or f"{max(int(step), 1)}s")
        spec["x"] = spec["at"].dt.floor(size or f"{max(int(step), 1)}s") if spec["at"].notna().all() else pd.NaT
    else:
        step, size = 1.0, None
        xlabel, how = "log line (the log prints no times)", "as logged"
        stats["x"], spec["x"] = stats["line"], spec["line"]

    def series_of(rows: pd.DataFrame, col: str) -> pd.Series:
        if col == "generation_throughput_tps":
            # decode speed is a figure of intervals that decoded: an idle interval prints 0 t/s,
            # and averaging it in drew a bin far under the median the report states
            rows = rows[rows["running_reqs"].fillna(0) > 0]
        values = rows.groupby("x")[col].mean()
        if size:
            return values.resample(size).mean()  # an empty bin is a NaN: a gap
        return _with_gaps(values, step) if timed else values

    out: dict[str, dict[str, pd.Series]] = {}
    for col in ("generation_throughput_tps", "prompt_throughput_tps", "gpu_kv_cache_usage_pct",
                "running_reqs", "waiting_reqs"):
        parts = {f"engine {e}": series_of(stats[stats["engine"] == e], col) for e in engines}
        if split or len(parts) <= 1:
            out[col] = parts
        else:
            joined = pd.concat(parts, axis=1)
            # a bin where no engine printed stays a gap; KV usage is a share, so engines average
            total = joined.mean(axis=1) if col == "gpu_kv_cache_usage_pct" else joined.sum(axis=1, min_count=1)
            out[col] = {"all engines": total}
    if not spec.empty and spec["x"].notna().all():
        out["spec_mean_acceptance_length"] = {"": series_of(spec, "spec_mean_acceptance_length")}
    return out, xlabel, how


def runtime_figure(frame: pd.DataFrame, report: dict[str, Any], split: bool = False) -> Figure:
    """Decode and prompt throughput (separate axes), GPU KV usage, running/waiting requests and
    speculative acceptance against log time, the crash marked."""
    if (frame["kind"] == "engine_stats").sum() == 0:
        raise LedgerError(f"boot {report['boot']}: no stats intervals to plot")
    series, xlabel, how = runtime_series(frame, split)
    summed = not split and any("all engines" in s for s in series.values())
    agg = ", sum of engines" if summed else ", per engine" if split else ""
    panels = [
        (["generation_throughput_tps"], f"decode throughput{agg} (intervals with running requests)", "tokens/s"),
        (["prompt_throughput_tps"], f"prompt throughput{agg}", "tokens/s"),
        (["gpu_kv_cache_usage_pct"], "GPU KV cache usage" + (", mean of engines" if summed else agg), "%"),
        (["running_reqs", "waiting_reqs"], f"requests: running (solid), waiting (dashed){agg}", "requests"),
    ]
    if "spec_mean_acceptance_length" in series:
        panels.append((["spec_mean_acceptance_length"], "speculative decoding: mean acceptance length", "tokens"))
    fig, axes = _figure(len(panels))
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
    for ax, (cols, heading, unit) in zip(axes, panels, strict=True):
        for col in cols:
            for i, (name, s) in enumerate(series[col].items()):
                ax.plot(s.index, s.values, color=palette[i % len(palette)], linewidth=1.1,
                        linestyle="--" if col == "waiting_reqs" else "-",
                        marker="o" if s.notna().sum() <= 60 else None, markersize=3,
                        label=name if col == cols[0] and name else None)
        _label(ax, heading, unit)
        ax.set_ylim(bottom=0)
        if ax is axes[0] and len(series[cols[0]]) > 1:
            ax.legend(fontsize=8, loc="upper right", ncols=min(8, len(series[cols[0]])), frameon=False,
                      bbox_to_anchor=(0, 1.0, 1, 0.2), borderaxespad=0)
    timed = xlabel == "log time"
    if timed:
        _time_axis(axes[-1])
        start = frame["at"].min()
        xlabel = f"{xlabel} from {start:%Y-%m-%d %H:%M:%S}"
    axes[-1].set_xlabel(f"{xlabel} ({how})")
    _mark_crash(axes, report, timed)
    fig.suptitle(f"boot {report['boot']} — {report['deploy']} — {report['outcome']}", fontsize=11)
    return fig


def _mark_crash(axes: list[Any], report: dict[str, Any], timed: bool) -> None:
    ended = report.get("ended") or {}
    if ended.get("how") != "crashed":
        return
    import pandas as pd

    if timed:
        at = pd.to_datetime(ended.get("logged_at"), errors="coerce")
        if pd.isna(at):
            return
    else:
        at = ended.get("line")
    for ax in axes:
        ax.axvline(at, color=OUTCOME_STYLE["crashed"][0], linestyle="--", linewidth=1.2)
    axes[0].annotate(f"crashed: {', '.join(ended.get('kinds', []))}", xy=(at, 1), xycoords=("data", "axes fraction"),
                     xytext=(-4, -2), textcoords="offset points", ha="right", va="top",
                     color=OUTCOME_STYLE["crashed"][0], fontsize=8)


# -- output ----------------------------------------------------------------------------------------------


def svg(fig: Figure) -> str:
    """The chart as an ``<svg>`` element for a page (no XML prologue)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def save(fig: Figure, out: Path) -> Path:
    """Write the chart as PNG or SVG (by the file's suffix); one line if that cannot be done."""
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise LedgerError(f"{out}: write .png or .svg")
    try:
        fig.savefig(out, format=fmt, dpi=100)
    except OSError as exc:
        raise LedgerError(f"{out}: cannot write: {exc.strerror or exc}") from None
    return out
