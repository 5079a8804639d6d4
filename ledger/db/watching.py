"""The writes and reads of ``ledger watch``, through its ``Writer``: a boot stored while it runs
and kept up to date, its runtime samples appended a batch at a time, and the ``watch`` rows that
tell readers (``ledger serve``) which sources are being watched.

A watched boot is one boot row from its first write to its last: it is first written when its
start-up ends (ready or failed), in one transaction with every sample read so far; each later
batch updates the row (last line, end time, outcome, content digest: the boot as read so far)
and its facts, failures and shape, and appends the batch's samples, in one transaction.  A boot
that is already stored is found again by the rule of a log that grows (README, "Idempotence"):
the same source, first line and start time, and the stored one's evidence (each fact and
failure, line number and raw text) in the new one — or the same content.  It is then rewritten
in place (its id kept, its rows replaced, its samples written again from the ones read), so a
restarted ``watch`` that read the file again stores nothing twice.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ledger import parsers

from .formula import record_kv_formula
from .staging import SampleSpool
from .writer import Writer, retrying
from .writes import (
    CHILD_COLUMNS,
    DeployInfo,
    _boot_rows,
    _evidence,
    _insert_samples,
    _next_sample_id,
    deploy_id,
    insert_boot,
    record_kv_candidate,
    store_samples,
)

# a watch is taken for running while its row was touched this recently (it touches it at every
# batch, and at least every HEARTBEAT_S while idle); a killed watch's row goes stale
HEARTBEAT_S = 10.0
STALE_S = 60.0


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass
class Stored:
    """What writing a watched boot did: its id (None: a longer version of it is stored, which
    was left alone), the outcome it had in the ledger before (None: it is new), and the alerts
    ``decide`` gave, recorded in the same transaction."""

    boot_id: int | None
    before: str | None
    alerts: list[Any] = field(default_factory=list)


# (writer, cursor, boot id, outcome before) -> the alert rows to record with the boot (``alert_row``):
# called inside the boot's transaction, after its rows are written (it may read them back)
Decide = Callable[[Writer, Any, int, "str | None"], list[dict[str, Any]]]


def _year(boot: parsers.Boot) -> str | None:
    return (boot.started_at or boot.ready_at or boot.ended_at or "")[:4] or None


def _deploy(writer: Writer, cur: Any, boot: parsers.Boot, info: DeployInfo) -> int:
    if not info.image and len(boot.image_digests) == 1:  # as writes.store_boot: the log's own digest
        info = DeployInfo(info.commit, boot.image_digests[0], info.label, info.dirty, info.relabel)
    return deploy_id(writer, cur, info.identity(), {
        "commit_sha": info.commit, "image_digest": info.image, "label": info.label, "dirty": info.dirty,
        "created_at": _now()}, info.label, info.relabel)


def _counts(spool: SampleSpool) -> tuple[int, int]:
    c = spool.counts()
    return c["engine_stats"], c["spec_decode"]


def _find(writer: Writer, cur: Any, boot: parsers.Boot, row: dict[str, Any], facts: list[tuple],
          failures: list[tuple], spool: SampleSpool, running: bool) -> tuple[int | None, str | None, bool]:
    """The stored version of this boot: (its id, its outcome, whether it must be rewritten);
    (None, None, True) when there is none.  ``running``: the boot is still being read, so a
    stored version whose lines this one has all (a restart re-read them) is the same boot
    even where it is longer by a batch the parse has not reached yet — which cannot happen for
    a file re-read from its start, but a stored version is never taken for another boot."""
    q = writer.mark
    cur.execute(f"SELECT b.id, b.outcome, r.engine_stats, r.spec_decode FROM boot b "
                f"LEFT JOIN boot_runtime r ON r.boot_id = b.id WHERE b.content_sha256 = {q}", (boot.content_sha256,))
    same = cur.fetchone()
    if same is not None:
        # the same lines; rewritten only if a kill cut its samples short of them
        return same[0], same[1], (same[2] or 0, same[3] or 0) != _counts(spool)
    cur.execute(f"SELECT id, last_line, started_at, outcome FROM boot WHERE source_path = {q} AND first_line = {q}",
                (row["source_path"], row["first_line"]))
    fact_line, fact_text = CHILD_COLUMNS["fact"].index("line"), CHILD_COLUMNS["fact"].index("text")
    fail_line, fail_text = CHILD_COLUMNS["failure"].index("line"), CHILD_COLUMNS["failure"].index("text")
    mine = {(f[fact_line], f[fact_text]) for f in facts} | {(f[fail_line], f[fail_text]) for f in failures}
    for bid, last, started, outcome in cur.fetchall():
        if started != row["started_at"]:
            continue
        theirs = _evidence(writer, cur, bid)
        if last <= row["last_line"] and theirs <= mine:
            return bid, outcome, True  # a shorter version: this one replaces it
        if last > row["last_line"] and mine <= theirs:
            # a longer version (another ingest of the grown file); a running boot catches up
            return (bid, outcome, True) if running else (None, outcome, False)
    return None, None, True


def store_watched(writer: Writer, boot: parsers.Boot, source_path: str, info: DeployInfo, spool: SampleSpool,
                  running: bool, origin: dict[str, str] | None = None, decide: Decide | None = None) -> Stored:
    """Write a boot with every sample read so far (``spool``), in one transaction: new, or in
    place of its stored version (module docstring); with the alerts ``decide`` gives."""
    row, shape, facts, failures = _boot_rows(boot, source_path, None)

    def write() -> Stored:
        with writer.transaction() as cur:
            bid, before, rewrite = _find(writer, cur, boot, row, facts, failures, spool, running)
            if bid is None and not rewrite:
                return Stored(None, before)
            deploy = _deploy(writer, cur, boot, info)
            if bid is None:
                bid = insert_boot(writer, cur, deploy, row, shape, facts, failures)
                _origin(writer, cur, bid, origin or {}, new=True)
            elif rewrite:
                _update(writer, cur, bid, deploy, row, shape, facts, failures)
                _origin(writer, cur, bid, origin or {})
                q = writer.mark
                cur.execute(f"DELETE FROM runtime_sample_row WHERE boot_id = {q}", (bid,))
                cur.execute(f"DELETE FROM boot_runtime WHERE boot_id = {q}", (bid,))
            if rewrite:
                store_samples(writer, cur, bid, [(spool, False)], _year(boot))
            alerts = _decided(writer, cur, decide, bid, before)
            return Stored(bid, before, alerts)

    result: Stored = retrying(write)
    return result


def _decided(writer: Writer, cur: Any, decide: Decide | None, bid: int, before: str | None) -> list[dict[str, Any]]:
    """The alerts of a boot just written, recorded with it (``watch_alert``)."""
    if decide is None:
        return []
    rows = decide(writer, cur, bid, before)
    _insert_alerts(writer, cur, rows)
    return rows


def alert_row(source: str, key: str, alert: dict[str, Any], state: str) -> dict[str, Any]:
    """A ``watch_alert`` row: ``alert`` is the alert's JSON (``Alert.to_json``); ``state``
    ``pending`` (to be delivered) or ``backlog`` (not told)."""
    return {"source": source, "key": key, "kind": str(alert["kind"]), "boot_id": _int(alert.get("boot")),
            "logged_at": alert.get("logged_at"), "raised_at": alert["raised_at"], "state": state,
            "delivered_at": None, "body": json.dumps(alert, default=str)}


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _insert_alerts(writer: Writer, cur: Any, rows: list[dict[str, Any]]) -> None:
    q = writer.mark
    for row in rows:
        cur.execute(f"SELECT 1 FROM watch_alert WHERE source = {q} AND {_key_col(writer)} = {q}",
                    (row["source"], row["key"]))
        if cur.fetchone() is None:  # another watch of the source may have told it
            writer.insert(cur, "watch_alert", row)


def _key_col(writer: Writer) -> str:
    return '"key"'  # a keyword of some SQL dialects: quoted on both databases


def record_alerts(writer: Writer, rows: list[dict[str, Any]]) -> None:
    """Alerts raised outside a boot's write (runtime, the source itself), in a transaction."""

    def write() -> None:
        with writer.transaction() as cur:
            _insert_alerts(writer, cur, rows)

    retrying(write)


