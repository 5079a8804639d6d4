"""``ledger watch`` in words: an alert as one line of text (``alert_text``), as the JSON object
of ``--format jsonl``, ``--exec`` and ``--webhook`` (``alert_json``: the alert's fields and its
``message``), as a webhook body in each ``--webhook-format``, as the ``LEDGER_ALERT_*``
variables of ``--exec``; and the watch's own notes and its summary at the end.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ledger.parsers.units import format_bytes

from . import dumps

WEBHOOK_FORMATS = ("json", "ntfy", "slack")


def _span(seconds: float | None) -> str:
    """A duration as people say it: 45 s, 3 min, 2 h 5 min, 0:03:41 where exact matters."""
    if seconds is None:
        return "?"
    s = int(round(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _figure(name: str, value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and name.endswith("_bytes"):
        return f"{name.removesuffix('_bytes')} {format_bytes(value)}"
    if isinstance(value, str) and len(value) > 80:
        value = value[:79] + "…"
    return f"{name} {value}"


def _failures(failures: list[dict[str, Any]]) -> str:
    kinds = ", ".join(f"{f['kind']}@{f['phase']}" for f in failures) or "no failure line"
    figured = next((f for f in failures if f["figures"]), None)
    if figured is None:
        return kinds
    shown = [_figure(k, v) for k, v in figured["figures"].items() if k != "message"][:4]
    return kinds + (f" ({', '.join(shown)})" if shown else "")


def _boot(a: dict[str, Any]) -> str:
    name = f"boot {a['boot']}" if a.get("boot") else "a boot"
    return name + (f" ({a['deploy']})" if a.get("deploy") else "")


def message(a: dict[str, Any]) -> str:
    """What happened, in one line, with the log's time of it (``logged at …``: a person reading
    the alert later, or one resent after a restart, knows when it was); no source."""
    said = _what(a)
    when = a.get("logged_at")
    return f"{said}; logged at {str(when).replace('T', ' ')}" if when else said


def _what(a: dict[str, Any]) -> str:
    f = a["figures"]
    kind = a["kind"]
    boot = _boot(a)
    if kind == "boot_failed":
        return f"{boot} failed: {_failures(f['failures'])}"
    if kind == "crashed":
        after = f.get("seconds_after_ready")
        when = f"{dt.timedelta(seconds=int(after))} after ready" if after is not None else "after ready"
        return f"{boot} crashed {when}: {_failures(f['failures'])}"
    if kind == "restart_loop":
        return f"restart loop: {f['failed_boots']} boots failed in {_span(f.get('seconds'))} " \
               f"(latest {boot}: {_failures(f['failures'])})"
    if kind == "boot_verdict":
        return f"{boot} is up with " + "; ".join(f"{v['what']} {v['verdict']}: {v['detail']}" for v in f["verdicts"])
    if kind == "kv_usage":
        engine = f" on engine {f['engine']}" if f.get("engine") is not None else ""
        return f"{boot}: KV cache usage {f['usage_pct']:.1f}% above {f['above_pct']:g}% for " \
               f"{_span(f['for_seconds'])}{engine} (since line {f['since_line']})"
    if kind == "decode_drop":
        return f"{boot}: decode median {f['median_tps']:.1f} t/s over the last {_span(f['window_seconds'])} is " \
               f"{f['drop_pct']:.1f}% below boot {f['previous_boot']}'s {f['previous_median_tps']:.1f} t/s " \
               f"({f['intervals']} intervals)"
    if kind == "hung":
        return f"{boot}: no stats line for {_span(f['silent_seconds'])} while {f['running_reqs']:g} requests " \
               f"were running (last at line {f['last_stats_line']}): hung?"
    if kind == "source_down":
        return f"{f['reason']}: nothing to read until it runs again"
    if kind == "recovered":
        what = f["recovered_from"]
        if what == "source":
            return f"recovered: {f['now_reading']} is read again (it was down: {f['reason']})"
        if what == "down":
            return f"recovered: {boot} is up after {f['failed_boots']} failed boot" \
                   f"{'s' if f['failed_boots'] != 1 else ''} ({_span(f.get('seconds_down'))} down)"
        if what == "kv_usage":
            return f"recovered: {boot}'s KV cache usage is {f['usage_pct']:.1f}%, under {f['above_pct']:g}% again"
        if what == "decode_drop":
            return f"recovered: {boot}'s decode median is {f['median_tps']:.1f} t/s again " \
                   f"(previous boot {f['previous_median_tps']:.1f})"
        return f"recovered: {boot} prints stats lines again"
    return f"{kind}: {boot}"


def alert_json(alert: Any) -> dict[str, Any]:
    """The alert's fields (``Alert.to_json``) and its ``message``: what --format jsonl prints,
    --exec reads on its standard input and --webhook posts."""
    out = alert.to_json()
    out["message"] = message(out)
    return out


def alert_text(alert: Any) -> str:
    """One line: when, what, where."""
    a = alert_json(alert)
    line = f":{a['line']}" if a.get("line") else ""
    return f"{a['raised_at']}  {a['kind']:<12}  {a['message']}  [{a['source']}{line}]"


def alert_line(alert: Any, fmt: str) -> str:
    """An alert as ``ledger watch`` prints it: ``table``, one line of text; ``jsonl``, its JSON."""
    return dumps(alert_json(alert)) if fmt == "jsonl" else alert_text(alert)


def alert_env(alert: Any) -> dict[str, str]:
    """``LEDGER_ALERT_*`` for --exec: each top-level field (its JSON for a figure that is not
    text), the figures as ``LEDGER_ALERT_FIGURES`` (JSON)."""
    out: dict[str, str] = {}
    for key, value in alert_json(alert).items():
        name = f"LEDGER_ALERT_{key.upper()}"
        if value is None:
            out[name] = ""
        elif isinstance(value, str):
            out[name] = value
        else:
            out[name] = dumps(value)
    return out


_NTFY_TAGS = {"recovered": "white_check_mark", "boot_verdict": "warning", "kv_usage": "warning",
              "decode_drop": "warning"}


def webhook_request(alert: Any, fmt: str) -> tuple[bytes, dict[str, str]]:
    """A webhook POST's body and headers: ``json`` the alert's JSON; ``ntfy`` the message as
    the body with a title, tags and priority (ntfy.sh's headers); ``slack`` a ``{"text": …}``
    object (Slack, Mattermost, Discord's /slack endpoints, Rocket.Chat)."""
    a = alert_json(alert)
    if fmt == "ntfy":
        urgent = a["kind"] in ("boot_failed", "crashed", "restart_loop", "hung", "source_down")
        return a["message"].encode("utf-8"), {
            "Content-Type": "text/plain; charset=utf-8", "Title": f"ledger watch: {a['kind']}",
            "Tags": _NTFY_TAGS.get(a["kind"], "rotating_light"), "Priority": "high" if urgent else "default"}
    if fmt == "slack":
        text = f"*{a['kind']}* {a['message']} ({a['source']})"
        return dumps({"text": text}).encode("utf-8"), {"Content-Type": "application/json"}
    return dumps(a).encode("utf-8"), {"Content-Type": "application/json"}


def note_text(note: Any) -> str:
    """A note of the watch's own for standard error: a text (a rotation, a database tried
    again) or a ``SinkFailure`` (an alert --exec or --webhook could not take).  Whatever names a
    webhook or a command says it without its secrets (``ledger.render.redact.secrets_hidden``:
    a URL's ``user:password@``, ``?token=``, ``?auth=`` …)."""
    from .redact import secrets_hidden

    if isinstance(note, str):
        return secrets_hidden(f"ledger watch: {note}")
    if note.sink == "--exec":
        return secrets_hidden(f"ledger watch: --exec {note.target!r}: {note.reason}")
    tries = f"after {note.tries} tr{'ies' if note.tries != 1 else 'y'}"
    return secrets_hidden(f"ledger watch: --webhook {note.target}: {note.reason} ({tries}); "
                          "the alert was not delivered there")


def summary_text(s: dict[str, Any]) -> str:
    """What a watch did, when it stops."""
    return (f"ledger watch: {s['source']}: {s['lines']:,} lines read, {s['boots_written']} boot"
            f"{'s' if s['boots_written'] != 1 else ''} written, {s['samples_written']:,} runtime samples, "
            f"{s['alerts']} alert{'s' if s['alerts'] != 1 else ''}")
