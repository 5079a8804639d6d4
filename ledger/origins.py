"""Where a log comes from when it is not a file: a container (docker or podman) or a systemd unit.

One small interface, used by ``ledger ingest --container`` / ``--unit`` (read once, to the end)
and meant for a follower (``logs -f``, ``journalctl -f``) as well::

    origin = container_origin("vllm")            # or container_origin("3f2a…", runtime="podman")
    origin = unit_origin("vllm.service", since="2026-11-01")
    origin.source_name    # "container:vllm@3f2a9c1b0d4e" / "unit:vllm.service": the stored source
    origin.image          # the deploy's image: the repo digest "sha256:…", else the image id; None for a unit
    origin.facts          # what was found about it (container id and name, image id, created and
                          # started times, restart count, OCI labels): stored with each boot
    origin.argv(follow)   # the log command: [docker|podman, "logs", "--timestamps", (-f), ID] or
                          # ["journalctl", "-u", NAME, "-o", "json", (--since/--until | -f)]
    for line in origin.text_lines(stream): ...   # the command's stdout as log lines (bytes, each
                          # "RFC3339-time message\\n"; journald's JSON entries become such lines)
    origin.run_of(line)   # which run of the container / invocation of the unit a line belongs to
    runs = write_log(origin, file)   # the whole log into a binary file; where each run after the
                          # first begins: (line number, run index) (a restart: each run is its own boot)

Reading a container takes ``inspect`` (the container, then its image) and the runtime's
``events`` (when each run ended: a container restarted by its policy holds every run's lines in
one ``logs`` stream, and the events are what tells the runs apart).  Nothing here writes to a
ledger; every failure of the runtime is a ``LedgerError`` of one line.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from .errors import LedgerError

RUNTIMES = ("docker", "podman")  # the order tried when --runtime is not given
_TIMEOUT = 60  # seconds for one inspect or events call (a log read has none: it may be long)

# the OCI image labels kept as facts of the boot's deploy (annotations spec, "Pre-Defined Annotation Keys")
OCI_LABELS = {
    "org.opencontainers.image.revision": "oci_revision",
    "org.opencontainers.image.version": "oci_version",
    "org.opencontainers.image.source": "oci_source",
}


@dataclass
class Origin:
    """A container or a unit, as found; see the module's docstring."""

    kind: str  # "container" | "unit"
    name: str  # the container's name (as inspect gives it) or the unit's
    source_name: str  # stored as the boots' source: container:NAME@<12 hex> or unit:NAME
    executable: str  # the docker / podman / journalctl that is run
    runtime: str | None = None  # "docker" | "podman" for a container
    ident: str = ""  # the container's full id (what the commands are given); the unit's name
    image: str | None = None  # the deploy's image (sha256:<64 hex>) for a container
    facts: dict[str, str] = field(default_factory=dict)  # stored with each boot (boot_origin)
    run_ends: list[int] = field(default_factory=list)  # ns since 1970 at which a run ended (container)
    since: str | None = None  # passed to journalctl (a unit)
    until: str | None = None
    journal: list[str] = field(default_factory=list)  # journalctl's --file / --directory (a unit)
    warnings: list[str] = field(default_factory=list)  # what the reading could not tell (said, not fatal)
    running: bool = False  # a container: whether it runs (inspect's State.Running)
    exit_code: int | None = None  # a container that does not run: how its last run ended
    _invocation: str | None = field(default=None, repr=False)  # the unit's current invocation
    _runs: int = field(default=0, repr=False)

    def argv(self, follow: bool = False) -> list[str]:
        """The command that prints the log (to its end, or ``follow``-ing it)."""
        if self.kind == "container":
            return [self.executable, "logs", "--timestamps", *(["--follow"] if follow else []), self.ident]
        cmd = [self.executable, *self.journal, "-u", self.ident, "-o", "json", "--no-pager", "--all"]
        if self.since:
            cmd += ["--since", self.since]
        if self.until and not follow:
            cmd += ["--until", self.until]
        return cmd + (["--follow"] if follow else [])

    def text_lines(self, stream: Iterable[bytes]) -> Iterator[bytes]:
        """The log command's output as log lines: a container's as they come (each starts with
        the runtime's RFC 3339 time; the stamps of a split line's later records taken out:
        ``rejoined``), a unit's JSON entries as ``TIME MESSAGE`` lines (the time
        in RFC 3339, UTC, to the microsecond journald keeps)."""
        if self.kind == "container":
            for raw in stream:
                whole = rejoined(raw)
                yield whole if whole.endswith(b"\n") else whole + b"\n"
            return
        for raw in stream:
            line = _journal_line(raw)
            if line is not None:
                yield line[1]

    def run_of(self, line: bytes) -> int:
        """Which run (0, 1, …) the line belongs to.  A container: how many run ends (the
        runtime's ``died`` events) came before the line's own time; a unit: how many times the
        invocation id changed (call it on the raw JSON entries in order: ``write_log`` does)."""
        if self.kind == "unit":
            entry = _journal_line(line)
            if entry is not None and entry[0] and entry[0] != self._invocation:
                if self._invocation is not None:
                    self._runs += 1
                self._invocation = entry[0]
            return self._runs
        at = line_time_ns(line)
        if at is None:
            return -1  # no time: the run of the line before it
        return bisect.bisect_left(self.run_ends, at)  # the run ends before the line


