"""Every write the ledger takes, through a ``Writer``: boots (``ledger ingest``, ``ledger copy``),
the whole input's digest on boots read from a stream, and deploy settings (``ledger deploy set``).

* Each boot is written whole in one transaction, alone or with the boots before it in its input
  (``store_boots``; SQLite: BEGIN IMMEDIATE, the write lock taken at once); a boot whose content
  is already in the ledger, or whose file is, is not stored again.
* The rows of a table are bound as tuples in the order of ``columns.COLUMNS`` (the models'
  order), by name: nothing here spells a column list of its own.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
from dataclasses import dataclass, field
from typing import Any

from ledger import parsers

from ..errors import LedgerError
from ..settings import FORMULA_SETTINGS
from .columns import COLUMNS
from .formula import BUDGET_FACTS, SHAPE_KEYS, Known, record_kv_formula, repredict_deploy
from .staging import (
    FEBRUARY_29,
    KIND_CODES,
    LEAP_YEAR_START,
    MARCH_1,
    STORED_SERIES,
    SampleSpool,
    stamp_text,
)
from .writer import Writer, retrying, to_json

# the PostgreSQL advisory lock writers take sample ids (and, from store_boots, write) under
SAMPLE_ID_LOCK = 731078


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass
class DeployInfo:
    commit: str | None = None
    image: str | None = None
    label: str | None = None
    dirty: bool | None = None
    relabel: bool = False  # a --label that differs from the deploy's renames it (else: refused)

    def identity(self) -> str:
        if self.commit or self.image:
            return f"commit={self.commit or ''};image={self.image or ''}"
        if self.label:
            return f"label={self.label}"
        return ""


def plain_text(value: Any) -> str | None:
    """A shape value as plain text for SQL (``fp8``, ``2``, ``true``); JSON for lists and dicts."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return to_json(value)


# the columns of a boot's child rows but boot_id, in the table's order: the tuples of
# insert_boot follow them
CHILD_COLUMNS = {table: [c for c in COLUMNS[table] if c != "boot_id"] for table in ("shape", "fact", "failure")}


def _ordered(table: str, row: dict[str, Any]) -> tuple:
    return tuple(row[c] for c in CHILD_COLUMNS[table])


def store_boot(writer: Writer, boot: parsers.Boot, source_path: str, sha256: str | None,
               info: DeployInfo, spool: SampleSpool | None = None, origin: dict[str, str] | None = None,
               told: dict[str, Any] | None = None) -> int | None:
    """Write one boot in one transaction; returns its id, or None if it was already there
    (the same content, from this file or another).  ``origin``: the boot's ``boot_origin``
    rows (a container's or unit's facts); ``told`` is given, read in the same transaction,
    the boot's ``deploy`` (the stored one's, for a boot already there), the ids of the
    shorter versions it ``superseded`` (a grown log) and, for a boot already there, the
    ``source`` and boot index it was stored from (``same_as``)."""
    pending = Pending(boot, source_path, sha256, info, spool, origin or {})
    store_boots(writer, [pending])
    if told is not None:
        told.update(pending.told)
    return pending.id


@dataclass
class Pending:
    """A boot on its way into the ledger (``store_boots``) and, once written, what became of
    it: ``id`` (None: it was there already) and ``told`` (see ``store_boot``)."""

    boot: parsers.Boot
    source_path: str
    sha256: str | None
    info: DeployInfo
    spool: SampleSpool | None = None
    origin: dict[str, str] = field(default_factory=dict)
    id: int | None = None
    told: dict[str, Any] = field(default_factory=dict)


def store_boots(writer: Writer, pending: list[Pending]) -> None:
    """Write boots in one transaction, in order: all of them or, if it fails, none.  A commit
    costs more than a small boot's rows (a sync of the disk): many small boots of one input go
    in together (``ledger.ingest``).  On PostgreSQL the transaction first takes the writers'
    lock (the one sample ids are taken under), so two ingests' groups of boots never wait on
    each other's rows: one goes after the other."""
    steps = []
    for p in pending:
        info = p.info
        if not info.image and len(p.boot.image_digests) == 1:
            # the log printed its own image digest: key the deploy by it
            info = DeployInfo(info.commit, p.boot.image_digests[0], info.label, info.dirty, info.relabel)
        boot = p.boot
        year = (boot.started_at or boot.ready_at or boot.ended_at or "")[:4] or None
        spool = p.spool
        attached = spool is not None and spool.staging is not None and spool.table is not None and spool.staging.attached
        if spool is not None and attached:
            spool.flush()  # all of it into the staging table, which the writer's connection sees
        steps.append((p, info, year, attached))

    def write() -> None:
        with writer.transaction() as cur:
            if not writer.is_sqlite:
                cur.execute(f"SELECT pg_advisory_xact_lock({SAMPLE_ID_LOCK})")
            for p, info, year, attached in steps:
                p.told = {}  # a retried transaction tells again
                p.id = _store_boot_once(writer, cur, p.boot, p.source_path, p.sha256, info, p.spool, attached,
                                        year, p.origin, p.told)

    retrying(write)


