"""Decode speed against a control: ``ledger check --against CONTROL`` and the decode line of
``ledger note``.

A boot's decode figure is the median generation throughput over the stats intervals that had
running requests (``runtime_sample``; idle intervals print 0.0 and say nothing of speed), else
a grammar pack's live decode probe (``decode_probe_tps``), named as such.  The comparison states
its noise: within a boot, the standard error of that median; between boots, the spread of the
control deploy's own ready boots where it has two or more with a figure, else club-3090's
measurement (about 2.8 % across boots of one config; about 0.2 % within one).  A drop beyond
the bound is ``slower`` (a failing verdict: ``check`` exits 1); no figure on either side is
``insufficient``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from .db.connect import Ledger
from .db.reader import Reader, get_deploy
from .errors import LedgerError
from .queries import deploy_name, pick_boot, resolve_side

BOOT_TO_BOOT_PRIOR_PCT = 2.8  # club-3090: decode medians across boots of one config
WITHIN_BOOT_PRIOR_PCT = 0.2  # club-3090: within one boot
DEFAULT_MAX_DROP_PCT = 3.0


def parse_percent(text: str) -> float:
    """``3%``, ``3`` or ``2.5 %`` -> 3.0 / 2.5: a bound in percent (non-negative, finite)."""
    t = text.strip().removesuffix("%").strip()
    try:
        value = float(t)
    except ValueError:
        raise LedgerError(f"{text}: not a percentage (e.g. 3% or 2.5)") from None
    if not math.isfinite(value) or value < 0 or value >= 100:
        raise LedgerError(f"{text}: a decode drop bound is between 0% and 100%")
    return value


def decode_figure(ledger: Ledger, boot_id: int) -> dict[str, Any]:
    """A boot's decode median (t/s), how many intervals it is over, its within-boot noise in
    percent, and where it came from (None figures when the boot printed none)."""
    with ledger.reading() as s:
        rows = s.tuples("SELECT generation_throughput_tps, running_reqs FROM runtime_sample "
                        "WHERE boot_id = :b AND kind = 'engine_stats'", {"b": boot_id})
        probe_line = s.one("SELECT line, value FROM fact WHERE boot_id = :b AND name = 'decode_probe_tps' "
                           "ORDER BY line LIMIT 1", {"b": boot_id})
    busy = [r[0] for r in rows if r[0] is not None and (r[1] or 0) > 0]
    if busy:
        import statistics  # here: ``check`` and ``sweep`` read boots without stats intervals without it

        median = statistics.median(busy)
        noise = None
        if len(busy) >= 2 and median > 0:  # the standard error of a median: 1.2533 sigma / sqrt(n)
            noise = 1.2533 * statistics.stdev(busy) / math.sqrt(len(busy)) / median * 100
        return {"boot": boot_id, "median_tps": median, "intervals": len(busy), "stats_intervals": len(rows),
                "within_boot_noise_pct": noise, "source": "stats intervals with running requests", "line": None}
    if probe_line is not None:
        return {"boot": boot_id, "median_tps": probe_line[1], "intervals": 0, "stats_intervals": len(rows),
                "within_boot_noise_pct": None, "source": "decode probe (grammar pack)", "line": probe_line[0]}
    return {"boot": boot_id, "median_tps": None, "intervals": 0, "stats_intervals": len(rows),
            "within_boot_noise_pct": None, "source": None, "line": None}


@dataclass
class DecodeComparison:
    boot: dict[str, Any]
    control: dict[str, Any]
    control_deploy: str
    change_pct: float | None
    max_drop_pct: float
    boot_to_boot_noise_pct: float
    noise_from: str
    verdict: str  # ok | slower | insufficient
    detail: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# the control's latest ready boots the boot-to-boot spread is measured over: each costs a read
# of its stats intervals, and a deploy of 100,000 boots made `note --against` take 44 s
NOISE_BOOTS = 20


def _ready_boots(s: Reader, deploy_id: int) -> int:
    """How many ready boots a deploy has (said as "of N"): its boots, counted in its index
    alone, less those not ready, found by the outcome index (``+deploy_id`` keeps SQLite off
    the deploy's index there), so only the ledger's boots that are not ready have their rows
    read.  ``deploy_id = :d AND outcome = 'ready'`` read the row of every boot of the deploy:
    0.04 s (cached) to 0.3 s for a deploy of 10^5 boots."""
    boots = s.scalar("SELECT COUNT(*) FROM boot WHERE deploy_id = :d", {"d": deploy_id})
    others = s.scalar("SELECT COUNT(*) FROM boot WHERE +deploy_id = :d AND (outcome < 'ready' OR outcome > 'ready')",
                      {"d": deploy_id})
    return int(boots) - int(others)


def _boot_to_boot(ledger: Ledger, deploy_id: int) -> tuple[float, str]:
    """The spread of the control deploy's latest ready boots' decode medians (their relative
    standard deviation, in percent) where two or more have one; else the prior."""
    with ledger.reading() as s:
        ids = s.scalars("SELECT id FROM boot WHERE deploy_id = :d AND outcome = 'ready' ORDER BY id DESC "
                        f"LIMIT {NOISE_BOOTS}", {"d": deploy_id})
        ready = len(ids) if len(ids) < NOISE_BOOTS else _ready_boots(s, deploy_id)
    medians = [f["median_tps"] for f in (decode_figure(ledger, i) for i in reversed(ids))
               if f["median_tps"] and f["source"] == "stats intervals with running requests"]
    if len(medians) >= 2:
        import statistics

        over = (f"the control's {len(medians)} ready boots" if (ready or 0) <= NOISE_BOOTS
                else f"the control's {len(medians)} latest ready boots (of {ready})")
        return statistics.stdev(medians) / statistics.fmean(medians) * 100, f"measured over {over}"
    return BOOT_TO_BOOT_PRIOR_PCT, "club-3090's measurement across boots of one config (the control has one boot)"


def compare_decode(ledger: Ledger, boot_id: int, control_ref: str,
                   max_drop_pct: float = DEFAULT_MAX_DROP_PCT) -> DecodeComparison:
    """``boot_id``'s decode median against the control deploy's latest ready boot's."""
    with ledger.reading() as s:
        control_boot, _ = resolve_side(s, control_ref, "ready")
        control_id, control_deploy_id = control_boot.id, control_boot.deploy_id
        control_name = deploy_name(control_boot.deploy)
    a, c = decode_figure(ledger, boot_id), decode_figure(ledger, control_id)
    noise, noise_from = _boot_to_boot(ledger, control_deploy_id)
    if a["median_tps"] is None or not c["median_tps"]:
        missing = [f"boot {x['boot']}" for x in (a, c) if not x["median_tps"]]
        return DecodeComparison(a, c, control_name, None, max_drop_pct, noise, noise_from, "insufficient",
                                f"no decode figure for {' and '.join(missing)} (no stats interval with running "
                                "requests, no decode probe)")
    change = (a["median_tps"] - c["median_tps"]) / c["median_tps"] * 100
    verdict = "slower" if -change > max_drop_pct else "ok"
    detail = (f"decode {a['median_tps']:.1f} t/s vs {c['median_tps']:.1f} ({change:+.1f} %), bound -{max_drop_pct:g} %: "
              f"boot {boot_id} ({_over(a)}) against control {control_name}, boot {control_id} ({_over(c)}); "
              f"noise ~{noise:.1f} % boot to boot ({noise_from})"
              + "".join(f", {x['within_boot_noise_pct']:.2f} % within boot {x['boot']}" for x in (a, c)
                        if x["within_boot_noise_pct"] is not None))
    if max_drop_pct < noise:
        detail += "; the bound is inside the boot-to-boot noise"
    return DecodeComparison(a, c, control_name, change, max_drop_pct, noise, noise_from, verdict, detail)


def _over(f: dict[str, Any]) -> str:
    if f["source"] == "stats intervals with running requests":
        return f"median of {f['intervals']} busy intervals"
    return f"{f['source']}, line {f['line']}"


def latest_ready(ledger: Ledger, deploy_id: int) -> int | None:
    """The deploy's latest ready boot (its latest boot when none is ready)."""
    with ledger.reading() as s:
        d = get_deploy(s, deploy_id)
        if d is None:
            return None
        try:
            return pick_boot(s, d, "ready")[0].id
        except LedgerError:
            return None


def add_decode_checks(ledger: Ledger, results: list[Any], control_ref: str, max_drop_pct: float) -> None:
    """``ledger check --against``: a ``decode vs control`` line for each deploy's check — its
    latest ready boot against the control's (the control itself: ``reference``)."""
    from .verdicts import CheckLine

    with ledger.reading() as s:
        control_boot, _ = resolve_side(s, control_ref, "ready")
        control_deploy = control_boot.deploy_id
        deploy_of = {r.boot: s.scalar("SELECT deploy_id FROM boot WHERE id = :b", {"b": r.boot}) for r in results}
    for r in results:
        did = deploy_of[r.boot]
        if did == control_deploy:
            r.lines.append(CheckLine("decode vs control", "reference", "the control itself"))
            continue
        bid = latest_ready(ledger, did)
        if bid is None:
            r.lines.append(CheckLine("decode vs control", "insufficient", "no boot to compare"))
            continue
        c = compare_decode(ledger, bid, control_ref, max_drop_pct)
        r.lines.append(CheckLine("decode vs control", c.verdict, c.detail))