def write_log(origin: Origin, out: IO[bytes]) -> list[tuple[int, int]]:
    """Run the origin's log command to its end, write its lines to ``out``; where each run
    after the first begins: (line number, 1-based; the run's index, from 0 — a run that printed
    nothing has no line).  The runtime's own error (a container gone meanwhile) is a
    ``LedgerError``."""
    with tempfile.TemporaryFile() as err_file:
        proc = subprocess.Popen(origin.argv(False), stdout=subprocess.PIPE,
                                # a container's stderr is its log's stderr (vLLM logs there)
                                stderr=subprocess.STDOUT if origin.kind == "container" else err_file)
        assert proc.stdout is not None
        try:
            if origin.kind == "container":
                starts, last = _copy_container_log(origin, proc.stdout, out)
            else:
                starts, last = _copy_journal(origin, proc.stdout, out)
        finally:
            code = proc.wait()
        err_file.seek(0)
        err = err_file.read().decode("utf-8", "replace")
    if code != 0:
        # a container's runtime says why it failed on the stream it shares with the log
        said = _first_line(err) or _first_line(last.decode("utf-8", "replace")) or f"exit {code}"
        tool = origin.runtime or "journalctl"
        raise LedgerError(f"{origin.source_name}: {tool} could not read the log: {said}")
    return starts


_BLOCK = 1 << 20  # bytes read from the log command at a time


def _copy_container_log(origin: Origin, src: IO[bytes], out: IO[bytes]) -> tuple[list[tuple[int, int]], bytes]:
    """``logs --timestamps`` into ``out`` a block at a time; a block is looked at line by line
    only where a run ends in it (its last line is later than the next run end: the times are
    in order), so a long log of one run is copied, not read.  The run starts, and the last line."""
    ends, k = origin.run_ends, 0  # the next run end to cross
    starts: list[tuple[int, int]] = []
    number, carry, last = 0, b"", b""
    while True:
        chunk = src.read(_BLOCK)
        data = carry + chunk
        if not chunk:
            if data:
                data += b"\n"  # the last line, without its newline
            else:
                break
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        block, carry = rejoined_block(data[: cut + 1]), data[cut + 1 :]
        last = block[block.rfind(b"\n", 0, len(block) - 1) + 1 :]
        final = line_time_ns(last)
        if k < len(ends) and final is not None and final > ends[k]:
            for line in block.splitlines(keepends=True):
                number += 1
                at = line_time_ns(line)
                if at is not None and k < len(ends) and at > ends[k]:
                    k = bisect.bisect_left(ends, at)  # the run ends before this line
                    starts.append((number, k))
        else:
            number += block.count(b"\n")
        out.write(block)
        if not chunk:
            break
    return starts, last