def deploy_id(writer: Writer, cur: Any, identity: str, new: dict[str, Any], label: str | None = None,
              relabel: bool = True) -> int:
    """The id of the deploy with this identity, created with the columns ``new`` if there is
    none; ``label`` renames it if ``relabel`` (a label names the deploy; it is not a measured
    figure), else a different label is refused (``label_conflict``)."""
    cur.execute(f"SELECT id, label FROM deploy WHERE identity = {writer.mark}", (identity,))
    row = cur.fetchone()
    if row is None:
        return writer.insert(cur, "deploy", {"identity": identity, **new})
    if label and row[1] and row[1] != label and not relabel:
        raise LedgerError(label_conflict(row[0], row[1], label))
    if label and row[1] != label:
        cur.execute(f"UPDATE deploy SET label = {writer.mark} WHERE id = {writer.mark}", (label, row[0]))
    return row[0]


def label_conflict(deploy: int, label: str, wanted: str) -> str:
    """The one line that refuses ``--label wanted`` on a deploy labelled otherwise."""
    return (f"--label {wanted}: deploy:{deploy} (this commit and image) is labelled {label}; rename it with "
            f"`ledger deploy label deploy:{deploy} {wanted}`, or ingest with --relabel")


def check_label(writer: Writer, info: DeployInfo) -> None:
    """Refuse, before anything is stored, an ingest whose ``--label`` differs from the label of
    the deploy its commit and image name (unless ``info.relabel``)."""
    if not info.label or info.relabel or not (info.commit or info.image):
        return
    with writer.transaction() as cur:
        cur.execute(f"SELECT id, label FROM deploy WHERE identity = {writer.mark}", (info.identity(),))
        row = cur.fetchone()
    if row is not None and row[1] and row[1] != info.label:
        raise LedgerError(label_conflict(row[0], row[1], info.label))


def deploy_names(writer: Writer, deploys: list[int]) -> dict[int, str]:
    """How an ingest line names each deploy: ``deploy:N`` and its label, else its commit and
    image (short), else ``unnamed``."""
    q = writer.mark
    names: dict[int, str] = {}
    if not deploys:
        return names
    with writer.transaction() as cur:
        for d in dict.fromkeys(deploys):
            cur.execute(f"SELECT label, commit_sha, image_digest FROM deploy WHERE id = {q}", (d,))
            row = cur.fetchone()
            if row is None:
                continue
            label, commit, image = row
            said = label or " ".join(x for x in (commit[:10] if commit else "",
                                                  image.removeprefix("sha256:")[:12] if image else "") if x)
            names[d] = f"deploy:{d} ({said or 'unnamed'})"
    return names


def is_stored(writer: Writer, cur: Any, content_sha256: str) -> bool:
    """Whether a boot with this content is in the ledger (from this file or another)."""
    cur.execute(f"SELECT id FROM boot WHERE content_sha256 = {writer.mark}", (content_sha256,))
    return cur.fetchone() is not None


def insert_boot(writer: Writer, cur: Any, deploy: int, boot: dict[str, Any], shape: list[tuple], facts: list[tuple],
                failures: list[tuple], predict: bool = True) -> int:
    """A boot row and its shape, fact and failure rows (each in its table's column order but the
    boot id), and what its group's KV reference needs; the new boot's id.  Its runtime samples
    follow (``store_samples``).  ``predict=False``: the caller records the KV formula's
    prediction itself, once the samples are stored."""
    bid = writer.insert(cur, "boot", {"deploy_id": deploy, **boot})
    for table, rows in (("shape", shape), ("fact", facts), ("failure", failures)):
        writer.insert_many(cur, table, ["boot_id", *CHILD_COLUMNS[table]], [(bid, *row) for row in rows])
    record_kv_candidate(writer, cur, bid)
    if predict:
        record_kv_formula(writer, cur, bid)  # its KV tokens from its model's geometry (ledger.formula)
    return bid


