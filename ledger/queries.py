"""Reading the ledger back: boot references, history rows, one boot's evidence, the export.

The export objects are a contract (documented in the README): scripts rely on their keys.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session, selectinload

from parsers.units import MAX_FIGURE, format_bytes
from parsers.vocabulary import F, summarize

from .db import models as m
from .db.connect import Ledger
from .errors import LedgerError
from .verdicts import check_lines_for_boot, verdicts

INTEGER_UNITS = {"bytes", "tokens", "blocks", "slots"}  # counted, so exported (and diffed) as integers


def export_value(value: float | None, unit: str) -> float | int | None:
    if value is None:
        return None
    if unit in INTEGER_UNITS and float(value).is_integer():
        return int(value)
    return value


# -- references ---------------------------------------------------------------------------------


def resolve_boot(session: Session, ref: str) -> m.Boot:
    """A boot id, or a deploy (commit or digest prefix, or label) meaning its latest boot."""
    ref = ref.strip()
    if ref.isdigit() and int(ref) <= MAX_FIGURE:  # a longer number is no id (nor a database integer)
        boot = session.get(m.Boot, int(ref))
        if boot is not None:
            return boot
    deploys = resolve_deploys(session, ref)
    if not deploys:
        raise LedgerError(f"{ref}: no boot or deploy by that id, commit, digest or label")
    if len(deploys) > 1:
        names = ", ".join(deploy_name(d) for d in deploys[:5])
        raise LedgerError(f"{ref}: names more than one deploy ({names}); give more of it")
    boot = latest_boot(session, deploys[0].id)
    if boot is None:
        raise LedgerError(f"{ref}: that deploy has no boots")
    return boot


def resolve_deploys(session: Session, ref: str) -> list[m.Deploy]:
    ref = ref.strip()
    if not ref:
        return []
    digest = ref if ref.startswith("sha256:") else f"sha256:{ref}"
    q = select(m.Deploy).where(
        or_(
            m.Deploy.label == ref,
            m.Deploy.commit_sha.startswith(ref, autoescape=True) if len(ref) >= 4 else False,
            m.Deploy.image_digest.startswith(digest, autoescape=True) if len(ref) >= 4 else False,
        )
    )
    found = list(session.execute(q).scalars())
    exact = [d for d in found if d.label == ref]
    return exact or found


def deploys_named(session: Session, ref: str) -> list[m.Deploy]:
    """``resolve_deploys``, or the error that no deploy goes by ``ref``."""
    deploys = resolve_deploys(session, ref)
    if not deploys:
        raise LedgerError(f"{ref}: no deploy by that commit, digest or label")
    return deploys


def latest_boot(session: Session, deploy_id: int) -> m.Boot | None:
    return session.execute(
        select(m.Boot).where(m.Boot.deploy_id == deploy_id)
        .order_by(m.Boot.started_at.desc().nulls_last(), m.Boot.id.desc()).limit(1)
    ).scalar_one_or_none()


def deploy_name(d: m.Deploy) -> str:
    parts = []
    if d.label:
        parts.append(d.label)
    if d.commit_sha:
        parts.append(d.commit_sha[:10] + ("+dirty" if d.dirty else ""))
    if d.image_digest:
        parts.append(d.image_digest.removeprefix("sha256:")[:12])
    return " / ".join(parts) or "(unnamed)"


# -- summaries ----------------------------------------------------------------------------------


def boot_summaries(session: Session, boot_ids: list[int]) -> dict[int, dict[str, m.Fact]]:
    """Per boot, the one reported fact per name (facts.md summary rule: min capacity, max cost)."""
    by_boot: dict[int, dict[str, list[m.Fact]]] = defaultdict(lambda: defaultdict(list))
    for chunk in _chunks(boot_ids, 500):
        for f in session.execute(select(m.Fact).where(m.Fact.boot_id.in_(chunk))).scalars():
            by_boot[f.boot_id][f.name].append(f)
    return {bid: {name: summarize(name, facts) for name, facts in names.items()}
            for bid, names in by_boot.items()}


def _chunks(items: list[int], n: int):
    for i in range(0, len(items), n):
        yield items[i : i + n]


HISTORY_COLUMNS = ["boot", "started", "deploy", "engine", "outcome", "kv_tokens", "concurrency",
                   "kv_memory", "weights", "kv_check", "contract", "source"]


def history(ledger: Ledger, deploy: str | None = None, outcome: str | None = None,
            since: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    with ledger.Session() as s:
        q = select(m.Boot).options(selectinload(m.Boot.deploy))
        if deploy:
            deploys = deploys_named(s, deploy)
            q = q.where(m.Boot.deploy_id.in_([d.id for d in deploys]))
        if outcome:
            q = q.where(m.Boot.outcome == outcome)
        if since:
            q = q.where(m.Boot.started_at >= since)
        q = q.order_by(m.Boot.started_at.desc().nulls_last(), m.Boot.id.desc())
        if limit:
            q = q.limit(limit)
        boots = list(s.execute(q).scalars())
        sums = boot_summaries(s, [b.id for b in boots])
        checks = verdicts(ledger, [b.id for b in boots])
        rows = []
        for b in boots:
            fs = sums.get(b.id, {})
            kv_mem = fs.get(F.kv_cache_reserved_bytes) or fs.get(F.available_kv_cache_bytes)
            rows.append({
                "boot": b.id,
                "started": (b.started_at or "") + ("*" if b.started_at and b.year_inferred else ""),
                "deploy": deploy_name(b.deploy),
                "engine": b.engine_version or "",
                "outcome": b.outcome,
                "kv_tokens": _v(fs.get(F.kv_cache_tokens)),
                "concurrency": _v(fs.get(F.max_concurrency)),
                "kv_memory": _v(kv_mem),
                "weights": _v(fs.get(F.model_weights_bytes)),
                "kv_check": checks[b.id].get("kv"),
                "contract": checks[b.id].get("capacity"),
                "source": f"{b.source_path}:{b.first_line}-{b.last_line}",
            })
        return rows


def _v(fact: m.Fact | None) -> float | int | None:
    return export_value(fact.value, fact.unit) if fact is not None else None


def humanize_history(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bytes as GiB and thousands separators, for the terminal table."""
    out = []
    for r in rows:
        h = dict(r)
        for col in ("kv_memory", "weights"):
            h[col] = format_bytes(r[col]) if r[col] is not None else ""
        h["kv_tokens"] = f"{r['kv_tokens']:,}" if r["kv_tokens"] is not None else ""
        h["concurrency"] = f"{r['concurrency']:.2f}x" if r["concurrency"] is not None else ""
        out.append(h)
    return out