def alert_keys(writer: Writer, source: str) -> dict[str, str]:
    """The alerts recorded for ``source``: each key's state (pending, delivered, or backlog)."""
    rows = _rows(writer, f"SELECT {_key_col(writer)} AS k, state FROM watch_alert WHERE source = {writer.mark}",
                 (source,))
    return {r["k"]: r["state"] for r in rows}


def pending_alerts(writer: Writer, source: str) -> list[tuple[str, dict[str, Any]]]:
    """The alerts of ``source`` not delivered yet (a watch was stopped between), oldest first:
    (key, the alert's JSON)."""
    rows = _rows(writer, f"SELECT {_key_col(writer)} AS k, body FROM watch_alert WHERE source = {writer.mark} "
                         "AND state = 'pending' ORDER BY id", (source,))
    return [(r["k"], json.loads(r["body"])) for r in rows]


def alerts_delivered(writer: Writer, source: str, keys: list[str]) -> None:
    """Alerts stdout and every sink had (delivered, or given up on after their tries)."""
    if not keys:
        return
    q = writer.mark

    def write() -> None:
        with writer.transaction() as cur:
            for key in keys:
                cur.execute(f"UPDATE watch_alert SET state = 'delivered', delivered_at = {q} "
                            f"WHERE source = {q} AND {_key_col(writer)} = {q} AND state = 'pending'",
                            (_now(), source, key))

    retrying(write)


