"""``ledger copy SRC DST``: move boots from one ledger to another (a host's SQLite file into a
shared PostgreSQL ledger, say).  Boots are matched by content, so copying twice, or copying
two hosts' files that saw the same boot, stores each boot once; deploys are matched by their
identity (commit + image digest, or label) and keep their settings."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from . import models as m
from .store import Ledger
from .writing import _SAMPLE_COLUMNS, Writer, deploy_id, insert_boot, is_stored, retrying


@dataclass
class CopyResult:
    copied: int = 0
    present: int = 0


_SAMPLE_COLS = _SAMPLE_COLUMNS[1:]  # all but boot_id, which the copy assigns


def copy_ledger(src: Ledger, dst: Writer) -> CopyResult:
    """Every boot of ``src`` into ``dst``, each in its own transaction, written as the ingest
    writes a boot (``ledger.writing``); then the deploys' settings."""
    result = CopyResult()
    with src.Session() as s:
        deploys = {d.id: d for d in s.execute(select(m.Deploy)).scalars()}
        settings = list(s.execute(select(m.DeploySetting)).scalars())
        boot_ids = list(s.execute(select(m.Boot.id).order_by(m.Boot.id)).scalars())
    mapped: dict[int, int] = {}
    for bid in boot_ids:
        with src.Session() as s:
            b = s.get(m.Boot, bid)
            shape = [(x.key, x.value, x.value_text, x.source, x.line, x.pack) for x in b.shape]
            facts = [(f.name, f.value, f.unit, f.precision, f.rank, f.process, f.line, f.text, f.pack) for f in b.facts]
            failures = [(f.kind, f.phase, f.line, f.text, f.rank, f.process, f.figures, f.pack, f.logged_at)
                        for f in b.failures]
            boot_cols = {c.name: getattr(b, c.name) for c in m.Boot.__table__.columns if c.name not in ("id", "deploy_id")}
            deploy = deploys[b.deploy_id]
            cols = [getattr(m.RuntimeSample, c) for c in _SAMPLE_COLS]
            samples = [tuple(r) for r in s.execute(select(*cols).where(m.RuntimeSample.boot_id == bid)
                                                   .order_by(m.RuntimeSample.id))]

        def write():
            with dst.transaction() as cur:
                if is_stored(dst, cur, boot_cols["content_sha256"]):
                    return None
                d = deploy_id(dst, cur, deploy.identity, {
                    "commit_sha": deploy.commit_sha, "image_digest": deploy.image_digest, "label": deploy.label,
                    "dirty": deploy.dirty, "created_at": deploy.created_at})
                copied = insert_boot(dst, cur, d, boot_cols, shape, facts, failures)
                dst.insert_many(cur, "runtime_sample", _SAMPLE_COLUMNS, [(copied, *r) for r in samples])
                return copied

        new_id = retrying(write)
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
                dst.insert_many(cur, "deploy_setting", ["deploy_id", "key", "value", "set_at"],
                                [(d, st.key, value, st.set_at)])
    return result
