"""Small mistakes said aloud (issue 38, finding 18): ``sweep`` of a knob no boot prints is an
error, of a knob that does not vary says so; ``ingest --at-boot-time`` says which boots git
found no commit for; ``model add`` says what geometry it replaced; a group's KV reference that
moves to an older boot arriving is said, with the boot it was and why."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import ROOT

SWEEPS = ROOT / "fixtures" / "sweeps"
REC = ROOT / "fixtures" / "reconcile"
MODELS = ROOT / "fixtures" / "models"


def _ok(cli, *args: str):
    r = cli(*args)
    assert r.exit_code == 0, (args, r.output)
    return r


@pytest.fixture
def ladder(db, cli):
    for f in sorted(SWEEPS.glob("bf16-3x*.log")):
        _ok(cli, "ingest", str(f), "--label", "night")
    return db


def test_sweep_of_a_knob_no_boot_prints_is_an_error(ladder, cli):
    r = cli("sweep", "foo", "--deploy", "night")
    assert r.exit_code == 2
    assert r.output.startswith("Error: foo: none of these 4 boots prints that knob; the knobs that vary between "
                               "them: max_model_len"), r.output
    assert len(r.output.strip().splitlines()) == 1


def test_a_knob_that_does_not_vary_says_so(ladder, cli):
    out = _ok(cli, "sweep", "max_num_seqs", "--deploy", "night").stdout
    assert "frontier: none: max_num_seqs does not vary (3 in every boot); max_model_len does" in out
    assert "not monotone" not in out
    frontier = json.loads(_ok(cli, "sweep", "max_num_seqs", "--deploy", "night", "--format", "json").stdout)["frontier"]
    assert frontier["varies"] is False and frontier["largest_passing"] is None
    varying = json.loads(_ok(cli, "sweep", "max_model_len", "--deploy", "night", "--format", "json").stdout)
    assert varying["frontier"]["varies"] is True and varying["frontier"]["largest_passing"] == 241664


def test_at_boot_time_finding_no_commit_says_so(db, cli, tmp_path):
    repo = tmp_path / "deploy"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_AUTHOR_DATE": "2030-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2030-01-01T00:00:00Z"}
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "after every boot"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    r = _ok(cli, "ingest", str(REC / "bf16-3x241664-ready.log"), "--repo", str(repo), "--at-boot-time")
    assert ("warning: " + str(REC / "bf16-3x241664-ready.log") + ": 1 boot has no commit of " + str(repo)
            + " at its start (lines 1-13, started 2026-09-29 23:41:02: before the repo's first commit); "
            "stored with no commit") in r.stderr, r.stderr
    assert json.loads(_ok(cli, "show", "1", "--format", "json").stdout)["deploy"]["commit"] is None


def test_model_add_replacing_a_geometry_says_so(db, cli, tmp_path):
    _ok(cli, "ingest", str(REC / "bf16-3x241664-ready.log"))
    config = json.loads((MODELS / "llama-3.2-1b-instruct" / "config.json").read_text())
    first = tmp_path / "a" / "config.json"
    first.parent.mkdir()
    first.write_text(json.dumps(config))
    out = _ok(cli, "model", "add", str(first), "--as", "llama").stdout
    assert "replaces" not in out
    config["num_hidden_layers"] += 2
    second = tmp_path / "b" / "config.json"
    second.parent.mkdir()
    second.write_text(json.dumps(config))
    out = _ok(cli, "model", "add", str(second), "--as", "llama").stdout
    assert f"  replaces  the geometry from model add {first} (" in out, out
    assert f"layers {config['num_hidden_layers'] - 2} -> {config['num_hidden_layers']}" in out
    obj = json.loads(_ok(cli, "model", "add", str(second), "--as", "llama", "--format", "json").stdout)
    assert obj["replaced"]["source"] == f"model add {second}" and obj["replaced"]["changed"] == {}
    assert "the same geometry" in _ok(cli, "model", "add", str(second), "--as", "llama").stdout


def test_a_groups_kv_reference_that_moves_to_an_older_boot_is_said(db, cli):
    _ok(cli, "ingest", str(SWEEPS / "bf16-3x241664-ready-util098.log"), "--label", "night")
    r = _ok(cli, "ingest", str(SWEEPS / "bf16-3x237568-ready.log"), "--label", "night")
    assert ("now its group's KV reference in place of boot 1 (the earliest ready boot is the reference: this one "
            "started 2026-09-29 21:10:04, boot 1 2026-09-29 21:40:04); ledger deploy set night kv_reference_boot=1 "
            "keeps boot 1") in r.stdout, r.stdout
    checks = json.loads(_ok(cli, "show", "1", "--format", "json").stdout)["checks"]
    assert any("boot 2" in c["detail"] for c in checks if c["what"] == "kv reconciliation")
    # a boot that does not move the reference says nothing of it
    r = _ok(cli, "ingest", str(REC / "fp8-4x262144-ready.log"), "--label", "fp8")
    assert "KV reference" not in r.stdout