def known_of(boot: parsers.Boot, spec_decode_samples: int) -> Known:
    """What the KV formula takes from a boot, from the parsed boot its rows are written from
    (``_boot_rows``): as the prediction would read it back from them."""
    shape = {v.key: plain_text(v.value) for v in boot.shape.values() if v.key in SHAPE_KEYS}
    concurrency = [float(f.value) for f in boot.facts if f.name == "max_concurrency_tokens"]
    return Known(shape=shape, concurrency_tokens=min(concurrency) if concurrency else None,
                 budget_processes=[(f.process, f.rank) for f in boot.facts if f.name in BUDGET_FACTS],
                 args_printed=any(v.source in ("args", "engine_config") for v in boot.shape.values()),
                 spec_decode_samples=spec_decode_samples)


def _boot_rows(boot: parsers.Boot, source_path: str, sha256: str | None) -> tuple[dict[str, Any], list, list, list]:
    """A parsed boot as ``insert_boot`` takes it: the boot row, its shape, fact and failure rows."""
    row = dict(
        content_sha256=boot.content_sha256, source_path=source_path, source_sha256=sha256 or None,
        boot_index=boot.index, first_line=boot.first_line, last_line=boot.last_line,
        engine_name=boot.engine_name, engine_version=boot.engine_version, engine_commit=boot.engine_commit,
        image_digest_in_log=boot.image_digests[0] if boot.image_digests else None,
        outcome=boot.outcome, ended=boot.ended, stop_line=boot.stop_line, started_at=boot.started_at, year_inferred=boot.year_inferred,
        ready_line=boot.ready_line, ready_at=boot.ready_at, ended_at=boot.ended_at,
        access_lines=boot.access_lines, request_lines=boot.request_lines, ingested_at=_now(),
    )
    shape = [_ordered("shape", dict(key=v.key, value=to_json(v.value), value_text=plain_text(v.value),
                                    source=v.source, line=v.line, pack=v.pack)) for v in boot.shape.values()]
    # a fact's value is a number: float() refuses anything else before it reaches the table
    facts = [_ordered("fact", dict(name=f.name, value=float(f.value), unit=f.unit, precision=f.precision,
                                   rank=f.rank, process=f.process, line=f.line, text=f.text, pack=f.pack))
             for f in boot.facts]
    failures = [_ordered("failure", dict(kind=f.kind, phase=f.phase or "unknown", line=f.line, text=f.text,
                                         rank=f.rank, process=f.process, figures=to_json(f.figures), pack=f.pack,
                                         logged_at=f.logged_at)) for f in boot.failures]
    return row, shape, facts, failures


def _store_boot_once(writer: Writer, cur: Any, boot: parsers.Boot, source_path: str, sha256: str | None,
                     info: DeployInfo, spool: SampleSpool | None, attached: bool, year: str | None,
                     origin: dict[str, str], told: dict[str, Any]) -> int | None:
    """One boot's rows, in the caller's transaction; its id, or None if it was there already."""
    row, shape, facts, failures = _boot_rows(boot, source_path, sha256)
    cur.execute(f"SELECT deploy_id, source_path, boot_index FROM boot WHERE content_sha256 = {writer.mark}",
                (boot.content_sha256,))
    there = cur.fetchone()
    if there is not None:
        told["deploy"], told["same_as"] = there[0], (there[1], there[2])
        return None
    if sha256:
        cur.execute(f"SELECT deploy_id FROM boot WHERE source_sha256 = {writer.mark} AND boot_index = {writer.mark}",
                    (sha256, boot.index))
        there = cur.fetchone()
        if there is not None:
            told["deploy"] = there[0]
            return None  # the same file ingested before (also by a ledger older than content digests)
    earlier = _grown_from(writer, cur, row, facts, failures)
    if earlier is None:
        return None  # a longer version of this boot is in the ledger already
    deploy = deploy_id(writer, cur, info.identity(), {
        "commit_sha": info.commit, "image_digest": info.image, "label": info.label, "dirty": info.dirty,
        "created_at": _now()}, info.label, info.relabel)
    bid = insert_boot(writer, cur, deploy, row, shape, facts, failures, predict=False)
    if origin:
        writer.insert_many(cur, "boot_origin", ["boot_id", "key", "value"],
                           [(bid, key, value) for key, value in origin.items()])
    moved = reference_moved(writer, cur, bid, earlier)
    _supersede(writer, cur, earlier, bid)
    told["deploy"], told["superseded"] = deploy, earlier
    if moved is not None:
        told["reference_moved"] = moved
    samples = SampleSpool()
    samples.add(boot.runtime)  # samples the parser kept (no sink)
    spools = [(spool, attached)] if spool is not None else []
    speculated = store_samples(writer, cur, bid, [*spools, (samples, False)], year, predict=False)
    # its KV tokens from its model's geometry (ledger.formula), once: with its samples counted
    record_kv_formula(writer, cur, bid, known_of(boot, speculated))
    return bid