def _copy_journal(origin: Origin, src: IO[bytes], out: IO[bytes]) -> tuple[list[tuple[int, int]], bytes]:
    """``journalctl -o json`` into ``out`` as ``TIME MESSAGE`` lines; a run starts where the
    invocation id changes.  The run starts, and the last line."""
    starts: list[tuple[int, int]] = []
    run = number = 0
    last = b""
    for raw in src:
        this = origin.run_of(raw)
        for line in origin.text_lines([raw]):
            number += 1
            if this > run:
                starts.append((number, this))
                run = this
            out.write(line)
            last = line
    return starts, last


def checked_name(option: str, name: str, runtime: str) -> str:
    """``name`` as given to ``option`` (``--container``, ``--unit``), refused when it starts
    with "-": the runtime would read it as an option of its own (``podman container inspect -l``
    is ``--latest``: another container was read).  No container or unit is named so."""
    if name.startswith("-"):
        shown = name if len(name) <= 60 else name[:57] + "..."
        raise LedgerError(f"{option} {shown}: a name that starts with '-' is refused ({runtime} would read it "
                          f"as an option; no {option[2:]} is named so)")
    return name


def container_origin(name: str, runtime: str | None = None) -> Origin:
    """The container ``name`` (a name or an id) as docker or podman (``runtime``; else the
    first of them on PATH that knows the container) reports it.  Refused in one line when no
    runtime is installed or none has such a container, or when the name starts with "-"."""
    checked_name("--container", name, runtime or "docker or podman")
    if runtime is not None and runtime not in RUNTIMES:
        raise LedgerError(f"--runtime {runtime}: expected docker or podman")
    candidates = [runtime] if runtime else [r for r in RUNTIMES if shutil.which(r)]
    if runtime and not shutil.which(runtime):
        raise LedgerError(f"--runtime {runtime}: {runtime} is not installed (not on PATH)")
    if not candidates:
        raise LedgerError("--container needs docker or podman on PATH, and neither is installed")
    said = []
    for rt in candidates:
        exe = shutil.which(rt) or rt
        found = _run([exe, "container", "inspect", name])
        if isinstance(found, str):
            said.append(f"{rt}: {found}")
            continue
        return _container(rt, exe, found[0])
    raise LedgerError(f"no container {name} found ({'; '.join(said)})")


def unit_origin(name: str, since: str | None = None, until: str | None = None) -> Origin:
    """The systemd unit ``name``, read with journalctl (``since``/``until`` passed to it as
    they are: journalctl's own time syntax); a name that starts with "-" is refused."""
    checked_name("--unit", name, "journalctl")
    exe = shutil.which("journalctl")
    if exe is None:
        raise LedgerError("--unit needs journalctl, and it is not installed")
    return Origin(kind="unit", name=name, source_name=f"unit:{name}", executable=exe, ident=name,
                  facts={"origin": "unit", "unit": name}, since=since, until=until)


def journal_origin(name: str, files: list[str] | None = None, directory: str | None = None,
                   since: str | None = None, until: str | None = None) -> Origin:
    """``unit_origin`` reading journal files instead of the system's journal
    (``journalctl --file`` / ``--directory``): journals copied off another machine."""
    origin = unit_origin(name, since, until)
    origin.journal = [f"--file={f}" for f in files or []] + ([f"--directory={directory}"] if directory else [])
    return origin


# -- the pieces -------------------------------------------------------------------------------------


def _first_line(text: str) -> str:
    return next((t.strip() for t in text.splitlines() if t.strip()), "")


def _run(cmd: list[str]) -> Any:
    """``cmd``'s JSON output, or the first line of what it said when it failed (a str)."""
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=_TIMEOUT, check=False,
                             env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if out.returncode != 0:
        return _first_line(out.stderr.decode("utf-8", "replace")) or f"exit {out.returncode}"
    try:
        data = json.loads(out.stdout or b"null")
    except ValueError:
        return "inspect printed no JSON"
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return "no such container"
    return data


def _sha(value: Any) -> str | None:
    """An image id or digest as ``sha256:<64 hex>`` (docker prints the prefix, podman's image
    id lacks it), or None."""
    if not isinstance(value, str):
        return None
    value = value.split("@")[-1]
    hexpart = value.removeprefix("sha256:")
    if len(hexpart) == 64 and all(c in "0123456789abcdef" for c in hexpart):
        return f"sha256:{hexpart}"
    return None


