"""``ledger note A [--against B]``: the paragraph a deploy commit's message carries, from the
ledger — how the boot ended (and any other boot of its shape that failed or crashed), what
changed in the shape, bytes per KV token per rank (exact or ± its printed precision, and where
it came from), the KV pool, KV tokens and concurrency, the capacity contract and its margin,
the ceilings and their margins, every verdict, decode against the other boot, and the boot ids
and source lines as evidence.

A note is a report object (``Note.to_json()``); ``ledger.render.note`` words it (text,
markdown, git trailers, JSON) and redacts it.  Changes read from ``--against`` (the boot before)
to A (the boot being committed), as the seeds write them: ``7.3125 -> 14.625 KiB``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .db.connect import Ledger
from .db.reader import get_boot
from .decode import DEFAULT_MAX_DROP_PCT, compare_decode, decode_figure
from .derived import boot_derived
from .kvformula import check_lines_for_boot
from .queries import boot_summaries, deploy_name, export_value, resolve_side
from .render import boot_id, iso
from .verdicts import shape_record, survival

# shape keys a note names for each side even when they did not change (the capacity contract's
# terms and what makes boots comparable)
KEY_SHAPE = ("model", "kv_cache_dtype", "tensor_parallel_size", "max_num_seqs", "max_model_len",
             "kv_cache_memory_bytes", "gpu_memory_utilization", "max_num_batched_tokens")
EVIDENCE_FACTS = ("kv_cache_tokens", "max_concurrency", "kv_cache_reserved_bytes", "available_kv_cache_bytes")


@dataclass
class Note:
    a: dict[str, Any]
    b: dict[str, Any] | None
    shape: list[dict[str, Any]] = field(default_factory=list)  # keys that differ (printed on both sides)
    one_sided: list[str] = field(default_factory=list)  # keys printed on one side only
    show_all: bool = False
    decode: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "shape": self.shape, "one_sided_keys": self.one_sided,
                "decode": self.decode}


def _message(number: int | None, text: str | None) -> str | None:
    if number is None or text is None:
        return None
    from ledger.parsers.lines import parse_line  # here: a boot without failures needs no line model

    return parse_line(number, text).message


def side(ledger: Ledger, bid: int, notice: str | None = None) -> dict[str, Any]:
    """One boot as a note tells it: who it is, its shape, the views' figures and verdicts, the
    lines they came from, its failures, its decode figure."""
    with ledger.reading() as s:
        b = get_boot(s, bid, shape=True, failures=True)
        assert b is not None
        shape = {sh.key: json.loads(sh.value) for sh in b.shape}
        shape_lines = {sh.key: sh.line for sh in b.shape}
        facts = boot_summaries(s, [bid]).get(bid, {})
        evidence = []
        if "kv_cache_memory_bytes" in shape:
            evidence.append({"what": "kv_cache_memory_bytes", "line": shape_lines["kv_cache_memory_bytes"],
                             "text": f"kv_cache_memory_bytes={shape['kv_cache_memory_bytes']} (the engine's arguments)"})
        for name in EVIDENCE_FACTS:
            f = facts.get(name)
            if f is not None:
                evidence.append({"what": name, "line": f.line, "text": _message(f.line, f.text)})
        failures = [{"kind": f.kind, "phase": f.phase, "line": f.line, "rank": f.rank,
                     "text": _message(f.line, f.text), **json.loads(f.figures)} for f in b.failures]
        conc = facts.get("max_concurrency")
        out: dict[str, Any] = {
            "boot": boot_id(b.id), "deploy": deploy_name(b.deploy), "outcome": b.outcome,
            "engine_version": b.engine_version, "started_at": iso(b.started_at),
            "source": {"path": b.source_path, "first_line": b.first_line, "last_line": b.last_line},
            "notice": notice,
            "shape": {k: shape[k] for k in KEY_SHAPE if k in shape},
            "concurrency": None if conc is None else {"value": export_value(conc.value, conc.unit),
                                                      "precision": conc.precision, "line": conc.line},
            "evidence": evidence,
            "failures": failures,
        }
        full_shape = shape
    derived = boot_derived(ledger, [bid])[bid]
    out["derived"] = derived
    # the budget line the figure came from, not the other budget lines the boot printed
    out["evidence"] = [e for e in out["evidence"]
                       if e["what"] in ("kv_cache_tokens", "max_concurrency", derived.get("kv_budget_source"))]
    out["verdicts"] = derived.pop("verdicts")
    out["checks"] = check_lines_for_boot(ledger, bid)
    out["survival"] = survival(ledger, [bid])[bid].to_json()
    # the other boots of its group at its max_num_seqs x max_model_len that failed or crashed
    record = shape_record(ledger, derived.get("group_key"), derived.get("max_num_seqs"), derived.get("max_model_len"),
                          exclude=bid)
    out["shape_failures"] = [f.to_json() for f in record.failures] if record else []
    out["decode"] = decode_figure(ledger, bid)
    out["_shape"] = full_shape
    return out


def note(ledger: Ledger, a_ref: str, b_ref: str | None = None, show_all: bool = False,
         max_decode_drop_pct: float = DEFAULT_MAX_DROP_PCT) -> Note:
    """The note for ``a_ref`` (a boot, or a deploy: its latest ready boot, ``D@latest`` for its
    latest), against ``b_ref`` when given."""
    with ledger.reading() as s:
        a_boot, a_notice = resolve_side(s, a_ref, "ready")
        a_id = a_boot.id
        b_id, b_notice = None, None
        if b_ref is not None:
            b_boot, b_notice = resolve_side(s, b_ref, "ready")
            b_id = b_boot.id
    a = side(ledger, a_id, a_notice)
    b = side(ledger, b_id, b_notice) if b_id is not None else None
    result = Note(a, b, show_all=show_all)
    sa = a.pop("_shape")
    if b is not None:
        sb = b.pop("_shape")
        for key in sorted(set(sa) | set(sb)):
            if key in sa and key in sb:
                if sa[key] != sb[key] or show_all:
                    result.shape.append({"key": key, "a": sa[key], "b": sb[key]})
            else:
                result.one_sided.append(key)
                if show_all:
                    result.shape.append({"key": key, "a": sa.get(key), "b": sb.get(key)})
        if b_id != a_id:
            result.decode = compare_decode(ledger, a_id, str(b_id), max_decode_drop_pct).to_json()
    return result