def _evidence(writer: Writer, cur: Any, boot_id: int) -> set[tuple[int, str]]:
    """A stored boot's evidence: the (line, raw text) of its facts and failures."""
    q = writer.mark
    cur.execute(f'SELECT "line", "text" FROM fact WHERE boot_id = {q} UNION '
                f'SELECT "line", "text" FROM failure WHERE boot_id = {q}', (boot_id, boot_id))
    return {(int(line), text) for line, text in cur.fetchall()}


def _grown_from(writer: Writer, cur: Any, row: dict[str, Any], facts: list[tuple],
                failures: list[tuple]) -> list[int] | None:
    """A log that grows (a boot still starting, a runtime log still served) holds, when read
    again, a longer version of a boot stored before: same source, same first line, same start,
    and every line of evidence the stored one has (fact and failure, line number and raw text)
    at the same place in the new one.  The stored boots the new one supersedes (to be deleted
    in its transaction); None if a stored boot is a longer version of the new one (the new one
    is the older read: nothing to store)."""
    q = writer.mark
    # by its start first: an index holds it (ix_boot_started), so a file of a million boots is
    # not a million scans of the boot table
    started = "started_at IS NULL" if row["started_at"] is None else f"started_at = {q}"
    cur.execute(f"SELECT id, last_line FROM boot WHERE {started} AND source_path = {q} AND first_line = {q} "
                f"AND content_sha256 <> {q}",
                (*([] if row["started_at"] is None else [row["started_at"]]), row["source_path"], row["first_line"],
                 row["content_sha256"]))
    candidates = cur.fetchall()
    if not candidates:
        return []
    fact_line, fact_text = CHILD_COLUMNS["fact"].index("line"), CHILD_COLUMNS["fact"].index("text")
    fail_line, fail_text = CHILD_COLUMNS["failure"].index("line"), CHILD_COLUMNS["failure"].index("text")
    mine = {(f[fact_line], f[fact_text]) for f in facts} | {(f[fail_line], f[fail_text]) for f in failures}
    superseded = []
    for bid, last in candidates:
        theirs = _evidence(writer, cur, bid)
        if last < row["last_line"] and theirs <= mine:
            superseded.append(bid)
        elif last >= row["last_line"] and mine <= theirs:
            return None
    return superseded


def _supersede(writer: Writer, cur: Any, earlier: list[int], bid: int) -> None:
    """Replace the shorter versions of boot ``bid`` (their rows go; a deploy's reference boot
    that named one names ``bid``), in the caller's transaction."""
    q = writer.mark
    for old in earlier:
        cur.execute(f'UPDATE deploy_setting SET value = {q} WHERE "key" = {q} AND value = {q}',
                    (str(bid), "kv_reference_boot", str(old)))
        for table in BOOT_CHILDREN:
            cur.execute(f"DELETE FROM {table} WHERE boot_id = {q}", (old,))
        cur.execute(f"DELETE FROM boot WHERE id = {q}", (old,))


# the staged rows and the spool's batches are (kind, line, stamp, engine, hundredths,
# *STORED_FIGURES, per-position), the figures already as runtime_sample_row stores them
# (models.RuntimeSampleRow; staging.stored_row): what is left is the time, seconds since 1970
_INSERT_SAMPLE = ("INSERT INTO runtime_sample_row (boot_id, id, kind, line, logged_at_num, logged_at_text, engine, "
                  f"hundredths, {', '.join(STORED_SERIES)}) ")
_EPOCH = dt.datetime(1970, 1, 1)


def _sample_sql(boot_id: int, first_id: int, year: int | None, table: str) -> str:
    """INSERT … SELECT of the staging table ``table``'s rows (``staging._SPOOL_COLUMNS``, rowid
    the order) — attached to the writer's SQLite connection — into runtime_sample_row; the
    time's conversion is the one ``_sample_row`` makes.  One scan of the table in rowid order,
    no subquery around it (a subquery cost the copy 11 % more instructions: its rows are copied
    through a co-routine)."""
    if year is not None:
        num, text = _stamp_sql(int(year))
    else:
        num, text = "NULL", "CAST(NULL AS VARCHAR(32))"  # vLLM's stamps lack the year: no time without one
    return (_INSERT_SAMPLE + f"SELECT {int(boot_id)}, {int(first_id) - 1} + rowid, kind, line, {num}, {text}, engine, "
            f"hundredths, {', '.join(STORED_SERIES)} FROM {table} ORDER BY rowid")