def _container(rt: str, exe: str, c: dict[str, Any]) -> Origin:
    """The Origin from ``container inspect``'s object (docker's and podman's share these keys;
    podman adds ImageDigest), with the image's repo digest and the run ends."""
    cid = str(c.get("Id") or "")
    name = str(c.get("Name") or "").lstrip("/") or cid[:12]
    state = c.get("State") or {}
    config = c.get("Config") or {}
    image_id = _sha(c.get("Image"))
    digest = _sha(c.get("ImageDigest"))  # podman: the manifest digest of the container's image
    image = _run([exe, "image", "inspect", image_id or str(c.get("Image") or "")]) if c.get("Image") else None
    image_name = str(c.get("ImageName") or config.get("Image") or "") or None
    if isinstance(image, list):
        info = image[0]
        repo_digests = [d for d in info.get("RepoDigests") or [] if isinstance(d, str)]
        # the container's own image name first, so a digest of the same image under another name
        # is taken only when there is no other
        mine = [d for d in repo_digests if image_name and d.split("@")[0] == image_name.rsplit(":", 1)[0]]
        digest = digest or next((_sha(d) for d in [*mine, *repo_digests] if _sha(d)), None)
        image_id = image_id or _sha(info.get("Id"))
    facts = {
        "origin": "container", "runtime": rt, "container_id": cid, "container_name": name,
        "image_id": image_id or "", "image_digest": digest or "", "image_name": image_name or "",
        "created_at": str(c.get("Created") or ""), "started_at": str(state.get("StartedAt") or ""),
        "restart_count": str(c.get("RestartCount") if c.get("RestartCount") is not None else ""),
        "status": str(state.get("Status") or ""),
    }
    labels = config.get("Labels") or {}
    for label, key in OCI_LABELS.items():
        if isinstance(labels, dict) and labels.get(label):
            facts[key] = str(labels[label])
    facts = {k: v for k, v in facts.items() if v != ""}
    code = state.get("ExitCode")
    origin = Origin(kind="container", name=name, source_name=f"container:{name}@{cid[:12]}", executable=exe,
                    runtime=rt, ident=cid or name, image=digest or image_id, facts=facts,
                    running=state.get("Running") is True or state.get("Status") == "running",
                    exit_code=code if isinstance(code, int) else None)
    origin.run_ends = _run_ends(origin, str(c.get("Created") or ""))
    restarts = c.get("RestartCount")
    if isinstance(restarts, int) and len(origin.run_ends) < restarts:
        origin.warnings.append(f"restarted {restarts} times, but {rt} events name {len(origin.run_ends)} run ends: "
                               f"the runs without one are told apart by their start-up lines alone")
    return origin


def _run_ends(origin: Origin, created: str) -> list[int]:
    """When each run of the container ended (ns since 1970, in order), from the runtime's
    events: podman's ``died``, docker's ``die``.  Empty when the runtime kept no events (docker
    keeps a recent window only): the runs are then told apart by the log's own start-up lines."""
    if origin.runtime == "podman":
        cmd = [origin.executable, "events", "--stream=false", "--filter", f"container={origin.ident}",
               "--format", "{{json .}}"]
    else:
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        since = created[:19] + "Z" if len(created) >= 19 else "0"
        cmd = [origin.executable, "events", "--since", since, "--until", now, "--filter",
               f"container={origin.ident}", "--format", "{{json .}}"]
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    ends = []
    for raw in out.stdout.splitlines():
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        status = ev.get("Action") or ev.get("status") or ev.get("Status")
        if status not in ("die", "died"):
            continue
        at = ev.get("timeNano")
        if isinstance(at, int):
            ends.append(at)
        elif isinstance(ev.get("Time"), str) and (ns := rfc3339_ns(ev["Time"].encode())) is not None:
            ends.append(ns)
    ends.sort()
    return ends