def watched_before(writer: Writer, source: str, watch_id: int | None) -> bool:
    """Whether another watch (or an earlier one) of ``source`` has a row: a watch that is not the
    source's first."""
    q = writer.mark
    rows = _rows(writer, f"SELECT count(*) AS n FROM watch WHERE source = {q} AND id <> {q}",
                 (source, watch_id if watch_id is not None else -1))
    return bool(rows and rows[0]["n"])


def _origin(writer: Writer, cur: Any, bid: int, origin: dict[str, str], new: bool = False) -> None:
    """The boot's ``boot_origin`` rows (a container's or unit's facts), as ``ingest`` writes them."""
    if not new:
        cur.execute(f"DELETE FROM boot_origin WHERE boot_id = {writer.mark}", (bid,))
    writer.insert_many(cur, "boot_origin", ["boot_id", "key", "value"], [(bid, k, v) for k, v in origin.items()])


def _update(writer: Writer, cur: Any, bid: int, deploy: int, row: dict[str, Any], shape: list[tuple],
            facts: list[tuple], failures: list[tuple]) -> None:
    """The boot row as read now (its first ingest time kept) and its shape, facts and failures."""
    q = writer.mark
    cols = [c for c in row if c != "ingested_at"]
    cur.execute(f"UPDATE boot SET deploy_id = {q}, " + ", ".join(f'"{c}" = {q}' for c in cols) + f" WHERE id = {q}",
                (deploy, *(row[c] for c in cols), bid))
    for table, rows in (("shape", shape), ("fact", facts), ("failure", failures)):
        cur.execute(f"DELETE FROM {table} WHERE boot_id = {q}", (bid,))
        writer.insert_many(cur, table, ["boot_id", *CHILD_COLUMNS[table]], [(bid, *r) for r in rows])
    cur.execute(f"DELETE FROM kv_reference_candidate WHERE boot_id = {q}", (bid,))
    record_kv_candidate(writer, cur, bid)
    record_kv_formula(writer, cur, bid)  # from the facts as read now


def append_watched(writer: Writer, boot_id: int, boot: parsers.Boot, source_path: str, info: DeployInfo,
                   samples: list[parsers.RuntimeSample], origin: dict[str, str] | None = None,
                   decide: Decide | None = None) -> Stored:
    """One batch of a boot already written: the boot as read now, and the samples read since
    the last batch (appended after the ledger's last sample), in one transaction, with the
    alerts ``decide`` gives.  The outcome the boot had before."""
    row, shape, facts, failures = _boot_rows(boot, source_path, None)
    spool = SampleSpool()
    spool.add(samples)
    q = writer.mark

    def write() -> Stored:
        with writer.transaction() as cur:
            cur.execute(f"SELECT outcome FROM boot WHERE id = {q}", (boot_id,))
            found = cur.fetchone()
            before = found[0] if found else None
            _update(writer, cur, boot_id, _deploy(writer, cur, boot, info), row, shape, facts, failures)
            if samples:
                first = _next_sample_id(writer, cur)
                after = _insert_samples(writer, cur, boot_id, spool, _year(boot), False, first)
                stats, spec = _counts(spool)
                cur.execute(f"UPDATE boot_runtime SET engine_stats = engine_stats + {q}, spec_decode = spec_decode + {q}, "
                            f"last_sample_id = {q} WHERE boot_id = {q}", (stats, spec, after - 1, boot_id))
                if spec:
                    record_kv_formula(writer, cur, boot_id)  # the boot speculates: the formula must know
            return Stored(boot_id, before, _decided(writer, cur, decide, boot_id, before))

    result: Stored = retrying(write)
    return result


