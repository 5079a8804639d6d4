"""Names printed are names taken (issue 38, finding 17): every name ``history``, ``deploy list``,
``diff``, ``ingest``, ``deploy move`` and serve's datalists print for a deploy is accepted back as
a reference (``ledger.queries.resolve_deploys``, the one place references are read);
``deploy move --commit <short sha>`` finds the deploy that has it; an empty deploy can be
removed; a full commit sha that names several deploys of that commit picks one (``note``, the
commit hook)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

REC = ROOT / "fixtures" / "reconcile"
SHA = "fe20ea6cc4" + "0" * 30
IMAGE = "sha256:da402966aaaa" + "b" * 52


def _ok(cli, *args: str) -> str:
    r = cli(*args)
    assert r.exit_code == 0, (args, r.output)
    return r.stdout


@pytest.fixture
def named(db, cli):
    """Three deploys named each way a name is printed: a label, a commit and an image
    (``qwen-fp8 / fe20ea6cc4 / da402966aaaa``); nothing (``(unnamed)``); a dirty commit."""
    _ok(cli, "ingest", str(REC / "fp8-4x262144-ready.log"), "--label", "qwen-fp8", "--commit", SHA, "--image", IMAGE)
    _ok(cli, "ingest", str(REC / "bf16-3x241664-ready.log"))
    _ok(cli, "ingest", str(REC / "fp8-3x262144-ready.log"), "--commit", "1234567abc")
    return db


def _deploy_of(cli, ref: str) -> str:
    return json.loads(_ok(cli, "show", ref, "--format", "json"))["deploy"]["id"]


def test_every_deploy_name_history_and_deploy_list_print_is_taken(named, cli):
    listed = json.loads(_ok(cli, "deploy", "list", "--format", "json"))
    assert {d["name"] for d in listed} == {"qwen-fp8 / fe20ea6cc4 / da402966aaaa", "(unnamed)", "1234567abc"}
    for d in listed:
        assert _deploy_of(cli, d["name"]) == d["deploy"], d["name"]
        assert _ok(cli, "deploy", "set", d["name"], "card_ceiling_bytes=24GiB")
    for row in json.loads(_ok(cli, "history", "--format", "json")):
        assert _ok(cli, "history", "--deploy", row["deploy"], "--format", "json")
        shown = json.loads(_ok(cli, "show", row["deploy"], "--format", "json"))
        assert shown["boot"] == row["boot"], row["deploy"]


def test_the_names_diff_and_ingest_print_are_taken(named, cli, tmp_path):
    d = json.loads(_ok(cli, "diff", "qwen-fp8", "1234567abc", "--format", "json"))
    assert _ok(cli, "diff", d["a"]["deploy"], d["b"]["deploy"])
    out = _ok(cli, "ingest", str(REC / "fp8-5x262144-runtime-oom.log"), "--label", "oom")
    said = out[out.index("-> ") + 3:].strip()  # "deploy:4 (oom)"
    assert said == "deploy:4 (oom)"
    assert _deploy_of(cli, said) == 4
    assert _ok(cli, "deploy", "label", said, "oom-5slot")


def test_the_names_deploy_move_prints_are_taken(named, cli):
    out = _ok(cli, "deploy", "move", "2", "qwen-fp8 / fe20ea6cc4 / da402966aaaa")
    for line in out.splitlines():
        for name in [x for x in line.split() if x.startswith("deploy:")]:
            start = line.index(name)
            whole = line[start:line.index(")", start) + 1] if "(" in line[start:] else name
            assert _ok(cli, "deploy", "list"), whole
            assert cli("deploy", "set", whole, "host_cap_bytes=100GiB").exit_code == 0, whole


def test_a_dirty_commits_printed_name_is_taken(db, cli, tmp_path):
    repo = tmp_path / "deploy"
    git = _git(repo, db)
    (repo / "serve.sh").write_text("x\n")
    git("add", "serve.sh")
    git("commit", "-qm", "one")
    (repo / "serve.sh").write_text("dirty\n")
    _ok(cli, "ingest", str(REC / "fp8-4x262144-ready.log"), "--repo", str(repo))
    name = json.loads(_ok(cli, "deploy", "list", "--format", "json"))[0]["name"]
    assert name.endswith("+dirty")
    assert _deploy_of(cli, name) == 1


def test_unnamed_names_the_deploy_of_the_boots_with_no_identity(named, cli):
    """Every boot ingested with no label, commit or image is of one deploy (identity ''):
    ``(unnamed)`` names it, whatever else the ledger holds."""
    assert _deploy_of(cli, "(unnamed)") == 2
    _ok(cli, "ingest", str(REC / "fp8-5x262144-runtime-oom.log"))
    assert _deploy_of(cli, "(unnamed)") == 2
    assert json.loads(_ok(cli, "show", "(unnamed)@ready", "--format", "json"))["boot"] == "2"


def test_the_web_datalists_names_are_taken(named):
    from starlette.testclient import TestClient

    from ledger.db.connect import open_read_only
    from ledger.serve.app import LOOPBACK_NAMES, create_app
    from ledger.serve.data import deploy_names

    ledger = open_read_only(named)
    try:
        client = TestClient(create_app(ledger, allowed_hosts=LOOPBACK_NAMES), base_url="http://127.0.0.1")
        names = deploy_names(ledger)
        assert "(unnamed)" in names and "qwen-fp8 / fe20ea6cc4 / da402966aaaa" in names
        for name in names:
            r = client.get("/api/diff", params={"a": name, "b": name})
            assert r.status_code == 200, (name, r.text)
    finally:
        ledger.dispose()


def test_deploy_move_commit_short_sha_finds_the_deploy_that_has_it(named, cli):
    out = _ok(cli, "deploy", "move", "2", "--commit", "fe20ea6")
    assert "deploy:1" in out
    listed = json.loads(_ok(cli, "deploy", "list", "--format", "json"))
    assert len(listed) == 3  # no new deploy
    assert [d["boots"] for d in listed if d["deploy"] == 1] == [2]


def test_an_empty_deploy_can_be_removed(named, cli):
    r = cli("deploy", "rm", "(unnamed)")
    assert r.exit_code == 2 and "has 1 boot" in r.output  # not while it has boots
    _ok(cli, "deploy", "move", "2", "qwen-fp8")
    out = _ok(cli, "deploy", "rm", "(unnamed)")
    assert "deploy:2" in out and "removed" in out
    assert {d["deploy"] for d in json.loads(_ok(cli, "deploy", "list", "--format", "json"))} == {1, 3}


def _git(repo: Path, db: str):
    repo.mkdir(exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "LEDGER_DB": db,
           "LEDGER": str(Path(sys.executable).parent / "ledger")}

    def git(*a: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *a], cwd=repo, env=env, check=True, capture_output=True, text=True)

    git("init", "-q")
    return git


@pytest.fixture
def two_at_head(db, cli, tmp_path):
    """HEAD with two deploys: the clean one (a file's boot, no image) and the dirty night ladder
    (the working tree changed, with the container's image)."""
    repo = tmp_path / "deploy"
    git = _git(repo, db)
    (repo / "serve.sh").write_text("vllm serve --kv-cache-memory-bytes 11047010304\n")
    git("add", "serve.sh")
    git("commit", "-qm", "bf16 at three windows")
    _ok(cli, "ingest", str(REC / "bf16-3x241664-ready.log"), "--repo", str(repo))
    (repo / "serve.sh").write_text("vllm serve --max-num-seqs 4\n")
    _ok(cli, "ingest", str(REC / "fp8-4x262144-ready.log"), "--repo", str(repo), "--image", IMAGE)
    head = git("rev-parse", "HEAD").stdout.strip()
    return repo, git, head


def test_note_of_a_full_sha_never_asks_for_more_of_it(two_at_head, cli):
    _repo, _git_, head = two_at_head
    assert len(json.loads(_ok(cli, "deploy", "list", "--format", "json"))) == 2
    out = _ok(cli, "note", head, "--format", "json")
    assert json.loads(out)["a"]["boot"] == "1"  # the clean deploy's boot
    assert "more of it" not in out


def test_the_commit_hook_picks_a_deploy_when_head_has_two(two_at_head, cli):
    repo, git, _head = two_at_head
    hook = repo / ".git" / "hooks" / "prepare-commit-msg"
    hook.write_text(_ok(cli, "note", "--hook"))
    hook.chmod(0o755)
    git("commit", "-q", "--allow-empty", "-m", "Pin the pool")
    message = git("log", "-1", "--format=%B").stdout
    assert "KV-Tokens: 798280" in message, message


def test_a_full_sha_finds_the_deploy_stored_with_its_short_sha(db, cli):
    _ok(cli, "ingest", str(REC / "fp8-4x262144-ready.log"), "--commit", SHA[:7])
    assert _deploy_of(cli, SHA) == 1
    assert json.loads(_ok(cli, "note", SHA, "--format", "json"))["a"]["boot"] == "1"