def rfc3339_ns(text: bytes) -> int | None:
    """``2026-12-01T10:48:24.203620965Z`` (or ``+00:00``) as ns since 1970; None if it is not one."""
    try:
        s = text.decode("ascii").strip()
        main, frac, zone = s[:19], "", s[19:]
        if zone.startswith("."):
            i = 1
            while i < len(zone) and zone[i].isdigit():
                i += 1
            frac, zone = zone[1:i], zone[i:]
        zone = "+00:00" if zone in ("Z", "") else zone
        when = dt.datetime.fromisoformat(main + zone)
    except (ValueError, UnicodeDecodeError):
        return None
    return int(when.timestamp()) * 1_000_000_000 + int((frac + "000000000")[:9] or 0)


# A runtime keeps a long line — or any line its log pipe was read in the middle of — as several
# records, each with its own time (podman's k8s-file log marks them P, partial, and F, full;
# docker's json-file splits at 16 KiB), and ``logs --timestamps`` prints the records of one line
# on one line, each after its own time and a space: ``T1 first part…T2 rest of the line``.  The
# stamp in the middle is the runtime's framing, not the log's text: it goes (it made samples
# unreadable and cut others in two, issue 38).  A stamp is the runtime's when it has the form the
# line's own first stamp has (the same zone), and its time is not before the stamp before it nor
# more than ``_PARTIAL_GAP_NS`` after it (the records of one line are stamped as they are read).
_STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(Z|[+-]\d\d:\d\d) ")
_PARTIAL_GAP_NS = 3600 * 1_000_000_000


def rejoined(line: bytes) -> bytes:
    """A ``logs --timestamps`` line with the stamps of its continuation records taken out: the
    line's first stamp and the text as the container wrote it."""
    first = _STAMP.match(line)
    if first is None:
        return line
    zone = first.group(1)
    if line.count(zone + b" ", first.end()) == 0:
        return line  # the one look at the line this costs when nothing is in the middle
    prev = rfc3339_ns(first.group(0)[:-1])
    parts, start = [line[: first.end()]], first.end()
    for m in _STAMP.finditer(line, first.end()):
        if m.group(1) != zone or prev is None:
            continue
        at = rfc3339_ns(m.group(0)[:-1])
        if at is None or not prev <= at <= prev + _PARTIAL_GAP_NS:
            continue
        parts.append(line[start : m.start()])
        start, prev = m.end(), at
    parts.append(line[start:])
    return b"".join(parts)


def rejoined_block(block: bytes) -> bytes:
    """``rejoined`` of every line of a block of whole lines; a block whose lines each hold one
    zone marker (their own stamp's) is returned as it is, after one count."""
    first = _STAMP.match(block)
    if first is None:
        return block
    marker = first.group(1) + b" "
    if block.count(marker) <= block.count(b"\n"):
        return block
    return b"".join(rejoined(line) if line.count(marker) > 1 else line
                    for line in block.splitlines(keepends=True))


def line_time_ns(line: bytes) -> int | None:
    """The RFC 3339 time a log line starts with (``logs --timestamps``), ns since 1970."""
    head = line[:40].split(b" ", 1)[0]
    return rfc3339_ns(head) if len(head) >= 20 and head[4:5] == b"-" and head[10:11] == b"T" else None


def _journal_line(raw: bytes) -> tuple[str | None, bytes] | None:
    """A journal entry (``journalctl -o json``) as (its invocation id, ``TIME MESSAGE\\n``);
    None for what is not an entry.  MESSAGE is a string, or an array of bytes where it is not
    UTF-8."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    message = entry.get("MESSAGE")
    if isinstance(message, list):
        text = bytes(b for b in message if isinstance(b, int) and 0 <= b < 256)
    elif isinstance(message, str):
        text = message.encode("utf-8", "surrogatepass")
    else:
        return None
    try:
        micros = int(str(entry.get("__REALTIME_TIMESTAMP")))
        when = dt.datetime.fromtimestamp(micros / 1e6, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{micros % 1_000_000:06d}Z"
    except (TypeError, ValueError, OverflowError, OSError):
        when = ""
    invocation = entry.get("_SYSTEMD_INVOCATION_ID") or entry.get("INVOCATION_ID")
    text = text.replace(b"\n", b" ").rstrip(b"\r")
    return (str(invocation) if invocation else None), ((when + " ").encode() if when else b"") + text + b"\n"
