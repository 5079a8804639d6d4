"""Reading the ledger back: boot references, history rows, one boot's evidence, the export.

The export objects are a contract (documented in docs/output-contract.md): scripts rely on their
keys.  ``ledger serve``'s pages read through here too.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import defaultdict
from collections.abc import Callable, Generator, Iterator
from typing import Any, Generic, TypeVar

from ledger.parsers.units import MAX_FIGURE
from ledger.parsers.vocabulary import FactName, Verdict, summarize

from .db.connect import Ledger
from .db.reader import (
    BOOT_COLUMNS,
    Boot,
    Deploy,
    Fact,
    Reader,
    boots_where,
    chunks,
    deploys_where,
    facts_of,
    get_boot,
    get_deploy,
    in_list,
    with_children,
    with_deploys,
)
from .errors import LedgerError, shown
from .kvformula import check_lines_for_boot, formula_verdicts
from .render import boot_id, iso
from .settings import typed_settings
from .verdicts import FAILING, survival_verdict, verdicts, view_rows

INTEGER_UNITS = {"bytes", "tokens", "blocks", "slots"}  # counted, so exported (and diffed) as integers


def export_value(value: float | None, unit: str) -> float | int | None:
    if value is None:
        return None
    if unit in INTEGER_UNITS and float(value).is_integer():
        return int(value)
    return value


# -- references ---------------------------------------------------------------------------------


def as_id(ref: str) -> int | None:
    """``ref`` as a database id, or None: ASCII digits up to ``MAX_FIGURE``.  A longer number is
    no id (nor a database integer), and ``int`` refuses one of more than 4,300 digits with a
    ValueError; ``'²'`` is a digit to ``str.isdigit`` but no number to ``int``.  The one reader
    of a boot or deploy id a user gave (a boot id, ``deploy:N``, a page's path, ``deploy move``'s
    boots, ``kv_reference_boot``).

    >>> as_id("12"), as_id("9" * 5000), as_id("\u00b2"), as_id("12a")
    (12, None, None, None)
    """
    ref = ref.strip()
    if not (ref.isascii() and ref.isdigit()) or len(ref) > len(str(MAX_FIGURE)):
        return None
    number = int(ref)
    return number if number <= MAX_FIGURE else None


def resolve_boot(session: Reader, ref: str, default: str = "latest") -> Boot:
    """A boot id, or a deploy (commit or digest prefix, or label) meaning its latest boot
    (``default="ready"``: its latest ready boot); ``D@ready`` and ``D@latest`` say which."""
    return resolve_side(session, ref, default)[0]


SELECTORS = ("ready", "latest")


def split_selector(ref: str) -> tuple[str, str | None]:
    """``D@ready`` / ``D@latest`` -> (``D``, which of the deploy's boots); anything else is the
    reference as it is, with no selector (None).  The deploy part is resolved as any other."""
    ref = ref.strip()
    base, sep, which = ref.rpartition("@")
    if sep and base and which in SELECTORS:
        return base, which
    return ref, None


def resolve_side(session: Reader, ref: str, default: str = "latest") -> tuple[Boot, str | None]:
    """``resolve_boot``, and a notice when the boot chosen for a deploy is not its newest
    (a newer boot that did not come up, or no ready boot at all), or when a commit named
    several deploys and one was chosen (``_of_one_commit``)."""
    ref, which = split_selector(ref)
    number = as_id(ref) if which is None else None
    if number is not None:
        boot = get_boot(session, number)
        if boot is not None:
            return boot, None
    deploys = the_one_printed(resolve_deploys(session, ref), ref)
    if not deploys and is_deploy_ref(ref):
        raise LedgerError(f"{shown(ref)}: no such deploy (ledger deploy list shows them)")
    if not deploys:
        raise LedgerError(f"{shown(ref)}: no boot or deploy by that id, commit, digest or label")
    said = None
    if len(deploys) > 1:
        chosen = _of_one_commit(session, deploys, ref)
        if chosen is None:
            raise LedgerError(more_than_one(ref, deploys))
        said = (f"{shown(ref)} names {len(deploys)} deploys of commit {chosen.commit_sha[:10]} "  # type: ignore[index]
                f"({names_of(deploys)}): {deploy_name(chosen)} is taken (the"
                f"{' clean one' if not chosen.dirty and any(d.dirty for d in deploys) else ' one'} with the newest boot)")
        deploys = [chosen]
    boot, notice = pick_boot(session, deploys[0], which or default, explicit=which is not None)
    return boot, "; ".join(n for n in (said, notice) if n) or None


def names_of(deploys: list[Deploy]) -> str:
    """Deploys as a list of references each of them is taken by: their printed names, or
    ``deploy:N`` where two print alike (two unnamed deploys)."""
    names = [deploy_name(d) for d in deploys[:5]]
    if len(set(names)) < len(names):
        names = [f"deploy:{d.id}" for d in deploys[:5]]
    return ", ".join(names) + (", …" if len(deploys) > 5 else "")


def more_than_one(ref: str, deploys: list[Deploy]) -> str:
    """The one line that says a reference names several deploys, with a name for each."""
    return f"{shown(ref)}: names more than one deploy ({names_of(deploys)}); give one of these"


def the_one_printed(deploys: list[Deploy], ref: str) -> list[Deploy]:
    """Of several deploys a reference names (a commit prefix that is also a longer name's
    start), the one printed as ``ref`` when there is one; else all of them."""
    if len(deploys) > 1:
        printed = [d for d in deploys if deploy_name(d) == ref.strip()]
        if len(printed) == 1:
            return printed
    return deploys


def _of_one_commit(session: Reader, deploys: list[Deploy], ref: str) -> Deploy | None:
    """When ``ref`` is a commit (hex) and every deploy it names is of that one commit (another
    image, a dirty tree, a short sha stored): the one a commit means — a clean one if there is
    one, of those the one with the newest boot (the commit hook's HEAD, ``note <full sha>``).
    None when the deploys are of different commits (a prefix too short: more of it is needed)."""
    ref = ref.strip().lower()
    shas = [d.commit_sha or "" for d in deploys]
    if not _HEX_SHA.match(ref) or not all(shas):
        return None
    longest = max(shas, key=len)
    if not all(longest.startswith(c) for c in shas):
        return None
    clean = [d for d in deploys if not d.dirty] or deploys
    newest = [(b.started_at or "", b.id, d) for d in clean if (b := latest_boot(session, d.id)) is not None]
    if not newest:
        return clean[0]
    return max(newest, key=lambda t: (t[0], t[1]))[2]


def pick_boot(session: Reader, deploy: Deploy, which: str, explicit: bool = False) -> tuple[Boot, str | None]:
    """A deploy's latest boot (``which="latest"``) or latest ready one (``"ready"``), and a
    notice when a newer boot is passed over; with no ready boot, an error if ``@ready`` was
    asked for (``explicit``), else the latest boot and a notice that says so."""
    name = deploy_name(deploy)
    latest = latest_boot(session, deploy.id)
    if latest is None:
        raise LedgerError(f"{name}: that deploy has no boots")
    latest.deploy = deploy
    if which == "latest":
        return latest, None
    ready = latest_boot(session, deploy.id, outcome="ready")
    if ready is not None:
        ready.deploy = deploy
    if ready is None:
        if explicit:
            raise LedgerError(f"{name}@ready: that deploy has no ready boot (its latest, boot {latest.id}, "
                              f"is {latest.outcome})")
        return latest, f"{name} has no ready boot: boot {latest.id} is its latest ({latest.outcome})"
    if ready.id != latest.id:
        return ready, (f"{name}: boot {ready.id} is its latest ready boot; the newer boot {latest.id} "
                       f"({latest.outcome}) is passed over ({name}@latest for it)")
    return ready, None


_DEPLOY_REF = re.compile(r"deploy:(\d+)(?:\s+\(.*\))?", re.DOTALL)
_HEX_SHA = re.compile(r"[0-9a-f]{7,64}")
UNNAMED = "(unnamed)"  # deploy_name of a deploy with no label, commit or image


def deploy_ref(ref: str) -> int | None:
    """The id a ``deploy:N`` reference names (``deploy list``'s deploy column; ``deploy:N
    (name)`` as ``ingest`` and ``deploy move`` print it), else None (a commit, a digest, a
    label, or a number no database holds).  The one place the form is read: a selector after the
    id (``deploy:3@ready``) is split off before (``ref.partition("@")``), by whoever reads it.

    >>> deploy_ref("deploy:3"), deploy_ref("deploy:3 (qwen-fp8)"), deploy_ref("qwen-fp8"), deploy_ref("deploy:x")
    (3, 3, None, None)
    >>> deploy_ref("deploy:" + "9" * 5000)
    """
    found = _DEPLOY_REF.fullmatch(ref.strip())
    return as_id(found.group(1)) if found is not None else None


def is_deploy_ref(ref: str) -> bool:
    """Whether ``ref`` has the form ``deploy:N`` or ``deploy:N (name)`` (digits of any length,
    ``deploy_ref`` or not): it names a deploy by its id, never a label, commit or digest."""
    return _DEPLOY_REF.fullmatch(ref.strip()) is not None


def resolve_deploys(session: Reader, ref: str) -> list[Deploy]:
    """The deploys ``ref`` names — every name the ledger prints for a deploy is taken back:
    ``deploy:N`` or ``deploy:N (name)`` (its id); else a label; else a commit or image digest
    prefix, or a commit the ref begins with (a short sha stored, the full one given); else a
    name as ``deploy_name`` prints it (``qwen-fp8 / fe20ea6cc4 / da402966aaaa``,
    ``fe20ea6cc4+dirty``, ``(unnamed)``).  A label that matches wins over a prefix; of several
    found, ``the_one_printed`` keeps the one printed as ``ref`` where a single deploy is wanted."""
    ref = ref.strip()
    if not ref:
        return []
    if is_deploy_ref(ref):
        number = deploy_ref(ref)
        d = None if number is None else get_deploy(session, number)
        return [d] if d is not None else []
    digest = ref if ref.startswith("sha256:") else f"sha256:{ref}"
    where, params = "label = :ref", {"ref": ref}
    if len(ref) >= 4:  # a prefix: LIKE with its wildcards escaped
        where += " OR commit_sha LIKE :commit ESCAPE '/' OR image_digest LIKE :digest ESCAPE '/'"
        params.update(commit=_like_prefix(ref), digest=_like_prefix(digest))
    if _HEX_SHA.fullmatch(ref.lower()):  # a longer sha than the one stored (--commit <short sha>)
        where += (" OR (length(commit_sha) >= 7 AND length(commit_sha) < length(:sha)"
                  " AND substr(:sha, 1, length(commit_sha)) = commit_sha)")
        params["sha"] = ref.lower()
    found = deploys_where(session, where, params)
    exact = [d for d in found if d.label == ref]
    if exact or found:
        return exact or found
    if " / " in ref or ref.endswith("+dirty") or ref == UNNAMED:
        return [d for d in deploys_where(session) if deploy_name(d) == ref]
    return []


def _like_prefix(text: str) -> str:
    """``text%`` for a LIKE, its ``%``, ``_`` and ``/`` escaped with ``/``."""
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"


def one_deploy(session: Reader, ref: str, by_id: bool = False) -> Deploy:
    """The one deploy ``ref`` names: a commit or digest prefix or a label (``by_id``: its id
    first, as ``ledger serve``'s links give it); an error for none or several."""
    number = as_id(ref) if by_id else None
    if number is not None:
        d = get_deploy(session, number)
        if d is not None:
            return d
    deploys = the_one_printed(resolve_deploys(session, ref), ref)
    if not deploys and is_deploy_ref(ref):
        raise LedgerError(f"{shown(ref)}: no such deploy (ledger deploy list shows them)")
    if not deploys:
        raise LedgerError(f"{shown(ref)}: no deploy by that {'id, ' if by_id else ''}commit, digest or label")
    if len(deploys) > 1:
        raise LedgerError(more_than_one(ref, deploys))
    return deploys[0]


def deploys_named(session: Reader, ref: str) -> list[Deploy]:
    """``resolve_deploys``, or the error that no deploy goes by ``ref``."""
    deploys = resolve_deploys(session, ref)
    if not deploys and is_deploy_ref(ref):
        raise LedgerError(f"{shown(ref)}: no such deploy (ledger deploy list shows them)")
    if not deploys:
        raise LedgerError(f"{shown(ref)}: no deploy by that commit, digest or label")
    return deploys


def newest_first(session: Reader, where: str = "1 = 1", params: dict[str, Any] | None = None,
                 limit: int | None = None) -> Generator[Boot, None, None]:
    """The boots ``where`` picks newest first (started_at descending, the boots without one last,
    then id descending), ``limit`` of them, read as they come: the started ones and the others
    in two queries, each a walk of an index on (…, started_at, id) — one ``ORDER BY started_at
    DESC NULLS LAST`` cannot use such an index on PostgreSQL, and sorts every boot first."""
    left = limit
    for part, order in (("started_at IS NOT NULL", "started_at DESC, id DESC"), ("started_at IS NULL", "id DESC")):
        sql = f"SELECT {BOOT_COLUMNS} FROM boot WHERE ({where}) AND {part} ORDER BY {order}"
        if left is not None:
            if left <= 0:
                return
            sql += f" LIMIT {int(left)}"
        for rows in session.batches(sql, params, CHUNK):
            if left is not None:
                left -= len(rows)
            yield from (Boot(*row) for row in rows)


def latest_boot(session: Reader, deploy_id: int, outcome: str | None = None) -> Boot | None:
    where, params = "deploy_id = :deploy", dict[str, Any](deploy=deploy_id)
    if outcome is not None:
        where += " AND outcome = :outcome"
        params["outcome"] = outcome
    boots = newest_first(session, where, params, 1)
    try:
        return next(boots, None)
    finally:
        boots.close()


def deploy_name(d: Deploy) -> str:
    """How a deploy is printed (history, deploy list, diff, the web's lists): its label, commit
    (``+dirty``) and image digest, short, or ``(unnamed)``; ``resolve_deploys`` takes it back."""
    parts = []
    if d.label:
        parts.append(d.label)
    if d.commit_sha:
        parts.append(d.commit_sha[:10] + ("+dirty" if d.dirty else ""))
    if d.image_digest:
        parts.append(d.image_digest.removeprefix("sha256:")[:12])
    return " / ".join(parts) or UNNAMED


# -- summaries ----------------------------------------------------------------------------------


def boot_summaries(session: Reader, boot_ids: list[int]) -> dict[int, dict[str, Fact]]:
    """Per boot, the one reported fact per name (facts.md summary rule: min capacity, max cost)."""
    by_boot: dict[int, dict[str, list[Fact]]] = defaultdict(lambda: defaultdict(list))
    for bid, facts in facts_of(session, boot_ids).items():
        for f in facts:
            by_boot[bid][f.name].append(f)
    # every list holds a fact, so every name has its summary
    return {bid: {name: summary for name, facts in names.items() if (summary := summarize(name, facts)) is not None}
            for bid, names in by_boot.items()}


# every field of a history row (json, jsonl, csv, --wide); the table shows ``HISTORY_COMPACT``
HISTORY_COLUMNS = ["boot", "started_at", "year_inferred", "deploy", "engine_version", "outcome", "kv_tokens",
                   "concurrency", "kv_memory", "weights", "kv_check", "formula_check", "contract", "vram_check",
                   "host_check", "survival", "verdict", "source_path", "first_line", "last_line"]
HISTORY_COMPACT = ["boot", "started_at", "deploy", "engine_version", "outcome", "kv_tokens", "concurrency",
                   "verdict"]
# how a boot that did not come up or did not survive outranks any figure (its figures passing
# is no proof it serves), a failing verdict a passing one, a passing one a reference (the
# group's KV reference: predicted from itself, so no test), and that no verdict at all
_VERDICT_RANK: dict[str, float] = {Verdict.failed: 6, Verdict.crashed: 5, Verdict.broken: 4, Verdict.over: 3,
                                   Verdict.off: 2, Verdict.ok: 1, Verdict.reference: 0.5, Verdict.insufficient: 0,
                                   Verdict.unsupported: 0, Verdict.running: 0}
# no verdict of the boot's: too few figures, the formula unable to say, or running where its
# log ends (the log shows no end: a past boot in history is not "running" now)
_NO_VERDICT = (None, Verdict.insufficient, Verdict.unsupported, Verdict.running)


def overall_verdict(checks: dict[str, str]) -> str | None:
    """A boot's verdicts as one word: the worst of them (``crashed`` over ``ok``, ``off`` over
    ``ok``, ``ok`` over ``reference``; None when no view had enough figures)."""
    worst = max(checks.values(), key=lambda v: _VERDICT_RANK.get(v, 0), default=None)
    return None if worst in _NO_VERDICT else worst


CHUNK = 100  # boots read (and their facts and verdicts looked up) at a time while streaming


def iter_history(ledger: Ledger, deploy: str | None = None, outcome: str | None = None,
                 since: str | None = None, limit: int | None = None,
                 boot_ids: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """History rows (the output contract's values), newest first, as they are read: ``CHUNK``
    boots at a time, so memory stays flat at any ledger size.  ``since`` is a stored-format
    timestamp (``YYYY-MM-DD HH:MM:SS``, see ``ledger.since``); ``boot_ids`` limits them to
    those boots (``ledger serve``)."""
    with ledger.reading() as s:
        where: list[str] = ["1 = 1"]
        params: dict[str, Any] = {}
        if boot_ids is not None:
            where.append(f"id IN {in_list('id', boot_ids, params)}")
        if deploy:
            deploys = deploys_named(s, deploy)
            where.append(f"deploy_id IN {in_list('deploy', [d.id for d in deploys], params)}")
        if outcome:
            where.append("outcome = :outcome")
            params["outcome"] = outcome
        if since:
            where.append("started_at >= :since")
            params["since"] = since
        for boots in _chunked(newest_first(s, " AND ".join(where), params, limit or None), CHUNK):
            yield from _history_rows(ledger, s, with_deploys(s, boots))


def _chunked(items: Iterator[Boot], n: int) -> Iterator[list[Boot]]:
    chunk: list[Boot] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == n:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


T = TypeVar("T")
REPLAY_HOLD = 1000  # rows a Replay holds to give again (a history row: about a kilobyte)


class Replay(Generic[T]):
    """A row source read more than once (a history table: whether there is a row, the column
    widths, then the lines) that reads the ledger once when its rows are few: a reading holds
    up to ``hold`` rows, and when the rows end within them every later reading gives the held
    rows again; more rows are read again from the ledger each time (memory stays flat at any
    size).  ``source()`` gives a new iterator of the rows."""

    def __init__(self, source: Callable[[], Iterator[T]], hold: int | None = None):
        self.source, self.hold = source, REPLAY_HOLD if hold is None else hold
        self._held: list[T] | None = None  # every row, once a reading ended within ``hold``
        self._begun: Iterator[T] | None = None  # a reading ``any()`` began, for the next call

    def any(self) -> bool:
        """Whether there is a row (the reading this begins is the next call's)."""
        rows = self()
        first = next(rows, None)
        if first is None:
            return False
        self._begun = itertools.chain([first], rows)
        return True

    def __call__(self) -> Iterator[T]:
        if self._held is not None:
            return iter(self._held)
        if self._begun is not None:
            begun, self._begun = self._begun, None
            return begun
        return self._reading()

    def _reading(self) -> Iterator[T]:
        held: list[T] | None = []
        for row in self.source():
            if held is not None:
                held.append(row)
                if len(held) > self.hold:
                    held = None
            yield row
        if held is not None:
            self._held = held


def history(ledger: Ledger, deploy: str | None = None, outcome: str | None = None,
            since: str | None = None, limit: int | None = None,
            boot_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """``iter_history``'s rows as a list (for a page or a chart that needs them all)."""
    return list(iter_history(ledger, deploy, outcome, since, limit, boot_ids))


def _history_rows(ledger: Ledger, s: Reader, boots: list[Boot]) -> list[dict[str, Any]]:
    sums = boot_summaries(s, [b.id for b in boots])
    checks = verdicts(ledger, [b.id for b in boots])
    for bid, verdict in formula_verdicts(ledger, [b.id for b in boots]).items():
        checks[bid]["formula"] = verdict  # the KV tokens from the model's geometry (ledger.kvformula)
    for b in boots:  # how it ended: the stored outcome says it (ledger.verdicts.survival words it)
        checks[b.id]["survival"] = survival_verdict(b.outcome, b.ended)
    rows = []
    for b in boots:
        fs = sums.get(b.id, {})
        kv_mem = fs.get(FactName.kv_cache_reserved_bytes) or fs.get(FactName.available_kv_cache_bytes)
        rows.append({
            "boot": boot_id(b.id),
            "started_at": iso(b.started_at),
            "year_inferred": bool(b.year_inferred) if b.started_at else None,
            "deploy": deploy_name(b.deploy),
            "engine_version": b.engine_version,
            "outcome": b.outcome,
            "kv_tokens": _v(fs.get(FactName.kv_cache_tokens)),
            "concurrency": _v(fs.get(FactName.max_concurrency)),
            "kv_memory": _v(kv_mem),
            "weights": _v(fs.get(FactName.model_weights_bytes)),
            "kv_check": checks[b.id].get("kv"),
            "formula_check": checks[b.id].get("formula"),
            "contract": checks[b.id].get("capacity"),
            "vram_check": checks[b.id].get("vram"),
            "host_check": checks[b.id].get("host"),
            "survival": checks[b.id]["survival"],
            "verdict": overall_verdict(checks[b.id]),
            "source_path": b.source_path,
            "first_line": b.first_line,
            "last_line": b.last_line,
        })
    return rows

def _v(fact: Fact | None) -> float | int | None:
    return export_value(fact.value, fact.unit) if fact is not None else None


# -- one boot -------------------------------------------------------------------------------------


EXPORT_ORDER = "started_at ASC NULLS FIRST, id ASC"  # oldest first, the boots without a start first


def _load(session: Reader, boot_ids: list[int]) -> list[Boot]:
    params: dict[str, Any] = {}
    return with_children(session, boots_where(session, f"id IN {in_list('id', boot_ids, params)}", params,
                                              EXPORT_ORDER))


def runtime_counts(session: Reader, boot_ids: list[int]) -> dict[int, dict[str, int]]:
    """Per boot, its samples of each kind (stored with them: ``boot_runtime``)."""
    counts: dict[int, dict[str, int]] = defaultdict(lambda: {"engine_stats": 0, "spec_decode": 0})
    for chunk in chunks(boot_ids):
        params: dict[str, Any] = {}
        for bid, stats, spec in session.tuples("SELECT boot_id, engine_stats, spec_decode FROM boot_runtime "
                                               f"WHERE boot_id IN {in_list('b', chunk, params)}", params):
            counts[bid] = {"engine_stats": stats, "spec_decode": spec}
    return counts


def boot_origins(session: Reader, boot_ids: list[int]) -> dict[int, dict[str, str]]:
    """Per boot, what its container's or unit's runtime reported (``boot_origin``; empty for a
    boot read from a file)."""
    found: dict[int, dict[str, str]] = defaultdict(dict)
    for chunk in chunks(boot_ids):
        params: dict[str, Any] = {}
        for bid, key, value in session.tuples('SELECT boot_id, "key", value FROM boot_origin '
                                              f"WHERE boot_id IN {in_list('b', chunk, params)} ORDER BY boot_id, id",
                                              params):
            found[bid][key] = value
    return found


def export_boot(b: Boot, counts: dict[str, int], origin: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "boot": str(b.id),
        "source": {"path": b.source_path, "sha256": b.source_sha256, "first_line": b.first_line,
                   "last_line": b.last_line},
        "deploy": {"id": b.deploy_id, "commit": b.deploy.commit_sha,
                   "image_digest": b.deploy.image_digest, "label": b.deploy.label},
        "origin": origin or {},
        "engine": {"name": b.engine_name, "version": b.engine_version, "commit": b.engine_commit},
        "outcome": b.outcome,
        "ended": {"how": b.ended, "stop_line": b.stop_line},
        "started_at": iso(b.started_at),
        "year_inferred": bool(b.year_inferred) if b.started_at else None,
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


def iter_export(ledger: Ledger, refs: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Export objects, oldest boot first, as they are read (``CHUNK`` boots at a time);
    ``refs`` as for ``resolve_boot`` (all boots if empty)."""
    with ledger.reading() as s:
        where, params = "1 = 1", dict[str, Any]()
        if refs:
            where = f"id IN {in_list('id', [resolve_boot(s, r).id for r in refs], params)}"
        sql = f"SELECT {BOOT_COLUMNS} FROM boot WHERE {where} ORDER BY {EXPORT_ORDER}"
        for rows in s.batches(sql, params, CHUNK):
            boots = with_children(s, [Boot(*row) for row in rows])
            counts = runtime_counts(s, [b.id for b in boots])
            origins = boot_origins(s, [b.id for b in boots])
            objs = [export_boot(b, counts[b.id], origins.get(b.id)) for b in boots]
            yield from objs


def export(ledger: Ledger, refs: list[str] | None = None) -> list[dict[str, Any]]:
    """Export objects, oldest boot first; ``refs`` as for ``resolve_boot`` (all boots if empty)."""
    return list(iter_export(ledger, refs))


def show(ledger: Ledger, ref: str) -> dict[str, Any]:
    with ledger.reading() as s:
        bid = resolve_boot(s, ref).id
        b = _load(s, [bid])[0]
        obj = export_boot(b, runtime_counts(s, [bid])[bid], boot_origins(s, [bid]).get(bid))
        obj["shape_sources"] = {sh.key: sh.source for sh in b.shape}
        obj["summary"] = {name: _v(f) for name, f in boot_summaries(s, [bid]).get(bid, {}).items()}
        obj["access_lines"] = b.access_lines
        obj["request_lines"] = b.request_lines
    obj["checks"] = check_lines_for_boot(ledger, bid)
    return obj


def boot_count(ledger: Ledger) -> int:
    """How many boots the ledger holds (to tell "nothing matches" from "nothing stored")."""
    with ledger.reading() as s:
        return int(s.scalar("SELECT COUNT(*) FROM boot"))


# -- ledger serve's pages -----------------------------------------------------------------------


def deploy_obj(d: Deploy) -> dict[str, Any]:
    """A deploy as ``ledger serve``'s pages give it."""
    return {"id": d.id, "name": deploy_name(d), "commit": d.commit_sha, "image_digest": d.image_digest,
            "label": d.label, "dirty": d.dirty}


def _failing_first(row: dict[str, Any]) -> int:
    return 0 if any(v in FAILING for v in row["verdicts"].values()) else 1


def deploy_overview(ledger: Ledger) -> list[dict[str, Any]]:
    """Every deploy: its latest boot (a ``history`` row), the latest boot's verdicts, how many
    boots, when last seen.  Deploys whose latest boot failed or crashed, or has an off, broken or
    over verdict, first, then the most recently seen.  (``ledger serve``'s front page.)"""
    with ledger.reading() as s:
        deps = deploys_where(s)
        latest = {}
        for d in deps:  # each deploy's newest boot: a walk of its index (newest_first)
            b = latest_boot(s, d.id)
            if b is not None:
                latest[d.id] = (b.id, b.started_at)
        counts = dict(s.tuples("SELECT deploy_id, COUNT(*) FROM boot GROUP BY deploy_id"))
        by_id = {d.id: deploy_obj(d) for d in deps}
    ids = [bid for bid, _ in latest.values()]
    rows_by_boot = {int(r["boot"]): r for r in history(ledger, boot_ids=ids)} if ids else {}
    # the history rows carry the KV and capacity verdicts; the ceilings' view is cheap (the KV
    # reconciliation view is the costly one: it is evaluated once, by history)
    ceilings = {r["boot_id"]: r for r in view_rows(ledger, "budget_ceilings", ids)} if ids else {}
    out = []
    for did, (bid, started) in latest.items():
        row, ceiling = rows_by_boot[bid], ceilings.get(bid, {})
        out.append({"deploy": by_id[did], "boots": counts.get(did, 0), "last_seen": started,
                    "latest": row, "verdicts": {"survival": row["survival"], "kv": row["kv_check"],
                                                "formula": row["formula_check"], "capacity": row["contract"],
                                                "vram": ceiling.get("vram_verdict"),
                                                "host": ceiling.get("host_verdict")}})
    live = watched(ledger)
    for r in out:
        r["watched"] = live["deploys"].get(r["deploy"]["id"], [])
    out.sort(key=lambda r: r["last_seen"] or "", reverse=True)
    out.sort(key=_failing_first)  # stable: failing first, each group newest first
    return out


def deploy_detail(ledger: Ledger, ref: str) -> dict[str, Any]:
    """A deploy (``ref``: its id first, as the pages link it), its settings and its boots
    (``history`` rows, newest first) with the figures the deploy chart draws."""
    with ledger.reading() as s:
        d = one_deploy(s, ref, by_id=True)
        obj = deploy_obj(d)
        settings = typed_settings(dict(s.tuples('SELECT "key", value FROM deploy_setting WHERE deploy_id = :d '
                                                "ORDER BY id", {"d": d.id})))
        ids = s.scalars("SELECT id FROM boot WHERE deploy_id = :d ORDER BY id", {"d": d.id})
    rows = history(ledger, boot_ids=ids) if ids else []
    return {"deploy": obj, "settings": settings, "boots": rows, "figures": boot_figures(ledger, ids)}


# what a deploy's boots are charted by beyond their history row's figures
EXTRA_FACTS = {"graph_memory": "graph_capture_bytes"}


def boot_figures(ledger: Ledger, boot_ids: list[int]) -> dict[str, dict[str, Any]]:
    """Per boot (keyed by its id as the output contract writes it: a string), the charted
    figures its history row lacks (the facts.md summary of each), null where not printed."""
    with ledger.reading() as s:
        sums = boot_summaries(s, boot_ids)
    out: dict[str, dict[str, Any]] = {}
    for bid in boot_ids:
        facts = sums.get(bid, {})
        out[str(bid)] = {col: export_value(facts[name].value, facts[name].unit) if name in facts else None
                         for col, name in EXTRA_FACTS.items()}
    return out


def boot_neighbours(ledger: Ledger, boot: int) -> dict[str, Any]:
    """What a boot's page shows beside ``show``'s object: its deploy's id and name, when it
    was ready and last logged, and the deploy's other boots, newest first (the diff links)."""
    with ledger.reading() as s:
        b = get_boot(s, boot)
        if b is None:
            raise LedgerError(f"{boot}: no boot or deploy by that id, commit, digest or label")
        others = [o.id for o in newest_first(s, "deploy_id = :deploy AND id != :boot",
                                             {"deploy": b.deploy_id, "boot": boot})]
        return {"deploy": {"id": b.deploy_id, "name": deploy_name(b.deploy)}, "ready_at": b.ready_at,
                "ended_at": b.ended_at, "other_boots": others}


def watched(ledger: Ledger) -> dict[str, dict[int, Any]]:
    """What ``ledger watch`` is reading now (its ``watch`` rows: not stopped, touched within
    ``STALE_S``): per deploy id, the sources watched into it; per boot id still running, its
    watch (source, host, since)."""
    import datetime as dt

    from .db.watching import STALE_S

    fresh = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=STALE_S)).isoformat(timespec="seconds")
    with ledger.reading() as s:
        rows = s.rows("SELECT source, host, started_at, seen_at, live_boot_id, deploy_id FROM watch "
                      "WHERE stopped_at IS NULL AND seen_at >= :fresh ORDER BY id", {"fresh": fresh})
        out: dict[str, dict[int, Any]] = {"deploys": {}, "boots": {}}
        for w in rows:
            if w["deploy_id"] is not None:
                out["deploys"].setdefault(w["deploy_id"], []).append(w["source"])
            if w["live_boot_id"] is not None:
                out["boots"][w["live_boot_id"]] = {"source": w["source"], "host": w["host"],
                                                   "since": w["started_at"], "seen_at": w["seen_at"]}
    return out


DIFF_CHOICES = 200  # the newest boots the diff page offers to pick from (any other is typed in)


def diff_choices(ledger: Ledger, limit: int = DIFF_CHOICES) -> list[dict[str, Any]]:
    """Boots to pick from on the diff page: id, deploy, start, outcome (the ``limit`` newest)."""
    with ledger.reading() as s:
        boots = with_deploys(s, list(newest_first(s, limit=limit)))
        return [{"boot": b.id, "started": b.started_at, "outcome": b.outcome, "deploy": deploy_name(b.deploy)}
                for b in boots]
