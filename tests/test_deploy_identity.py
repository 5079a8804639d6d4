"""Fixing a boot's deploy (issue 24): ``deploy move``, ``deploy:N`` references, the ``--label``
refusal, ingest lines that name the deploy, ``--commit`` validation, ``deploy unset`` of a key
that is not set, and ``--repo --at-boot-time``."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import REAL, ROOT, SYNTH
from dbutil import rows

F008 = next(REAL.glob("008_*.log"))
F028 = next(REAL.glob("028_*.log"))
REC = ROOT / "fixtures" / "reconcile"
RESTART = SYNTH / "journald-restart-capture-oom-then-ready.log"


def _deploy_of(db, boot: int) -> int:
    return rows(db, f"SELECT deploy_id FROM boot WHERE id = {boot}")[0][0]


# -- deploy move --------------------------------------------------------------------------------


def test_deploy_move_gives_boots_another_deploy(db, cli):
    cli("ingest", str(F008))
    cli("ingest", str(F028), "--commit", "abcdef1", "--label", "target")
    r = cli("deploy", "move", "1", "deploy:2")
    assert r.exit_code == 0 and r.output == "boot 1: deploy:1 (unnamed) -> deploy:2 (target / abcdef1)\n"
    assert _deploy_of(db, 1) == 2


def test_deploy_move_to_an_identity_creates_that_deploy(db, cli):
    cli("ingest", str(F008))
    r = cli("deploy", "move", "1", "--commit", "ABCDEF12", "--label", "fixed")
    assert r.exit_code == 0, r.output
    assert rows(db, "SELECT d.commit_sha, d.label FROM boot b JOIN deploy d ON d.id = b.deploy_id") == [
        ("abcdef12", "fixed")]


def test_deploy_move_moves_all_the_boots_or_none(db, cli):
    cli("ingest", str(F008))
    cli("ingest", str(F028), "--label", "target")
    r = cli("deploy", "move", "1", "99", "target")
    assert r.exit_code == 2 and r.output == "Error: no boot 99 in the ledger; nothing moved\n"
    assert _deploy_of(db, 1) == 1


def test_a_moved_boot_takes_the_verdicts_of_its_new_deploy(db, cli):
    cli("ingest", str(REC / "fp8-4x262144-ready.log"))
    cli("ingest", str(REC / "bf16-3x241664-ready.log"), "--label", "target")
    cli("deploy", "set", "target", "card_ceiling_bytes=1GiB")
    cli("deploy", "move", "1", "target")
    [latest] = json.loads(cli("check", "target", "--format", "json").output)
    vram = next(c for c in latest["checks"] if c["what"] == "vram ceiling")
    assert (latest["boot"], vram["verdict"]) == ("1", "over")


def test_the_web_view_shows_a_moved_boot_under_its_new_deploy(db, cli):
    from ledger import queries
    from ledger.db.connect import connect

    cli("ingest", str(F008))
    cli("ingest", str(F028), "--label", "target")
    cli("deploy", "move", "1", "target")
    ledger = connect(db, mode="read")
    try:
        assert sorted(b["boot"] for b in queries.deploy_detail(ledger, "2")["boots"]) == ["1", "2"]
    finally:
        ledger.dispose()


# -- deploy ids ---------------------------------------------------------------------------------


def test_a_deploy_id_names_its_deploy_in_show(db, cli):
    cli("ingest", str(F008), "--label", "a")
    cli("ingest", str(F028), "--label", "b")
    assert cli("show", "deploy:2", "--format", "json").output.count('"boot": "2"') == 1


def test_a_deploy_id_names_its_deploy_in_history(db, cli):
    cli("ingest", str(F008), "--label", "a")
    cli("ingest", str(F028), "--label", "b")
    assert [r["boot"] for r in json.loads(cli("history", "--deploy", "deploy:1", "--format", "json").output)] == ["1"]


def test_a_deploy_id_names_its_deploy_in_deploy_set(db, cli):
    cli("ingest", str(F008), "--label", "a")
    r = cli("deploy", "set", "deploy:1", "host_cap_bytes=1GiB")
    assert r.exit_code == 0 and r.output == "a: host_cap_bytes=1.00 GiB (1,073,741,824)\n"


def test_deploy_ids_name_the_deploys_of_a_diff(db, cli):
    cli("ingest", str(REC / "fp8-4x262144-ready.log"), "--label", "a")
    cli("ingest", str(REC / "bf16-3x241664-ready.log"), "--label", "b")
    d = json.loads(cli("diff", "deploy:1", "deploy:2", "--format", "json").output)
    assert (d["a"]["boot"], d["b"]["boot"]) == ("1", "2")


def test_an_unknown_deploy_id_is_one_line(db, cli):
    cli("ingest", str(F008))
    r = cli("show", "deploy:7")
    assert r.exit_code == 2 and r.output == "Error: deploy:7: no such deploy (ledger deploy list shows them)\n"


def test_export_names_the_deploy_by_id(db, cli):
    cli("ingest", str(F008))
    assert json.loads(cli("export").output)[0]["deploy"]["id"] == 1  # deploy:1


# -- --label on a deploy labelled otherwise ------------------------------------------------------


def test_another_label_on_a_labelled_deploy_is_refused(db, cli):
    cli("ingest", str(F008), "--commit", "abcdef1", "--label", "first")
    r = cli("ingest", str(F028), "--commit", "abcdef1", "--label", "second")
    assert r.exit_code == 2
    assert r.output == ("Error: --label second: deploy:1 (this commit and image) is labelled first; rename it with "
                        "`ledger deploy label deploy:1 second`, or ingest with --relabel\n")
    assert rows(db, "SELECT count(*) FROM boot") == [(1,)]


def test_relabel_renames_the_deploy(db, cli):
    cli("ingest", str(F008), "--commit", "abcdef1", "--label", "first")
    r = cli("ingest", str(F028), "--commit", "abcdef1", "--label", "second", "--relabel")
    assert r.exit_code == 0, r.output
    assert rows(db, "SELECT label FROM deploy") == [("second",)]


# -- ingest lines -------------------------------------------------------------------------------


def test_each_ingest_line_names_the_deploy(db, cli):
    r = cli("ingest", str(RESTART), "--label", "qwen32")
    assert [line.rsplit("  ", 1)[-1] for line in r.output.splitlines()] == ["-> deploy:1 (qwen32)"] * 2


def test_already_in_the_ledger_names_the_deploy(db, cli):
    cli("ingest", str(F008), "--label", "a")
    r = cli("ingest", str(F008))
    assert "already in the ledger (1 boot in deploy:1 (a), sha256 " in r.output


def test_a_grown_boot_is_reported_as_superseding_the_stored_one(db, cli, tmp_path):
    lines = RESTART.read_text().splitlines(keepends=True)
    log = tmp_path / "vllm.log"
    log.write_text("".join(lines[:35]))
    cli("ingest", str(log), "--year", "2026")
    log.write_text("".join(lines))
    r = cli("ingest", str(log), "--year", "2026")
    assert "supersedes boot 2 (the same boot, read again as it grew)" in r.output


# -- validation ---------------------------------------------------------------------------------


def test_commit_must_be_a_hex_sha(db, cli):
    r = cli("ingest", str(F008), "--commit", "main")
    assert r.exit_code == 2 and r.output == "Error: --commit main: expected a hex sha of 7 to 64 digits\n"


def test_commit_of_six_digits_is_too_short(db, cli):
    assert cli("ingest", str(F008), "--commit", "abcdef").exit_code == 2


def test_unset_of_a_key_not_set_says_so(db, cli):
    cli("ingest", str(F008), "--label", "a")
    cli("deploy", "set", "a", "host_cap_bytes=1GiB")
    r = cli("deploy", "unset", "a", "card_ceiling_bytes")
    assert r.exit_code == 2
    assert r.output == "Error: a: card_ceiling_bytes is not set (its settings: host_cap_bytes); nothing removed\n"


# -- --repo --at-boot-time ----------------------------------------------------------------------


def _repo(path, dated: list[str]) -> list[str]:
    """A git repo with one commit per date (committer and author); their shas."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    shas = []
    for i, when in enumerate(dated):
        (path / "f").write_text(str(i))
        subprocess.run(["git", "-C", str(path), "add", "f"], check=True, env=env)
        subprocess.run(["git", "-C", str(path), "commit", "-qm", f"c{i}"], check=True,
                       env={**env, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
        shas.append(subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                                   check=True).stdout.strip())
    return shas


def test_at_boot_time_gives_each_boot_the_commit_of_its_start(db, cli, tmp_path):
    # the restart capture's boots start 2026-09-28 21:04:09 and 21:06:46
    shas = _repo(tmp_path / "deploy", ["2026-09-28T20:00:00+00:00", "2026-09-28T21:05:00+00:00",
                                       "2026-09-29T08:00:00+00:00"])
    r = cli("ingest", str(RESTART), "--year", "2026", "--repo", str(tmp_path / "deploy"), "--at-boot-time")
    assert r.exit_code == 0, r.output
    assert rows(db, "SELECT b.first_line, d.commit_sha, d.dirty FROM boot b JOIN deploy d ON d.id = b.deploy_id "
                    "ORDER BY b.first_line") == [(1, shas[0], None), (26, shas[1], None)]


def test_at_boot_time_needs_repo(db, cli):
    r = cli("ingest", str(F008), "--at-boot-time")
    assert r.exit_code == 2 and r.output == "Error: --at-boot-time needs --repo DIR\n"


def test_a_boot_read_from_stdin_names_its_deploy(db, cli):
    r = cli("ingest", "-", "--label", "piped", input=F008.read_text())
    assert r.output.rstrip("\n").endswith("-> deploy:1 (piped)")