def _stamp_sql(year: int) -> tuple[str, str]:
    """SQL of a staged stamp (``staging.stamp_code``) as logged_at_num and logged_at_text in
    ``year``, as ``_sample_row`` converts it: a moment of the leap year 2000 by its seconds is
    that moment of ``year`` (plain arithmetic: in a common year the days after February 28 move
    back one, and February 29 is no real date, so its text), any other stamp its text.

    A staged stamp is an integer, a text or NULL, in a column of no type (no affinity: nothing
    is converted when it is compared), and SQLite orders every number before every text: so
    ``stamp < ''`` holds for an integer stamp alone and ``stamp >= ''`` for a text alone (NULL
    neither).  Comparisons, not ``typeof()``: a function call per row and column cost the copy
    of 192,054 samples 10 % more instructions."""
    full = f"('{year:04d}-' || stamp)"
    start = _year_start(year)
    if start is None:  # a year _seconds gives no time in: the text only
        text = (f"CASE WHEN stamp < '' THEN '{year:04d}-' || strftime('%m-%d %H:%M:%S', "
                f"stamp + {_epoch(LEAP_YEAR_START)}, 'unixepoch') WHEN stamp >= '' THEN {full} END")
        return "NULL", text
    if calendar.isleap(year):
        return f"CASE WHEN stamp < '' THEN {start} + stamp END", f"CASE WHEN stamp >= '' THEN {full} END"
    # a text stamp is neither below February 29 nor below '': no number
    num = (f"CASE WHEN stamp < {FEBRUARY_29} THEN {start} + stamp "
           f"WHEN stamp >= {MARCH_1} AND stamp < '' THEN {start - 86400} + stamp END")
    text = (f"CASE WHEN stamp >= '' THEN {full} WHEN stamp >= {FEBRUARY_29} AND stamp < {MARCH_1} "
            f"THEN '{year:04d}-02-29 ' || time(stamp, 'unixepoch') END")
    return num, text


def _epoch(when: dt.datetime) -> int:
    return (when - _EPOCH) // dt.timedelta(seconds=1)


def _sample_row(boot_id: int, sample_id: int, year: int | None, row: tuple) -> tuple:
    """A spooled row (kind, line, stamp, engine, hundredths, *STORED_SERIES) as
    runtime_sample_row stores it."""
    kind, line, stamp, engine, *stored = row
    num = text = None
    if year is not None and stamp is not None:
        start = _year_start(year)
        if type(stamp) is int and start is not None:  # as _stamp_sql: by arithmetic
            if calendar.isleap(year) or stamp < FEBRUARY_29:
                num = start + stamp
            elif stamp >= MARCH_1:
                num = start - 86400 + stamp
            else:
                text = f"{year:04d}-{stamp_text(stamp)}"
        else:
            text = f"{year:04d}-{stamp_text(stamp)}"
            num = _seconds(text)
            if num is not None:
                text = None
    return (boot_id, sample_id, kind, line, num, text, engine, *stored)


@functools.lru_cache(maxsize=64)
def _year_start(year: int) -> int | None:
    """Seconds since 1970 at the start of ``year``; None for a year _seconds gives no time in."""
    return _seconds(f"{year:04d}-01-01 00:00:00")


def _seconds(text: str) -> int | None:
    """``YYYY-MM-DD HH:MM:SS`` as seconds since 1970 (what SQLite's strftime('%s') gives), or
    None for a text the view would not give back as it is."""
    try:
        # read as ISO 8601, then held to the one form: what strptime("%Y-%m-%d %H:%M:%S") and
        # this check accepted, without loading strptime (its module and regexes, 2 ms of an ingest)
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is not None or when.strftime("%Y-%m-%d %H:%M:%S") != text:
        return None
    return (when - _EPOCH) // dt.timedelta(seconds=1)


def _next_sample_id(writer: Writer, cur: Any) -> int:
    """The id after the ledger's last sample.  PostgreSQL: writers take their ids one at a time
    (a lock held to the end of the boot's transaction); SQLite's write lock does that already."""
    if not writer.is_sqlite:
        cur.execute(f"SELECT pg_advisory_xact_lock({SAMPLE_ID_LOCK})")
    cur.execute("SELECT COALESCE(MAX(last_sample_id), 0) FROM boot_runtime")
    return cur.fetchone()[0] + 1


def _insert_samples(writer: Writer, cur: Any, boot_id: int, spool: SampleSpool, year: str | None,
                    attached: bool, first_id: int) -> int:
    """A spool's rows, ids from ``first_id`` on in the order the samples came in; the id after
    the last.  Staged rows on the writer's connection go in with one INSERT … SELECT (the boot
    id, the year — vLLM's stamps lack it — and the conversions written into the statement, so
    no row is built again on its way in); others are converted and bound a batch at a time."""
    y = int(year) if year else None
    if attached:
        assert spool.table is not None  # attached: staged
        cur.execute(_sample_sql(boot_id, first_id, y, spool.table))
        return first_id + spool.seq
    sql = _INSERT_SAMPLE + f"VALUES ({', '.join([writer.mark] * (8 + len(STORED_SERIES)))})"
    next_id = first_id
    for batch in spool.batches():
        rows = [_sample_row(boot_id, next_id + i, y, row) for i, row in enumerate(batch)]
        next_id += len(rows)
        cur.executemany(sql, rows)
    return next_id