# -- one boot -------------------------------------------------------------------------------------


def _load(session: Session, boot_ids: list[int] | None) -> list[m.Boot]:
    q = select(m.Boot).options(selectinload(m.Boot.deploy), selectinload(m.Boot.facts),
                               selectinload(m.Boot.failures), selectinload(m.Boot.shape))
    if boot_ids is not None:
        q = q.where(m.Boot.id.in_(boot_ids))
    q = q.order_by(m.Boot.started_at.asc().nulls_first(), m.Boot.id.asc())
    return list(session.execute(q).scalars())


def runtime_counts(session: Session, boot_ids: list[int]) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = defaultdict(lambda: {"engine_stats": 0, "spec_decode": 0})
    for chunk in _chunks(boot_ids, 500):
        q = (select(m.RuntimeSample.boot_id, m.RuntimeSample.kind, func.count())
             .where(m.RuntimeSample.boot_id.in_(chunk))
             .group_by(m.RuntimeSample.boot_id, m.RuntimeSample.kind))
        for bid, kind, n in session.execute(q):
            counts[bid][kind] = n
    return counts


def export_boot(b: m.Boot, counts: dict[str, int]) -> dict[str, Any]:
    return {
        "boot": str(b.id),
        "source": {"path": b.source_path, "sha256": b.source_sha256, "first_line": b.first_line,
                   "last_line": b.last_line},
        "deploy": {"commit": b.deploy.commit_sha, "image_digest": b.deploy.image_digest,
                   "label": b.deploy.label},
        "engine": {"name": b.engine_name, "version": b.engine_version, "commit": b.engine_commit},
        "outcome": b.outcome,
        "started_at": b.started_at,
        "shape": {s.key: json.loads(s.value) for s in b.shape},
        "facts": [
            {"name": f.name, "value": export_value(f.value, f.unit), "unit": f.unit,
             "precision": f.precision, "rank": f.rank, "line": f.line, "text": f.text,
             "process": f.process, "pack": f.pack}
            for f in b.facts
        ],
        "failures": [
            {"kind": f.kind, "phase": f.phase, "line": f.line, "text": f.text, "rank": f.rank,
             **json.loads(f.figures)}
            for f in b.failures
        ],
        "runtime": {"engine_stats": counts.get("engine_stats", 0), "spec_decode": counts.get("spec_decode", 0)},
    }


def export(ledger: Ledger, refs: list[str] | None = None) -> list[dict[str, Any]]:
    """Export objects, oldest boot first; ``refs`` as for ``resolve_boot`` (all boots if empty)."""
    with ledger.Session() as s:
        ids = None
        if refs:
            ids = [resolve_boot(s, r).id for r in refs]
        boots = _load(s, ids)
        counts = runtime_counts(s, [b.id for b in boots])
        return [export_boot(b, counts[b.id]) for b in boots]


def show(ledger: Ledger, ref: str) -> dict[str, Any]:
    with ledger.Session() as s:
        bid = resolve_boot(s, ref).id
        b = _load(s, [bid])[0]
        obj = export_boot(b, runtime_counts(s, [bid])[bid])
        obj["shape_sources"] = {sh.key: sh.source for sh in b.shape}
        obj["summary"] = {name: _v(f) for name, f in boot_summaries(s, [bid]).get(bid, {}).items()}
        obj["access_lines"] = b.access_lines
        obj["request_lines"] = b.request_lines
    obj["checks"] = check_lines_for_boot(ledger, bid)
    return obj
