"""Deploy administration and removal: ``ledger deploy set / unset / label / list`` (the
per-deploy settings ``ledger check`` uses: card ceiling, host cap, pinned reference boot) and
``ledger rm``.  Every change goes through the ledger's ``Writer``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from ledger.parsers.units import MAX_FIGURE, UnitError, human_bytes

from .db import models as m
from .db.connect import Ledger
from .db.writes import delete_boots, delete_deploy_settings, put_deploy_settings, set_deploy_label
from .errors import LedgerError
from .queries import deploy_name, latest_boot, one_deploy
from .render.values import boot_id
from .verdicts import view_rows

SETTINGS = {
    "card_ceiling_bytes": "bytes",  # weights + KV pool must fit under it (per GPU)
    "host_cap_bytes": "bytes",  # pinned host memory must fit under it
    "kv_reference_boot": "boot",  # predict this deploy's KV tokens from that boot's cost per token
}


def parse_setting(key: str, value: str) -> str:
    kind = SETTINGS.get(key)
    if kind is None:
        raise LedgerError(f"{key}: unknown setting (known: {', '.join(SETTINGS)})")
    if kind == "bytes":
        try:
            return str(human_bytes(value))
        except UnitError:
            raise LedgerError(f"{key}={value}: not a byte count (e.g. 29120MiB, 31.3e9, 30,534,533,120)") from None
    if not value.strip().isdigit():
        raise LedgerError(f"{key}={value}: expected a boot id")
    if int(value) > MAX_FIGURE:  # past any id a database holds
        raise LedgerError(f"kv_reference_boot={value}: no such boot")
    return value.strip()


def set_deploy(ledger: Ledger, ref: str, assignments: list[str]) -> tuple[str, dict[str, str]]:
    """Record ``KEY=VALUE`` settings for one deploy (through the ledger's ``Writer``); its name
    and every setting it has now."""
    pairs = []
    for a in assignments:
        key, sep, value = a.partition("=")
        if not sep:
            raise LedgerError(f"{a}: expected KEY=VALUE")
        pairs.append((key.strip(), parse_setting(key.strip(), value)))
    d_id, name = _one_deploy(ledger, ref)
    for key, value in pairs:
        if key == "kv_reference_boot":
            _same_group(ledger, d_id, name, int(value))
    with ledger.writer() as writer:
        current = put_deploy_settings(writer, d_id, pairs)
    return name, current


def _one_deploy(ledger: Ledger, ref: str) -> tuple[int, str]:
    """The id and name of the one deploy ``ref`` names."""
    with ledger.Session() as s:
        d = one_deploy(s, ref)
        return d.id, deploy_name(d)


def _same_group(ledger: Ledger, deploy: int, name: str, ref_boot: int) -> None:
    """A reference boot predicts a deploy's tokens only from its own group (model, KV dtype,
    TP, block size, engine release): refuse one of another group, showing both keys.  A key
    that is not known (figures missing) is not refused: the view then says 'insufficient'."""
    with ledger.Session() as s:
        latest = latest_boot(s, deploy)
    if latest is None:
        return
    keys = {r["boot_id"]: r["group_key"] for r in view_rows(ledger, "boot_kv", [latest.id, ref_boot])}
    mine, theirs = keys.get(latest.id), keys.get(ref_boot)
    if mine and theirs and mine != theirs:
        raise LedgerError(f"kv_reference_boot={ref_boot}: boot {ref_boot} is of another group "
                          f"({theirs}) than {name} ({mine}); its cost per token does not predict this deploy")


def unset_deploy(ledger: Ledger, ref: str, keys: list[str]) -> tuple[str, dict[str, str]]:
    """Remove settings from one deploy; its name and the settings it keeps."""
    for key in keys:
        if key not in SETTINGS:
            raise LedgerError(f"{key}: unknown setting (known: {', '.join(SETTINGS)})")
    d_id, name = _one_deploy(ledger, ref)
    with ledger.writer() as writer:
        current = delete_deploy_settings(writer, d_id, keys)
    return name, current


def label_deploy(ledger: Ledger, ref: str, label: str) -> tuple[str, str]:
    """Give one deploy a new label; its name before and after."""
    label = label.strip()
    if not label:
        raise LedgerError("a label cannot be empty")
    d_id, before = _one_deploy(ledger, ref)
    with ledger.writer() as writer:
        set_deploy_label(writer, d_id, label)
    with ledger.Session() as s:
        after = deploy_name(s.get(m.Deploy, d_id))
    return before, after


def describe_boots(ledger: Ledger, refs: list[str]) -> list[dict[str, Any]]:
    """Each boot id in ``refs`` (id, outcome, deploy, source), for ``ledger rm`` to show what
    it removes; an unknown id or a ref that is not an id is an error."""
    bad = [r for r in refs if not r.strip().isdigit()]
    if bad:
        raise LedgerError(f"{bad[0]}: ledger rm takes boot ids (as ledger history shows them)")
    out = []
    with ledger.Session() as s:
        for ref in refs:
            b = s.get(m.Boot, int(ref))
            if b is None:
                raise LedgerError(f"{ref}: no boot by that id; nothing removed")
            out.append({"boot": boot_id(b.id), "outcome": b.outcome, "deploy": deploy_name(b.deploy),
                        "source": f"{b.source_path}:{b.first_line}-{b.last_line}"})
    return out


def remove_boots(ledger: Ledger, ids: list[int]) -> int:
    with ledger.writer() as writer:
        return delete_boots(writer, ids)


def list_deploys(ledger: Ledger) -> list[dict[str, Any]]:
    with ledger.Session() as s:
        rows = []
        for d in s.execute(select(m.Deploy).order_by(m.Deploy.id)).scalars():
            settings = {r.key: r.value for r in s.execute(select(m.DeploySetting)
                                                             .where(m.DeploySetting.deploy_id == d.id)).scalars()}
            boots = [b.id for b in d.boots]
            rows.append({"deploy": d.id, "name": deploy_name(d), "commit": d.commit_sha, "image": d.image_digest,
                         "label": d.label, "boots": len(boots), "settings": dict(sorted(settings.items()))})
        return rows
