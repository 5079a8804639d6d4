"""``ledger note`` in words: the paragraph (``text``), the same for a pull request
(``markdown``), git trailers (``trailers``: ``Name: value`` lines that ``git interpret-trailers
--parse`` reads; the names are documented in docs/notes.md) and ``json`` (the report object).
Every format is redacted unless ``redact=False`` (``--no-redact``).  Changes read from the
``--against`` boot (B) to the noted one (A): old -> new."""

from __future__ import annotations

import math
from typing import Any

from ledger.parsers.units import format_bytes

from . import json_text
from .redact import Redactor
from .survival import survival_brief, survival_text

NOTE_FORMATS = ("text", "markdown", "trailers", "json")


def decimals(precision: float | None, default: int = 2) -> int:
    """The digits after the point a figure was printed with, from its precision (half a unit
    of the last digit: 0.005 -> 2)."""
    if not precision or precision <= 0:
        return default
    return max(0, round(-math.log10(precision * 2)))


def num(v: Any, unit: str = "", places: int = 0, sign: bool = False) -> str:
    if v is None:
        return "—"
    text = f"{v:{'+' if sign else ''},.{places}f}"
    return f"{text} {unit}".rstrip() if unit else text


def mem(v: Any, sign: bool = False) -> str:
    if v is None:
        return "—"
    head = ("+" if sign and v > 0 else "-" if v < 0 else "") + format_bytes(abs(v))
    return f"{head} ({v:{'+' if sign else ''},.0f} B)"


def concurrency(side: dict[str, Any]) -> str:
    c = side["concurrency"]
    if c is None:
        return "—"
    return f"{c['value']:.{decimals(c['precision'])}f}x"


def bytes_per_token(d: dict[str, Any]) -> str:
    if d.get("bytes_per_token") is None:
        return "—"
    text = f"{d['bytes_per_token']:,.2f} B/token"
    if d.get("bytes_per_token_uncertainty"):
        text += f" ± {d['bytes_per_token_uncertainty']:,.2f}"
    return text


def _pair(a: str, b: str | None) -> str:
    """``B -> A`` (old -> new), or A alone."""
    return a if b is None or a == b else f"{b} -> {a}"


def contract(d: dict[str, Any]) -> str:
    if d.get("contract_tokens") is None:
        return "needs KV tokens, max_num_seqs and max_model_len"
    if d.get("margin_tokens") is None:
        return f"{d['max_num_seqs']} x {d['max_model_len']:,} = {d['contract_tokens']:,} tokens; no KV token count printed"
    mb = "" if d.get("margin_bytes") is None else f", {mem(d['margin_bytes'], sign=True)}"
    return (f"{d['max_num_seqs']} x {d['max_model_len']:,} = {d['contract_tokens']:,} tokens, "
            f"margin {d['margin_tokens']:+,} tokens{mb}")


def budget_source(d: dict[str, Any]) -> str:
    src = d.get("kv_budget_source")
    if src is None:
        return "no KV budget printed"
    how = "exact" if not d.get("kv_budget_precision_bytes") else \
        f"± {format_bytes(d['kv_budget_precision_bytes'])} printed precision"
    ignored = ""
    if d.get("kv_argument_ignored") and d.get("kv_cache_memory_bytes") is not None:
        # facts.md: what the engine printed beats what it was asked
        ignored = (f"; --kv-cache-memory-bytes {d['kv_cache_memory_bytes']:,} was asked and not used: "
                   f"the engine printed its pool")
    return f"{src} / KV cache size, {how}{ignored}"