def _record_runtime(writer: Writer, cur: Any, boot_id: int, spools: list[SampleSpool], first_id: int,
                    next_id: int) -> dict[str, int]:
    """The boot's sample counts by kind and its last sample id (``boot_runtime``); the counts."""
    per_spool = [s.counts() for s in spools]  # each a pass over the rows the spool still holds
    counts = {kind: sum(c[kind] for c in per_spool) for kind in KIND_CODES}
    q = writer.mark
    cur.execute(f"INSERT INTO boot_runtime (boot_id, engine_stats, spec_decode, last_sample_id) "
                f"VALUES ({q}, {q}, {q}, {q})",
                (boot_id, counts["engine_stats"], counts["spec_decode"], next_id - 1 if next_id > first_id else None))
    return counts


# a stored sample as ``copy_samples`` takes it: runtime_sample_row's columns but boot_id and id
STORED_SAMPLE_COLUMNS = ["kind", "line", "logged_at_num", "logged_at_text", "engine", "hundredths", *STORED_SERIES]


def copy_samples(writer: Writer, cur: Any, boot_id: int, rows: list[tuple]) -> None:
    """Another ledger's stored samples of one boot (``STORED_SAMPLE_COLUMNS``, in id order) for a
    new boot, as they are stored (the encoding is the same on every database), and its
    ``boot_runtime`` row: ``ledger copy``."""
    first_id = _next_sample_id(writer, cur)
    writer.insert_many(cur, "runtime_sample_row", ["boot_id", "id", *STORED_SAMPLE_COLUMNS],
                       [(boot_id, first_id + i, *row) for i, row in enumerate(rows)])
    counts = {code: 0 for code in KIND_CODES.values()}
    for row in rows:
        counts[row[0]] += 1
    q = writer.mark
    cur.execute(f"INSERT INTO boot_runtime (boot_id, engine_stats, spec_decode, last_sample_id) "
                f"VALUES ({q}, {q}, {q}, {q})",
                (boot_id, counts[KIND_CODES["engine_stats"]], counts[KIND_CODES["spec_decode"]],
                 first_id + len(rows) - 1 if rows else None))
    if counts[KIND_CODES["spec_decode"]]:
        record_kv_formula(writer, cur, boot_id)  # the boot speculates: the formula must know


# a boot a group's KV predictions may be taken from: the ``kv_reference_candidate`` row the
# migration 0004 fills for the boots already stored, here for one new boot
_CANDIDATE = ("INSERT INTO kv_reference_candidate (boot_id, group_key, sort_at) "
              "SELECT boot_id, group_key, COALESCE(started_at, '9999-12-31 23:59:59') FROM kv_cost_per_token "
              "WHERE boot_id = {mark} AND outcome = 'ready' AND group_key IS NOT NULL")


def reference_moved(writer: Writer, cur: Any, boot_id: int, superseded: list[int]) -> dict[str, Any] | None:
    """Whether the boot just written takes its group's KV reference from another boot (the
    earliest ready boot of the group: an older boot that arrives later moves it): the boot that
    was the reference, when each started, and that boot's deploy (where a pin keeps it).  None
    when nothing moved, or the boot replaced is the same boot read again as its log grew."""
    q = writer.mark
    cur.execute(f"SELECT group_key, sort_at FROM kv_reference_candidate WHERE boot_id = {q}", (boot_id,))
    mine = cur.fetchone()
    if mine is None:
        return None
    cur.execute(f"SELECT c.boot_id, c.sort_at, b.deploy_id, d.label FROM kv_reference_candidate c "
                f"JOIN boot b ON b.id = c.boot_id JOIN deploy d ON d.id = b.deploy_id "
                f"WHERE c.group_key = {q} AND c.boot_id <> {q} ORDER BY c.sort_at, c.boot_id LIMIT 1",
                (mine[0], boot_id))
    was = cur.fetchone()
    if was is None or was[0] in superseded or (mine[1], boot_id) > (was[1], was[0]):
        return None
    return {"boot": was[0], "started_at": was[1], "deploy": was[2], "deploy_label": was[3],
            "group_key": mine[0], "now_started_at": mine[1]}


