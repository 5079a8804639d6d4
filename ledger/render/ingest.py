"""``ledger ingest``: a line per stored boot (``ledger.ingest.stored_boot``'s object) as it is
stored, what was already there or repeated, the reading's warnings (stderr); with ``--format json`` or
``jsonl`` the stored boots' export objects instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ledger.parsers.units import format_bytes


def boot_line(b: dict[str, Any]) -> str:
    parts = [f"boot {b['boot']}", f"{b['outcome']:<10}"]
    parts.append(f"vLLM {b['engine_version']}" if b["engine_version"] else "vLLM ?")
    if b["kv_cache_tokens"] is not None:
        parts.append(f"kv {int(b['kv_cache_tokens']):,} tokens")
    if b["max_concurrency"] is not None:
        parts.append(f"{b['max_concurrency']:.2f}x")
    if b["kv_memory_bytes"] is not None:
        parts.append(f"kv memory {format_bytes(b['kv_memory_bytes'])}")
    if b["model_weights_bytes"] is not None:
        parts.append(f"weights {format_bytes(b['model_weights_bytes'])}")
    if b["failures"]:
        parts.append("failure " + ", ".join(f"{f['kind']}@{f['phase']}" for f in b["failures"]))
    parts.append(f"({b['path']}:{b['first_line']}-{b['last_line']})")
    if b.get("deploy"):
        parts.append(f"-> {b['deploy']}")
    if b.get("supersedes"):
        # a log that grew (a container still running): the boot read again, longer
        parts.append(f"supersedes boot {', '.join(map(str, b['supersedes']))} (the same boot, read again as it grew)")
    moved = b.get("reference_moved")
    if moved:
        parts.append(reference_moved_text(moved))
    from .terminal import width
    from .wrap import wrap_parts

    return wrap_parts(parts, width())


def reference_moved_text(moved: dict[str, Any]) -> str:
    """A stored boot that took its group's KV reference from another: which, why (the group's
    reference is its earliest ready boot), and how to keep the one it was."""
    import shlex

    was = moved["boot"]
    deploy = shlex.quote(moved["deploy_label"]) if moved.get("deploy_label") else f"deploy:{moved['deploy']}"
    return (f"now its group's KV reference in place of boot {was} (the earliest ready boot is the reference: "
            f"this one started {moved['now_started_at']}, boot {was} {moved['started_at']}); "
            f"ledger deploy set {deploy} kv_reference_boot={was} keeps boot {was}")


def _boots(n: int) -> str:
    return f"{n} boot{'s' if n != 1 else ''}"


def echo_no_commit(shown: str, repo: str, missed: list[tuple[int, int, str | None]]) -> None:
    """``--at-boot-time``: the boots git found no commit of the repo for at their start (stderr);
    they are stored with no commit."""
    n = len(missed)
    which = "; ".join(f"lines {first}-{last}, " + (f"started {started.replace('T', ' ')}: before the repo's first "
                                                    "commit" if started else "no start time printed")
                      for first, last, started in missed[:3]) + ("; …" if n > 3 else "")
    click.echo(f"warning: {shown}: {_boots(n)} {'has' if n == 1 else 'have'} no commit of {repo} at "
               f"{'its' if n == 1 else 'their'} start ({which}); stored with no commit", err=True)


def echo_origin_warnings(shown: str, warnings: list[str]) -> None:
    """What a container's or unit's runtime said that the ingest should know (stderr)."""
    for warning in warnings:
        click.echo(f"warning: {shown}: {warning}", err=True)


def echo_file(result: Any, shown: str, as_json: bool, where: list[str] | None = None) -> None:
    """What one input gave besides its boots (a ``FileResult``; its boots were said as they were
    stored: ``announcer``; ``where``: the deploys its boots already in the ledger belong to):
    warnings and an error on stderr, what was repeated or there already on stdout (table format
    only)."""
    for warning in result.warnings:
        click.echo(f"warning: {shown}: {warning}", err=True)
    if result.long_lines:
        click.echo(f"warning: {shown}: {result.long_lines} line{'s' if result.long_lines != 1 else ''} "
                   f"longer than 1 MiB (not vLLM records): only their first MiB was read", err=True)
    if result.error:
        click.echo(f"Error: {result.error}", err=True)
        return
    if as_json:
        return
    if result.repeated:
        click.echo(f"{shown}: {_boots(result.repeated)} identical to one before in the same input "
                   f"(same lines, same counts): stored once")
    if result.existing and not result.stored:
        in_deploys = f" in {', '.join(where)}" if where else ""
        click.echo(f"{shown}: already in the ledger ({_boots(result.existing)}{in_deploys}, "
                   f"sha256 {result.sha256[:12]}); nothing stored")


def announcer(as_json: bool, progress: Any) -> Callable[[dict[str, Any]], None]:
    """Say each boot as it is stored (above the progress bar; nothing with ``--format
    json``/``jsonl``, whose objects come at the end): a stream may go on for days, a file may
    hold a million boots."""
    def say(b: dict[str, Any]) -> None:
        if not as_json:
            line = boot_line(b)
            if progress is not None:
                progress.say(line)
            else:
                click.echo(line)

    return say


def stored_text(objs: list[dict[str, Any]], fmt: str) -> str | None:
    """The stored boots' export objects: a JSON array, or JSON lines (nothing for none)."""
    from . import json_text, jsonl_text

    if fmt == "json":
        return json_text(objs)
    return jsonl_text(objs) if objs else None


def upgraded(backup: Any) -> str:
    return f"ledger: upgraded the schema; backup of the old ledger at {backup}"


def boots_as_objects(fmt: str) -> bool:
    """Whether the stored boots are printed as export objects at the end (json, jsonl) rather
    than as a line each as they are stored (table)."""
    return fmt != "table"