def lines_of(note: dict[str, Any]) -> list[tuple[str, str]]:
    """The note as (label, text) pairs, in the order people read them: the paragraph's lines."""
    a, b = note["a"], note["b"]
    da, db = a["derived"], (b["derived"] if b else None)
    out: list[tuple[str, str]] = []
    who = f"boot {a['boot']} ({a['deploy']}, {a['outcome']}, vLLM {a['engine_version'] or '?'})"
    if b:
        who += f" against boot {b['boot']} ({b['deploy']}, {b['outcome']})"
    out.append(("note", who))
    for s in (a, b):
        if s and s["notice"]:
            out.append(("notice", s["notice"]))
    out.append(("survival", _verdict_first(a["survival"]["verdict"], survival_text(a["survival"]))
                + (f" (was {b['survival']['verdict']})" if b else "")))
    for f in a["shape_failures"]:
        out.append(("same shape", _shape_failure(a, f)))
    if b:
        changed = "; ".join(f"{r['key']} {_value(r['b'], r['key'])} -> {_value(r['a'], r['key'])}"
                            for r in note["shape"]) or "no key differs"
        out.append(("shape", changed))
        n = len(note["one_sided_keys"])
        if n and not note.get("show_all"):
            out.append(("", f"({n} key{'s' if n != 1 else ''} printed on one side only; --all lists them)"))
    out.append(("KV bytes/token", _pair(bytes_per_token(da), bytes_per_token(db) if db else None)
                + f" per rank ({budget_source(da)})"))
    out.append(("KV pool", _pair(mem(da.get("kv_budget_bytes")), mem(db.get("kv_budget_bytes")) if db else None)
                + " per rank"))
    tok = _pair(num(da.get("kv_cache_tokens"), "tokens"), num(db.get("kv_cache_tokens"), "tokens") if db else None)
    conc = _pair(concurrency(a), concurrency(b) if b else None)
    lens = _pair(num(da.get("max_model_len")), num(db.get("max_model_len")) if db else None)
    out.append(("KV tokens", f"{tok}; concurrency {conc} at {lens} tokens per request"))
    out.append(("contract", f"{a['verdicts'].get('capacity', 'insufficient')}: {contract(da)}"
                + (f" (was {b['verdicts'].get('capacity', 'insufficient')}: {contract(db)})" if db else "")))
    for c in a["checks"]:
        if c["what"] in ("vram ceiling", "host ceiling"):
            out.append((c["what"].replace(" ceiling", ""), f"{c['verdict']}" + (f": {c['detail']}" if c["detail"] else "")))
    for c in a["checks"]:
        if c["what"] == "kv reconciliation":
            out.append(("kv check", f"{c['verdict']}: {c['detail']}"))
    verdicts = ", ".join(f"{k} {v}" for k, v in a["verdicts"].items())
    out.append(("verdicts", f"boot {a['boot']}: {verdicts}" + (
        f"; boot {b['boot']}: " + ", ".join(f"{k} {v}" for k, v in b["verdicts"].items()) if b else "")))
    if note.get("decode"):
        d = note["decode"]
        out.append(("decode", f"{d['verdict']}: {d['detail']}"))
    elif a["decode"]["median_tps"] is not None:
        out.append(("decode", f"{a['decode']['median_tps']:.1f} t/s ({a['decode']['source']})"))
    for s in (a, b):
        if s is None:
            continue
        for f in s["failures"]:
            out.append(("failure", f"boot {s['boot']}: {f['kind']}@{f['phase']}, line {f['line']}: {_quoted(f['text'])}"))
    for s in (a, b):
        if s is None:
            continue
        src = s["source"]
        out.append(("evidence", f"boot {s['boot']}: {src['path']}:{src['first_line']}-{src['last_line']}"))
        for e in s["evidence"]:
            out.append(("", f"  line {e['line']}: {_quoted(e['text'])}"))
    return out


def _verdict_first(verdict: str, text: str) -> str:
    """``crashed: passed every boot gate …``; a text that begins with its verdict as it is
    (``running at the end of its log``)."""
    return text if text.startswith(verdict) else f"{verdict}: {text}"


def _shape_failure(side: dict[str, Any], f: dict[str, Any]) -> str:
    """Another boot of the side's group and shape that failed or crashed: ``5 x 262,144: crashed
    at runtime after 0:03:41: oom (boot 2)``."""
    d = side["derived"]
    since = f"; boot {f['answered_by']} of this shape came up since" if f["answered_by"] else ""
    return f"{d['max_num_seqs']} x {d['max_model_len']:,}: {survival_brief(f)} (boot {f['boot']}{since})"


def _quoted(text: str | None) -> str:
    """A log line's message as a quotation: a note pasted into a commit message is prose that
    quotes the log, not a log (``ledger ingest`` refuses such text rather than read boots
    from it)."""
    return "—" if text is None else f'"{text}"'


def _value(v: Any, key: str = "") -> str:
    """A shape value with its unit where the key says it (bytes, tokens), else as printed; a key
    the boot did not print is ``—``."""
    if v is None:
        return "—"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if key.endswith("_bytes"):
            return f"{format_bytes(v)} ({v:,} B)"
        if key in ("max_model_len", "max_num_batched_tokens"):
            return f"{v:,} tokens"
    if isinstance(v, str):
        return v
    import json

    return json.dumps(v, sort_keys=True)


def text(note: dict[str, Any]) -> str:
    pairs = lines_of(note)
    width = max(len(label) for label, _ in pairs)
    return "\n".join(f"{label:<{width}}  {body}".rstrip() for label, body in pairs)


def markdown(note: dict[str, Any]) -> str:
    out = []
    for label, body in lines_of(note):
        if label == "note":
            out.append(f"**ledger note**: {body}")
            out.append("")
        elif label == "":
            out.append(f"  - `{body.strip()}`" if body.startswith("  ") else f"  {body}")
        elif label == "evidence":
            out.append(f"- **evidence** `{body}`")
        else:
            out.append(f"- **{label}** {body}")
    return "\n".join(out)