# -- what the alerts read back ------------------------------------------------------------------


def _rows(writer: Writer, sql: str, params: tuple, cur: Any = None) -> list[dict[str, Any]]:
    """The rows of a read, as dicts; on ``cur`` (inside a transaction) or in a read of its own."""
    own = cur is None
    if own:
        cur = writer.conn.cursor()
    try:
        cur.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        if own:
            cur.close()
            writer.conn.commit()  # end the read (SQLite: a snapshot held open would pin the WAL)


def boot_checks(writer: Writer, boot_id: int, cur: Any = None) -> dict[str, dict[str, Any] | None]:
    """A stored boot's rows of the reconciliation views (``verdicts``' words take them)."""
    q = writer.mark
    out: dict[str, dict[str, Any] | None] = {}
    for view in ("kv_reconciliation", "capacity_contract", "budget_ceilings"):
        rows = _rows(writer, f"SELECT * FROM {view} WHERE boot_id = {q}", (boot_id,), cur)
        out[view] = rows[0] if rows else None
    return out


def boot_place(writer: Writer, boot_id: int, cur: Any = None) -> dict[str, Any]:
    """A stored boot's deploy (id, label, commit, image)."""
    q = writer.mark
    rows = _rows(writer, f"SELECT d.id AS deploy_id, d.label, d.commit_sha, d.image_digest FROM boot b "
                         f"JOIN deploy d ON d.id = b.deploy_id WHERE b.id = {q}", (boot_id,), cur)
    return rows[0] if rows else {}


def previous_decode(writer: Writer, boot_id: int) -> tuple[int, list[float]] | None:
    """The deploy's previous boot that came up (ready, or crashed after it was) and its decode
    figures (generation throughput of the stats intervals with running requests, as ``ledger
    runtime``'s median takes them); None if it has none."""
    q = writer.mark
    rows = _rows(writer, f"SELECT p.id FROM boot b JOIN boot p ON p.deploy_id = b.deploy_id AND p.id <> b.id "
                         f"WHERE b.id = {q} AND p.ready_line IS NOT NULL "
                         f"AND COALESCE(p.started_at, '') <= COALESCE(b.started_at, '') "
                         f"ORDER BY p.started_at DESC, p.id DESC", (boot_id,))
    for r in rows[:5]:
        figures = _rows(writer, f"SELECT generation_throughput_tps FROM runtime_sample WHERE boot_id = {q} "
                                f"AND kind = 'engine_stats' AND running_reqs > 0 "
                                f"AND generation_throughput_tps IS NOT NULL", (r["id"],))
        if figures:
            return r["id"], [float(f["generation_throughput_tps"]) for f in figures]
    return None


# -- the watch rows -----------------------------------------------------------------------------


def watch_started(writer: Writer, source: str) -> int:
    """A row for this watch: what it reads, where it runs (host, pid), since when."""
    import os

    def write() -> int:
        with writer.transaction() as cur:
            now = _now()
            return writer.insert(cur, "watch", {"source": source, "host": socket.gethostname(), "pid": os.getpid(),
                                                "started_at": now, "seen_at": now, "live_boot_id": None,
                                                "deploy_id": None, "stopped_at": None})

    result: int = retrying(write)
    return result


def watch_seen(writer: Writer, watch_id: int, boot_id: int | None) -> None:
    """The watch is alive, reading ``boot_id`` (a boot still running, or None); its deploy is
    the deploy of the last boot it wrote."""
    q = writer.mark

    def write() -> None:
        with writer.transaction() as cur:
            cur.execute(f"UPDATE watch SET seen_at = {q}, live_boot_id = {q}, "
                        f"deploy_id = COALESCE((SELECT deploy_id FROM boot WHERE id = {q}), deploy_id) WHERE id = {q}",
                        (_now(), boot_id, boot_id, watch_id))

    retrying(write)


def watch_stopped(writer: Writer, watch_id: int) -> None:
    q = writer.mark

    def write() -> None:
        with writer.transaction() as cur:
            now = _now()
            cur.execute(f"UPDATE watch SET seen_at = {q}, stopped_at = {q}, live_boot_id = NULL WHERE id = {q}",
                        (now, now, watch_id))

    retrying(write)