def record_kv_candidate(writer: Writer, cur: Any, boot_id: int) -> None:
    """Make the boot a candidate reference of its group if it is one (``kv_reference``): in the
    transaction that writes its shape and facts, or that changes them (delete its row first)."""
    cur.execute(_CANDIDATE.format(mark=writer.mark), (boot_id,))


def store_samples(writer: Writer, cur: Any, boot_id: int, spools: list[tuple[SampleSpool, bool]],
                  year: str | None, predict: bool = True) -> int:
    """A new boot's runtime samples, spool after spool (each: whether it is staged on the
    writer's connection), and its ``boot_runtime`` row; its ``spec_decode`` samples.
    ``predict=False``: the caller records the KV formula's prediction itself."""
    first_id = next_id = _next_sample_id(writer, cur)
    for spool, attached in spools:
        next_id = _insert_samples(writer, cur, boot_id, spool, year, attached, next_id)
    speculated = _record_runtime(writer, cur, boot_id, [s for s, _ in spools], first_id, next_id)["spec_decode"]
    if predict and speculated:
        record_kv_formula(writer, cur, boot_id)  # the boot speculates: the formula must know (ledger.formula)
    return speculated


def set_source_sha256(writer: Writer, runs: list[list[int]], sha256: str) -> None:
    """Record the whole input's sha256 on boots stored before it was known (a stream, a file
    read as it was hashed): ``runs`` of their ids, [first, last] each."""
    if not runs:
        return
    q = writer.mark
    with writer.transaction() as cur:
        cur.executemany(f"UPDATE boot SET source_sha256 = {q} WHERE id BETWEEN {q} AND {q} AND source_sha256 IS NULL",
                        [(sha256, first, last) for first, last in runs])


def put_deploy_settings(writer: Writer, deploy: int, settings: list[tuple[str, str]]) -> dict[str, str]:
    """Record (key, value) settings for a deploy, in one transaction; every setting it has now.
    A ``kv_reference_boot`` must name a boot of the ledger."""
    q = writer.mark

    def write() -> dict[str, str]:
        with writer.transaction() as cur:
            now = _now()
            for key, value in settings:
                if key == "kv_reference_boot":
                    cur.execute(f"SELECT 1 FROM boot WHERE id = {q}", (int(value),))
                    if cur.fetchone() is None:
                        raise LedgerError(f"kv_reference_boot={value}: no such boot")
                cur.execute(f'UPDATE deploy_setting SET value = {q}, set_at = {q} WHERE deploy_id = {q} AND "key" = {q}',
                            (value, now, deploy, key))
                if cur.rowcount == 0:
                    writer.insert(cur, "deploy_setting", {"deploy_id": deploy, "key": key, "value": value,
                                                          "set_at": now})
            if any(key in FORMULA_SETTINGS for key, _ in settings):
                repredict_deploy(writer, cur, deploy)  # the model (its geometry) or the shape its boots are predicted with
            cur.execute(f'SELECT "key", value FROM deploy_setting WHERE deploy_id = {q}', (deploy,))
            return dict(cur.fetchall())

    return retrying(write)


def delete_deploy_settings(writer: Writer, deploy: int, keys: list[str]) -> dict[str, str]:
    """Remove settings of a deploy, in one transaction; every setting it has now."""
    q = writer.mark

    def write() -> dict[str, str]:
        with writer.transaction() as cur:
            cur.executemany(f'DELETE FROM deploy_setting WHERE deploy_id = {q} AND "key" = {q}',
                            [(deploy, key) for key in keys])
            if any(key in FORMULA_SETTINGS for key in keys):
                repredict_deploy(writer, cur, deploy)
            cur.execute(f'SELECT "key", value FROM deploy_setting WHERE deploy_id = {q}', (deploy,))
            return dict(cur.fetchall())

    return retrying(write)


def set_deploy_label(writer: Writer, deploy: int, label: str) -> None:
    """Relabel a deploy.  A deploy known by its label alone (identity ``label=<label>``) takes
    the new identity with it, so a later ``ingest --label NEW`` finds it; refused if another
    deploy has that label."""
    q = writer.mark

    def write() -> None:
        with writer.transaction() as cur:
            cur.execute(f"SELECT id FROM deploy WHERE (label = {q} OR identity = {q}) AND id != {q}",
                        (label, f"label={label}", deploy))
            if cur.fetchone() is not None:
                raise LedgerError(f"{label}: another deploy has that label")
            cur.execute(f"SELECT identity FROM deploy WHERE id = {q}", (deploy,))
            identity = cur.fetchone()[0]
            if identity.startswith("label="):
                cur.execute(f"UPDATE deploy SET label = {q}, identity = {q} WHERE id = {q}",
                            (label, f"label={label}", deploy))
            else:
                cur.execute(f"UPDATE deploy SET label = {q} WHERE id = {q}", (label, deploy))

    retrying(write)


