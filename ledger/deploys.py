"""Deploy administration and removal: ``ledger deploy set / unset / label / move / list`` (the
per-deploy settings ``ledger check`` uses: card ceiling, host cap, pinned reference boot, the
model a deploy boots) and ``ledger rm``.  Every change goes through the ledger's ``Writer``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ledger.parsers.units import UnitError, human_bytes

from .db.connect import Ledger
from .db.reader import deploys_where, get_boot, get_deploy
from .errors import LedgerError, shown
from .queries import as_id, deploy_name, latest_boot, one_deploy
from .render.values import boot_id
from .settings import SETTINGS, typed_settings
from .verdicts import view_rows

# the writes (``ledger.db.writes``, and the model arithmetic it loads) are imported by the
# functions that write: ``deploy list`` and ``rm``'s question only read, and start without them
if TYPE_CHECKING:
    from .db.writes import DeployInfo


def parse_setting(key: str, value: str) -> str:
    kind = SETTINGS.get(key)
    if kind is None:
        raise LedgerError(f"{key}: unknown setting (known: {', '.join(SETTINGS)})")
    if kind == "bytes":
        try:
            return str(human_bytes(value))
        except UnitError:
            raise LedgerError(f"{key}={value}: not a byte count (e.g. 29120MiB, 31.3e9, 30,534,533,120)") from None
    if kind == "text":
        if not value.strip() or len(value.strip()) > 400:
            raise LedgerError(f"{key}={shown(value)}: expected a model name (as vLLM prints it, up to 400 characters)")
        return value.strip()
    if kind == "count":
        v = value.strip()
        if not (v.isascii() and v.isdigit() and len(v) <= 4 and 1 <= int(v) <= 4096):
            raise LedgerError(f"{key}={shown(value)}: expected a whole number from 1 to 4096")
        return str(int(v))
    if kind == "method":
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,39}", value.strip()):
            raise LedgerError(f"{key}={shown(value)}: expected a method name as vLLM prints it "
                              "(dflash, mtp, eagle3, ngram, none …)")
        return value.strip().lower()
    if not (value.strip().isascii() and value.strip().isdigit()):
        raise LedgerError(f"{key}={shown(value)}: expected a boot id")
    if as_id(value) is None:  # past any id a database holds
        raise LedgerError(f"kv_reference_boot={shown(value)}: no such boot")
    return value.strip()


def set_deploy(ledger: Ledger, ref: str, assignments: list[str]) -> tuple[str, dict[str, int | str]]:
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
    from .db.writes import put_deploy_settings

    with ledger.writer() as writer:
        current = put_deploy_settings(writer, d_id, pairs)
    return name, typed_settings(current)


def _one_deploy(ledger: Ledger, ref: str) -> tuple[int, str]:
    """The id and name of the one deploy ``ref`` names."""
    with ledger.reading() as s:
        d = one_deploy(s, ref)
        return d.id, deploy_name(d)


def _same_group(ledger: Ledger, deploy: int, name: str, ref_boot: int) -> None:
    """A reference boot predicts a deploy's tokens only from its own group (model, KV dtype,
    TP, block size, engine release): refuse one of another group, showing both keys.  A key
    that is not known (figures missing) is not refused: the view then says 'insufficient'."""
    with ledger.reading() as s:
        latest = latest_boot(s, deploy)
    if latest is None:
        return
    keys = {r["boot_id"]: r["group_key"] for r in view_rows(ledger, "boot_kv", [latest.id, ref_boot])}
    mine, theirs = keys.get(latest.id), keys.get(ref_boot)
    if mine and theirs and mine != theirs:
        raise LedgerError(f"kv_reference_boot={ref_boot}: boot {ref_boot} is of another group "
                          f"({theirs}) than {name} ({mine}); its cost per token does not predict this deploy")


def unset_deploy(ledger: Ledger, ref: str, keys: list[str]) -> tuple[str, dict[str, int | str]]:
    """Remove settings from one deploy; its name and the settings it keeps."""
    for key in keys:
        if key not in SETTINGS:
            raise LedgerError(f"{key}: unknown setting (known: {', '.join(SETTINGS)})")
    d_id, name = _one_deploy(ledger, ref)
    with ledger.reading() as s:
        have = set(s.scalars('SELECT "key" FROM deploy_setting WHERE deploy_id = :d', {"d": d_id}))
    unset = [k for k in dict.fromkeys(keys) if k not in have]
    if unset:
        raise LedgerError(f"{name}: {', '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set "
                          f"({'its settings: ' + ', '.join(sorted(have)) if have else 'it has no settings'}); "
                          f"nothing removed")
    from .db.writes import delete_deploy_settings

    with ledger.writer() as writer:
        current = delete_deploy_settings(writer, d_id, keys)
    return name, typed_settings(current)


def label_deploy(ledger: Ledger, ref: str, label: str) -> tuple[str, str]:
    """Give one deploy a new label; its name before and after."""
    label = label.strip()
    if not label:
        raise LedgerError("a label cannot be empty")
    from .db.writes import set_deploy_label

    d_id, before = _one_deploy(ledger, ref)
    with ledger.writer() as writer:
        set_deploy_label(writer, d_id, label)
    with ledger.reading() as s:
        after = deploy_name(get_deploy(s, d_id))  # type: ignore[arg-type]
    return before, after


def move_to_deploy(ledger: Ledger, refs: list[str], target: str | None, info: DeployInfo | None) -> dict[str, Any]:
    """``ledger deploy move``: boots (ids) to the deploy ``target`` names, or to the deploy
    of ``info``'s identity (created if there is none).  The report: the boots, the deploy
    they now belong to and the deploys they left (by name)."""
    bad = [r for r in refs if not (r.strip().isascii() and r.strip().isdigit())]
    if bad:
        raise LedgerError(f"{shown(bad[0])}: ledger deploy move takes boot ids (as ledger history shows them)")
    ids = [as_id(r) for r in refs]
    if None in ids:  # past any id a database holds (an int no column binds)
        raise LedgerError(f"{shown(refs[ids.index(None)])}: no boot by that id; nothing moved")
    if (target is None) == (info is None):
        raise LedgerError("give the deploy to move to: DEPLOY, or --commit/--image (and --label) of a deploy")
    dest: int | DeployInfo
    if target is not None:
        dest, _ = _one_deploy(ledger, target)
    else:
        assert info is not None
        dest = _deploy_of_identity(ledger, info)
    from .db.writes import move_boots

    with ledger.writer() as writer:
        deploy, came_from = move_boots(writer, [i for i in ids if i is not None], dest)
    with ledger.reading() as s:
        names = {d: f"deploy:{d} ({deploy_name(get_deploy(s, d)).strip('()')})"  # type: ignore[arg-type]
                 for d in {deploy, *came_from}}
    return {"boots": sorted({i for i in ids if i is not None}), "deploy": names[deploy],
            "from": [{"deploy": names[d], "boots": b} for d, b in sorted(came_from.items())]}


def _deploy_of_identity(ledger: Ledger, info: DeployInfo) -> int | DeployInfo:
    """The deploy ``--commit``/``--image`` name: the one whose commit begins with the sha given
    (or the sha given with its commit: a short sha stored) and whose image is the one given, if
    any — ``deploy move --commit 4f1c2e9`` finds the deploy ingested with the full sha; its
    ``--label`` is checked against it (renamed with ``--relabel``).  ``info`` itself when no
    deploy has that commit: the deploy is made.  Several: an error naming each."""
    if not info.commit:
        return info
    from .queries import more_than_one, resolve_deploys

    with ledger.reading() as s:
        found = [d for d in resolve_deploys(s, info.commit)
                 if d.commit_sha and (d.commit_sha.startswith(info.commit) or info.commit.startswith(d.commit_sha))
                 and (info.image is None or d.image_digest == info.image)]
        if not found:
            return info
        exact = [d for d in found if d.commit_sha == info.commit and d.image_digest == info.image]
        if len(found) > 1 and not exact:
            raise LedgerError(more_than_one(f"--commit {info.commit}", found) + " (as DEPLOY); nothing moved")
        d = (exact or found)[0]
    if info.label and d.label != info.label:
        if d.label and not info.relabel:
            from .db.writes import label_conflict

            raise LedgerError(label_conflict(d.id, d.label, info.label))
        from .db.writes import set_deploy_label

        with ledger.writer() as writer:
            set_deploy_label(writer, d.id, info.label)
    return d.id


def remove_deploy(ledger: Ledger, ref: str) -> str:
    """``ledger deploy rm``: remove a deploy that has no boots (left empty by ``deploy move``)
    with its settings; refused while it has boots.  Its name as it was (``deploy:N (name)``)."""
    from .db.writes import delete_deploy

    d_id, name = _one_deploy(ledger, ref)
    with ledger.writer() as writer:
        delete_deploy(writer, d_id)
    return f"deploy:{d_id} ({name.strip('()')})"


def describe_boots(ledger: Ledger, refs: list[str]) -> list[dict[str, Any]]:
    """Each boot id in ``refs`` (id, outcome, deploy, source), for ``ledger rm`` to show what
    it removes; an unknown id or a ref that is not an id is an error."""
    bad = [r for r in refs if not (r.strip().isascii() and r.strip().isdigit())]
    if bad:
        raise LedgerError(f"{shown(bad[0])}: ledger rm takes boot ids (as ledger history shows them)")
    out = []
    with ledger.reading() as s:
        for ref in refs:
            number = as_id(ref)
            b = None if number is None else get_boot(s, number)
            if b is None:
                raise LedgerError(f"{shown(ref)}: no boot by that id; nothing removed")
            out.append({"boot": boot_id(b.id), "outcome": b.outcome, "deploy": deploy_name(b.deploy),
                        "source": f"{b.source_path}:{b.first_line}-{b.last_line}"})
    return out


def remove_boots(ledger: Ledger, ids: list[int]) -> int:
    from .db.writes import delete_boots

    with ledger.writer() as writer:
        return delete_boots(writer, ids)


def list_deploys(ledger: Ledger) -> list[dict[str, Any]]:
    with ledger.reading() as s:
        settings: dict[int, dict[str, str]] = {}
        for deploy_id, key, value in s.tuples('SELECT deploy_id, "key", value FROM deploy_setting ORDER BY id'):
            settings.setdefault(deploy_id, {})[key] = value
        counts = dict(s.tuples("SELECT deploy_id, COUNT(*) FROM boot GROUP BY deploy_id"))
        return [{"deploy": d.id, "name": deploy_name(d), "commit": d.commit_sha, "image": d.image_digest,
                 "label": d.label, "boots": counts.get(d.id, 0), "settings": typed_settings(settings.get(d.id, {}))}
                for d in deploys_where(s)]
