"""``ledger show``: one boot (``ledger.queries.show``'s object) in a format — for people,
facts with their evidence, shape, failures and checks; csv is its facts, one row each."""

from __future__ import annotations

import json
import re
from typing import Any

from .check import check_lines
from .export import facts_csv
from .formats import render
from .table import figures_text, human
from .values import document

_HEADER = re.compile(r"\[[\w./-]+\.py:\d+\] ")  # vLLM's "[gpu_worker.py:492] "


def _value(value: Any, unit: str) -> str:
    return human(value, unit, show_unit=True)


# what an origin's facts are called on show's lines, in this order (ledger.origins)
_ORIGIN_SHOWN = [("container_name", "container"), ("container_id", "id"), ("runtime", "runtime"), ("run", "run"),
                 ("restart_count", "restarts"), ("unit", "unit"), ("image_name", "image"), ("image_id", "image id"),
                 ("created_at", "created"), ("started_at", "last started"), ("oci_revision", "oci revision"),
                 ("oci_version", "oci version"), ("oci_source", "oci source")]


def _origin_lines(origin: dict[str, str]) -> list[str]:
    """A container's or a unit's facts, two lines (none for a boot read from a file)."""
    if not origin:
        return []
    parts = [f"{name} {origin[key][:12] if key == 'container_id' else origin[key]}"
             for key, name in _ORIGIN_SHOWN if origin.get(key)]
    known = {k for k, _ in _ORIGIN_SHOWN} | {"origin", "image_digest", "status"}
    parts += [f"{k} {v}" for k, v in origin.items() if k not in known]
    return [f"  origin   {'  '.join(parts)}"]


def render_show(obj: dict[str, Any], width: int | None = None, colour: bool = False, markdown: bool = False) -> str:
    """The boot for people; tables fitted to ``width`` (the evidence is cut, ``--format json``
    has it whole); ``markdown`` lays the tables out for pasting."""
    from .terminal import paint

    fmt = "markdown" if markdown else "table"
    # fitted to a terminal, the evidence starts at the message; unfitted, it is the raw line
    evidence = _message if width is not None else _first_line
    src, dep, eng = obj["source"], obj["deploy"], obj["engine"]
    started = obj["started_at"].replace("T", " ") + (" (year inferred)" if obj.get("year_inferred") else "") \
        if obj["started_at"] else "—"
    out = [
        f"boot {obj['boot']}: {paint(obj['outcome']) if colour else obj['outcome']}" + _ended(obj.get("ended")),
        f"  source   {src['path']} lines {src['first_line']}-{src['last_line']} (sha256 {(src['sha256'] or '—')[:12]})",
        f"  deploy   {dep.get('id') or ''}  commit {dep['commit'] or '—'}  image {dep['image_digest'] or '—'}  "
        f"label {dep['label'] or '—'}",
        *_origin_lines(obj.get("origin") or {}),
        f"  engine   {eng['name']} {eng['version'] or '(version not printed)'}"
        + (f" commit {eng['commit']}" if eng["commit"] else ""),
        f"  started  {started}",
        f"  serving  {obj['runtime']['engine_stats']} stats intervals, {obj['runtime']['spec_decode']} "
        f"spec-decode reports, {obj['access_lines']} access lines, {obj['request_lines']} request lines",
    ]
    if width is not None:  # the header's lines too: wrapped under their text, never cut mid-figure
        from .wrap import wrap_labelled

        out = out[:1] + wrap_labelled(out[1:], width)
    out.append("")
    if obj["facts"]:
        rows = [{"fact": f["name"] + (f" [{f['pack']}]" if f.get("pack") else ""),
                 "value": _value(f["value"], f["unit"]),
                 "rank": "" if f["rank"] is None else f["rank"], "line": f["line"],
                 "evidence": evidence(f["text"])[:160]} for f in obj["facts"]]
        # fact names are never cut; the figure keeps its unit; the evidence gives up width first
        out += ["facts", render(rows, ["fact", "value", "rank", "line", "evidence"], fmt, width=width,
                                flexible={"evidence": 16, "value": 12}), ""]
    else:
        out += ["facts: none printed in this log", ""]
    if obj["shape"]:
        rows = [{"key": k, "value": _clip(v if isinstance(v, str) else json.dumps(v)),
                 "from": obj["shape_sources"].get(k, "")}
                for k, v in sorted(obj["shape"].items())]
        out += ["shape", render(rows, ["key", "value", "from"], fmt, width=width, flexible=("value",)), ""]
    if obj["failures"]:
        rows = []
        for f in obj["failures"]:
            figures = {k: v for k, v in f.items() if k not in ("kind", "phase", "line", "text", "rank")}
            rows.append({"failure": f["kind"], "phase": f["phase"], "line": f["line"],
                         "figures": figures_text(figures),
                         "evidence": evidence(f["text"])[:120]})
        out += ["failures", render(rows, ["failure", "phase", "line", "figures", "evidence"], fmt, width=width,
                                   flexible={"evidence": 16, "figures": 16}), ""]
    if obj.get("checks"):
        out += ["checks"] + check_lines(obj["checks"], width, colour)
    return "\n".join(out).rstrip()


def show_text(obj: dict[str, Any], fmt: str, width: int | None = None, colour: bool = False) -> str:
    """``ledger show --format fmt``: the object itself in json and jsonl, its facts in csv."""
    if fmt == "table":
        return render_show(obj, width=width, colour=colour)
    if fmt == "csv":
        return "\n".join(facts_csv([obj]))
    return document(obj, fmt, lambda o: render_show(o, markdown=True))


def echo_show(obj: dict[str, Any], fmt: str, redact: bool = True) -> None:
    """Print the boot, redacted unless told not to (``ledger.render.redact``); a table is fitted
    to the terminal and paged when it is longer."""
    import click

    from . import terminal
    from .redact import redactor

    obj = redactor(redact)(obj)
    if fmt == "table":
        terminal.echo_long(show_text(obj, fmt, terminal.width(), terminal.colour()))
    else:
        click.echo(show_text(obj, fmt))


def _first_line(text: str) -> str:
    return text.split("\n")[0].strip()


def _message(text: str) -> str:
    """A raw line's first line from its message on: vLLM's ``[file.py:NNN] `` header and what
    precedes it (process, level, time) dropped, so a narrow column shows the words that carry
    the figure (the whole raw line is in ``--format json``)."""
    first = _first_line(text)
    head = _HEADER.search(first)
    return first[head.end():] if head else first


def _clip(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _ended(ended: dict | None) -> str:
    """How a ready boot ended (facts.md): ", stopped (line 175)" for a stop that was asked for,
    ", running at the end of its log"; a failed or crashed boot's outcome says it already."""
    how = (ended or {}).get("how")
    if how == "stopped":
        line = (ended or {}).get("stop_line")
        return ", stopped" + (f" (line {line})" if line else "")
    if how == "running":
        return ", running at the end of its log"
    return ""