def move_boots(writer: Writer, boot_ids: list[int], target: int | DeployInfo) -> tuple[int, dict[int, list[int]]]:
    """Give boots another deploy, all in one transaction (or none: a missing boot or deploy
    is refused).  ``target``: a deploy id, or the identity of a deploy, created if the ledger
    has none (its ``--label`` refused if that deploy is labelled otherwise).  What hangs on the
    deploy follows the boots: settings, verdicts and pinned references are read through
    ``boot.deploy_id`` (the views), so nothing else is rewritten.  The deploy's id, and per
    deploy the moved boots that came from it."""
    q = writer.mark
    ids = sorted(set(boot_ids))
    marks = ", ".join([q] * len(ids))

    def write() -> tuple[int, dict[int, list[int]]]:
        with writer.transaction() as cur:
            cur.execute(f"SELECT id, deploy_id FROM boot WHERE id IN ({marks})", ids)
            found = dict(cur.fetchall())
            missing = [b for b in ids if b not in found]
            if missing:
                raise LedgerError(f"no boot {', '.join(map(str, missing))} in the ledger; nothing moved")
            if isinstance(target, int):
                cur.execute(f"SELECT id FROM deploy WHERE id = {q}", (target,))
                if cur.fetchone() is None:
                    raise LedgerError(f"deploy:{target}: no such deploy; nothing moved")
                deploy = target
            else:
                deploy = deploy_id(writer, cur, target.identity(), {
                    "commit_sha": target.commit, "image_digest": target.image, "label": target.label,
                    "dirty": target.dirty, "created_at": _now()}, target.label, target.relabel)
            origins: dict[int, list[int]] = {}
            for bid in ids:
                origins.setdefault(found[bid], []).append(bid)
            cur.execute(f"UPDATE boot SET deploy_id = {q} WHERE id IN ({marks})", [deploy, *ids])
            return deploy, origins

    return retrying(write)


def delete_deploy(writer: Writer, deploy: int) -> None:
    """Remove a deploy with no boots, and its settings, in one transaction; refused (nothing
    removed) while boots are of it."""
    q = writer.mark

    def write() -> None:
        with writer.transaction() as cur:
            cur.execute(f"SELECT count(*) FROM boot WHERE deploy_id = {q}", (deploy,))
            n = cur.fetchone()[0]
            if n:
                raise LedgerError(f"deploy:{deploy} has {n} boot{'s' if n != 1 else ''} (ledger deploy move them "
                                  "to another deploy, or ledger rm them, first); nothing removed")
            cur.execute(f"DELETE FROM deploy_setting WHERE deploy_id = {q}", (deploy,))
            cur.execute(f"DELETE FROM deploy WHERE id = {q}", (deploy,))

    retrying(write)


# every table that holds a boot's rows: the tables with a boot_id column (from the models)
BOOT_CHILDREN = tuple(table for table, cols in COLUMNS.items() if "boot_id" in cols)


def delete_boots(writer: Writer, boot_ids: list[int]) -> int:
    """Remove boots with their shape, facts, failures and runtime samples, all in one
    transaction (the rows are deleted by name, not left to ON DELETE CASCADE: SQLite honours
    it only with foreign keys on).  Refused — nothing removed — if a boot is missing or is a
    deploy's pinned ``kv_reference_boot``.  How many boots were removed."""
    q = writer.mark
    ids = sorted(set(boot_ids))
    marks = ", ".join([q] * len(ids))

    def write() -> int:
        with writer.transaction() as cur:
            cur.execute(f"SELECT id FROM boot WHERE id IN ({marks})", ids)
            missing = sorted(set(ids) - {r[0] for r in cur.fetchall()})
            if missing:
                raise LedgerError(f"no boot {', '.join(map(str, missing))} in the ledger; nothing removed")
            cur.execute("SELECT deploy_id, value FROM deploy_setting WHERE \"key\" = 'kv_reference_boot'")
            pinned = [(d, v) for d, v in cur.fetchall() if v.strip().isdigit() and int(v) in ids]
            if pinned:
                d, v = pinned[0]
                raise LedgerError(f"boot {v} is the pinned kv_reference_boot of deploy {d} (ledger deploy unset "
                                  f"DEPLOY kv_reference_boot first); nothing removed")
            for table in BOOT_CHILDREN:
                cur.execute(f"DELETE FROM {table} WHERE boot_id IN ({marks})", ids)
            cur.execute(f"DELETE FROM boot WHERE id IN ({marks})", ids)
            return cur.rowcount

    return retrying(write)