def trailers(note: dict[str, Any]) -> list[tuple[str, str]]:
    """The trailers (docs/notes.md names each): the noted boot's figures, one line each."""
    a, b = note["a"], note["b"]
    d = a["derived"]
    out = [("Ledger-Boot", a["boot"]), ("Ledger-Deploy", a["deploy"])]
    if b:
        out.append(("Ledger-Against", f"{b['boot']} ({b['deploy']})"))
    if a["notice"]:
        out.append(("Ledger-Notice", a["notice"]))
    out.append(("Survival", _verdict_first(a["survival"]["verdict"], survival_brief(a["survival"]))))
    for f in a["shape_failures"]:
        if not f["answered_by"]:
            out.append(("Ledger-Shape-Failure", _shape_failure(a, f)))
    if d.get("kv_cache_tokens") is not None:
        out.append(("KV-Tokens", str(d["kv_cache_tokens"])))
    if d.get("bytes_per_token") is not None:
        bpt = f"{d['bytes_per_token']:.2f}"
        if d.get("bytes_per_token_uncertainty"):
            bpt += f" +-{d['bytes_per_token_uncertainty']:.2f}"
        out.append(("KV-Bytes-Per-Token", bpt))
    if d.get("kv_budget_bytes") is not None:
        out.append(("KV-Pool-Bytes", f"{d['kv_budget_bytes']:.0f} ({d['kv_budget_source']})"))
    if a["concurrency"] is not None:
        out.append(("Concurrency", concurrency(a)))
    cap = a["verdicts"].get("capacity", "insufficient")
    if d.get("margin_tokens") is not None:
        out.append(("Contract", f"{cap} {d['margin_tokens']:+d} ({d['max_num_seqs']}x{d['max_model_len']})"))
    else:
        out.append(("Contract", cap))
    kv = a["verdicts"].get("kv", "insufficient")
    if kv in ("ok", "off") and d.get("relative_error") is not None:
        kv += f" {d['relative_error'] * 100:+.3f}% vs boot {d['ref_boot_id']}"
    out.append(("KV-Check", kv))
    for key, name, margin in (("vram", "VRAM-Ceiling", "vram_margin_bytes"), ("host", "Host-Ceiling", "host_margin_bytes")):
        v = a["verdicts"].get(key, "insufficient")
        if d.get(margin) is not None:
            v += f" {d[margin]:+.0f}"
        out.append((name, v))
    if note.get("decode"):
        dc = note["decode"]
        if dc["change_pct"] is not None:
            out.append(("Decode", f"{dc['verdict']} {dc['boot']['median_tps']:.1f} t/s {dc['change_pct']:+.1f}% "
                                  f"vs {dc['control']['median_tps']:.1f} (boot {dc['control']['boot']})"))
        else:
            out.append(("Decode", dc["verdict"]))
    for f in a["failures"]:
        out.append(("Ledger-Failure", f"{f['kind']}@{f['phase']} line {f['line']}"))
    return out


def render_note(note: Any, fmt: str = "text", redact: bool = True, redactor: Redactor | None = None) -> str:
    """``note`` (a ``ledger.note.Note``) in ``fmt`` (``NOTE_FORMATS``), redacted unless told not to."""
    obj = note.to_json()
    obj["show_all"] = note.show_all
    if redact:
        obj = (redactor or Redactor())(obj)
    if fmt == "json":
        obj.pop("show_all")
        return json_text(obj)
    if fmt == "trailers":
        return "\n".join(f"{k}: {' '.join(str(v).split())}" for k, v in trailers(obj))
    if fmt == "markdown":
        return markdown(obj)
    return text(obj)


# ``ledger note --hook``: a prepare-commit-msg hook for the deploy repo (docs/notes.md).  It
# appends the trailers for the deploy of the repo's HEAD (ingested with ``--repo``), against
# ``git config ledger.against`` when set; it never stops a commit (no ledger, no such deploy:
# nothing is appended).  LEDGER names the command and LEDGER_DB the ledger, as for ledger itself.
HOOK = r"""#!/bin/sh
# prepare-commit-msg: append `ledger note` trailers for this repo's HEAD deploy (ledger note --hook)
case "$2" in merge|squash) exit 0 ;; esac
head=$(git rev-parse HEAD 2>/dev/null) || exit 0
against=$(git config --get ledger.against)
block=$(${LEDGER:-ledger} note "$head" ${against:+--against "$against"} --format trailers 2>/dev/null) || exit 0
[ -n "$block" ] || exit 0
printf '\n%s\n' "$block" >> "$1"
"""
