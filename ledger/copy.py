"""``ledger copy SRC DST``: move boots from one ledger to another (a host's SQLite file into a
shared PostgreSQL ledger, say).  Boots are matched by content, so copying twice, or copying
two hosts' files that saw the same boot, stores each boot once; deploys are matched by their
identity (commit + image digest, or label) and keep their settings."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import select

from .db import models as m
from .db.columns import COLUMNS
from .db.connect import Ledger
from .db.formula import GEOMETRY_COLUMNS, repredict_deploy
from .db.writer import Writer, retrying
from .db.writes import (
    CHILD_COLUMNS,
    STORED_SAMPLE_COLUMNS,
    copy_samples,
    deploy_id,
    insert_boot,
    is_stored,
)
from .settings import FORMULA_SETTINGS


@dataclass
class CopyResult:
    copied: int = 0
    present: int = 0


def _row(table: str, obj: object) -> tuple:
    """A child row of a boot as ``insert_boot`` takes it: its columns but boot_id, by name."""
    return tuple(getattr(obj, c) for c in CHILD_COLUMNS[table])


def copy_ledger(src: Ledger, dst: Writer) -> CopyResult:
    """Every boot of ``src`` into ``dst``, each in its own transaction, written as the ingest
    writes a boot (``ledger.db.writes``); then the deploys' settings."""
    result = CopyResult()
    with src.Session() as s:
        deploys = {d.id: d for d in s.execute(select(m.Deploy)).scalars()}
        settings = list(s.execute(select(m.DeploySetting)).scalars())
        boot_ids = list(s.execute(select(m.Boot.id).order_by(m.Boot.id)).scalars())
        geometries = [tuple(getattr(g, c) for c in GEOMETRY_COLUMNS)
                      for g in s.execute(select(m.ModelGeometry)).scalars()]
    _copy_geometries(dst, geometries)  # first: the boots' predictions are made from them
    mapped: dict[int, int] = {}
    for bid in boot_ids:
        with src.Session() as s:
            b = s.get(m.Boot, bid)
            shape = [_row("shape", x) for x in b.shape]
            facts = [_row("fact", f) for f in b.facts]
            failures = [_row("failure", f) for f in b.failures]
            boot_cols = {c: getattr(b, c) for c in COLUMNS["boot"] if c != "deploy_id"}
            deploy = deploys[b.deploy_id]
            R = m.RuntimeSampleRow  # as stored: the copy assigns the boot id and the sample ids
            cols = [getattr(R, c) for c in STORED_SAMPLE_COLUMNS]
            samples = [tuple(r) for r in s.execute(select(*cols).where(R.boot_id == bid).order_by(R.id))]
            BO = m.BootOrigin  # a container's or unit's facts (ingest --container / --unit)
            origin = [tuple(r) for r in s.execute(select(BO.key, BO.value).where(BO.boot_id == bid).order_by(BO.id))]

        new_id = retrying(partial(_write_boot, dst, deploy, boot_cols, shape, facts, failures, samples, origin))
        if new_id is None:
            result.present += 1
        else:
            result.copied += 1
            mapped[bid] = new_id
    q = dst.mark
    with dst.transaction() as cur:
        for st in settings:
            cur.execute(f"SELECT id FROM deploy WHERE identity = {q}", (deploys[st.deploy_id].identity,))
            (d,) = cur.fetchone()
            value = st.value
            if st.key == "kv_reference_boot" and int(value) in mapped:
                value = str(mapped[int(value)])
            cur.execute(f'SELECT 1 FROM deploy_setting WHERE deploy_id = {q} AND "key" = {q}', (d, st.key))
            if cur.fetchone() is None:
                dst.insert(cur, "deploy_setting", {"deploy_id": d, "key": st.key, "value": value,
                                                   "set_at": st.set_at})
                if st.key in FORMULA_SETTINGS:
                    repredict_deploy(dst, cur, d)  # its boots are predicted from the model it names
    return result


def _copy_geometries(dst: Writer, rows: list[tuple]) -> None:
    """The model geometries ``dst`` does not have (by name; one it has is kept)."""
    q = dst.mark
    with dst.transaction() as cur:
        for row in rows:
            cur.execute(f"SELECT 1 FROM model_geometry WHERE name = {q}", (row[0],))
            if cur.fetchone() is None:
                dst.insert_many(cur, "model_geometry", list(GEOMETRY_COLUMNS), [row])


def _write_boot(dst: Writer, deploy: m.Deploy, boot_cols: dict[str, Any], shape: list[tuple], facts: list[tuple],
                failures: list[tuple], samples: list[tuple], origin: list[tuple]) -> int | None:
    """One boot in one transaction; its new id, or None if ``dst`` holds its content already."""
    with dst.transaction() as cur:
        if is_stored(dst, cur, boot_cols["content_sha256"]):
            return None
        d = deploy_id(dst, cur, deploy.identity, {
            "commit_sha": deploy.commit_sha, "image_digest": deploy.image_digest, "label": deploy.label,
            "dirty": deploy.dirty, "created_at": deploy.created_at})
        copied = insert_boot(dst, cur, d, boot_cols, shape, facts, failures)
        copy_samples(dst, cur, copied, samples)
        dst.insert_many(cur, "boot_origin", ["boot_id", "key", "value"], [(copied, k, v) for k, v in origin])
        return copied


def copy_between(src: str, dst: str) -> dict[str, Any]:
    """``ledger copy SRC DST``: every boot of the ledger ``src`` into ``dst`` (created and
    migrated if new); the contract object (both locations as printable URLs, boots copied and
    already there)."""
    from .db.connect import connect, open_writer
    from .db.location import shown_url

    a = connect(src, mode="read", create=False)
    try:
        b = open_writer(dst)
        try:
            result = copy_ledger(a, b)
        finally:
            b.close()
    finally:
        a.dispose()
    return {"src": shown_url(src), "dst": shown_url(dst), "copied": result.copied, "present": result.present}
