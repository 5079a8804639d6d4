"""``ledger copy SRC DST``: move boots from one ledger to another (a host's SQLite file into a
shared PostgreSQL ledger, say).  Boots are matched by content, so copying twice, or copying
two hosts' files that saw the same boot, stores each boot once; deploys are matched by their
identity (commit + image digest, or label) and keep their settings."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from . import models as m
from .store import Ledger, insert_sample_rows
from .writing import _SAMPLE_COLUMNS, retrying


@dataclass
class CopyResult:
    copied: int = 0
    present: int = 0


_SAMPLE_COLS = _SAMPLE_COLUMNS[1:]  # all but boot_id, which the copy assigns


def copy_ledger(src: Ledger, dst: Ledger) -> CopyResult:
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
            with dst.WriteSession() as t, t.begin():
                if t.execute(select(m.Boot.id).where(m.Boot.content_sha256 == boot_cols["content_sha256"])).scalar():
                    return None
                d = t.execute(select(m.Deploy).where(m.Deploy.identity == deploy.identity)).scalar_one_or_none()
                if d is None:
                    d = m.Deploy(identity=deploy.identity, commit_sha=deploy.commit_sha, image_digest=deploy.image_digest,
                                 label=deploy.label, dirty=deploy.dirty, created_at=deploy.created_at)
                    t.add(d)
                    t.flush()
                row = m.Boot(deploy_id=d.id, **boot_cols)
                t.add(row)
                t.flush()
                t.add_all(m.Shape(boot_id=row.id, key=k, value=v, value_text=vt, source=src_, line=ln, pack=pk)
                          for k, v, vt, src_, ln, pk in shape)
                t.add_all(m.Fact(boot_id=row.id, name=n, value=v, unit=u, precision=p, rank=r, process=pr, line=ln,
                                 text=tx, pack=pk) for n, v, u, p, r, pr, ln, tx, pk in facts)
                t.add_all(m.Failure(boot_id=row.id, kind=k, phase=ph, line=ln, text=tx, rank=r, process=pr, figures=fg,
                                    pack=pk, logged_at=la) for k, ph, ln, tx, r, pr, fg, pk, la in failures)
                t.flush()
                for i in range(0, len(samples), 5000):
                    insert_sample_rows(t, [(row.id, *r) for r in samples[i:i + 5000]])
                return row.id

        new_id = retrying(write)
        if new_id is None:
            result.present += 1
        else:
            result.copied += 1
            mapped[bid] = new_id
    with dst.WriteSession() as t, t.begin():
        for st in settings:
            d = t.execute(select(m.Deploy).where(m.Deploy.identity == deploys[st.deploy_id].identity)).scalar_one()
            value = st.value
            if st.key == "kv_reference_boot" and int(value) in mapped:
                value = str(mapped[int(value)])
            row = t.execute(select(m.DeploySetting).where(m.DeploySetting.deploy_id == d.id,
                                                          m.DeploySetting.key == st.key)).scalar_one_or_none()
            if row is None:
                t.add(m.DeploySetting(deploy_id=d.id, key=st.key, value=value, set_at=st.set_at))
    return result
