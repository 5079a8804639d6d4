"""``ledger note``: the seeds' paragraph from the fork's boots (fixtures/reconcile), its git
trailers, the ready-boot selection, redaction and the commit hook.  Each figure test names the
seed sentence it checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SEED_BOOTS, ingest_seed_boots

from ledger.render.redact import Redactor

REC = ROOT / "fixtures" / "reconcile"
RADIANCE = ROOT / "fixtures" / "radiance"
DECODE = ROOT / "fixtures" / "decode"
BOOTS = SEED_BOOTS


@pytest.fixture
def seeded(filled):
    return filled("seed-boots", ingest_seed_boots)


@pytest.fixture
def served(db, cli):
    for name, label in (("fp8-4x262144-served-136tps", "fp8-control"), ("bf16-2x262144-served-129tps", "bf16-2x262144")):
        assert cli("ingest", str(DECODE / f"{name}.log"), "--label", label).exit_code == 0
    return db


def note(cli, *args: str) -> str:
    r = cli("note", *args)
    assert r.exit_code == 0, r.output
    return r.output


def parsed_trailers(message: str) -> dict[str, list[str]]:
    out = subprocess.run(["git", "interpret-trailers", "--parse"], input=message, capture_output=True, text=True,
                         check=True).stdout
    trailers: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, _, value = line.partition(": ")
        trailers.setdefault(key, []).append(value)
    return trailers


# -- the seeds' figures -------------------------------------------------------------------------------


def test_note_carries_bf16s_13838_52_bytes_per_token(seeded, cli):
    """'bf16 measures 13,839 B/token (bf16 3x241664 boot: 11,047,010,304 B -> 798,280 tokens)'"""
    out = note(cli, "bf16-3x241664-ready", "--against", "fp8-4x262144-ready")
    assert "13,838.52 B/token per rank (kv_cache_memory_bytes / KV cache size, exact)" in out
    assert "11,047,010,304 B" in out


def test_note_reads_old_to_new_tokens_and_concurrency(seeded, cli):
    """'4-slot boot 8,311,013,376 B -> 1,079,582 tokens', '1,079,582 tokens / 4.12x', and the bf16
    boot's 798,280 tokens at 3.30x: from the --against boot to the noted one."""
    out = note(cli, "bf16-3x241664-ready", "--against", "fp8-4x262144-ready")
    assert "1,079,582 tokens -> 798,280 tokens; concurrency 4.12x -> 3.30x at 262,144 -> 241,664" in out
    assert "7.74 GiB (8,311,013,376 B) -> 10.29 GiB (11,047,010,304 B) per rank" in out


def test_note_names_only_the_shape_keys_that_changed(seeded, cli):
    out = note(cli, "bf16-3x241664-ready", "--against", "fp8-4x262144-ready")
    (shape,) = [line for line in out.splitlines() if line.startswith("shape")]
    assert shape.split(None, 1)[1] == ("kv_cache_dtype fp8 -> auto; kv_cache_memory_bytes 7.74 GiB (8,311,013,376 B) -> "
                                       "10.29 GiB (11,047,010,304 B); max_model_len 262,144 tokens -> 241,664 tokens; "
                                       "max_num_seqs 4 -> 3")


def test_note_counts_one_sided_keys_and_lists_them_with_all(seeded, cli):
    cli("ingest", str(ROOT / "fixtures" / "sweeps" / "bf16-3x241664-ready-util098.log"), "--label", "bf16-util")
    out = note(cli, "bf16-util", "--against", "fp8-4x262144-ready")
    assert "(1 key printed on one side only; --all lists them)" in out
    assert "kv_cache_memory_bytes 7.74 GiB (8,311,013,376 B) -> —" in note(cli, "bf16-util", "--against",
                                                                            "fp8-4x262144-ready", "--all")


def test_five_windows_keep_39462_tokens_of_margin_in_the_note(seeded, cli):
    """'5 x 262144 at fp8 PASSED ... 1,350,182 tokens ... 5.15x (39,462 tokens of margin)'"""
    out = note(cli, "fp8-5x262144-runtime-oom")
    assert "ok: 5 x 262,144 = 1,310,720 tokens, margin +39,462 tokens" in out
    assert "1,350,182 tokens; concurrency 5.15x" in out


def test_the_note_says_the_5_slot_boot_crashed_at_runtime(seeded, cli):
    """'Boot is not proof of runtime survivability': the note carries the runtime OOM."""
    out = note(cli, "fp8-5x262144-runtime-oom")
    assert "has no ready boot: boot 2 is its latest (crashed)" in out
    assert 'boot 2: oom@runtime, line 18: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB' in out


def test_the_note_gives_the_source_lines_as_evidence(seeded, cli):
    out = note(cli, "bf16-3x241664-ready")
    assert "fixtures/reconcile/bf16-3x241664-ready.log:1-13" in out
    assert 'line 8: "GPU KV cache size: 798,280 tokens"' in out  # quoted: a note is prose, not a log
    assert 'line 2: "kv_cache_memory_bytes=11047010304 (the engine\'s arguments)"' in out


def test_a_reference_boot_is_reference_in_the_note(seeded, cli):
    out = note(cli, "fp8-4x262144-ready")
    assert "kv check        reference: the group's reference" in out
    assert "kv ok" not in out


def test_a_contract_without_a_kv_token_count_is_insufficient_not_a_crash(db, cli):
    (log,) = (ROOT / "fixtures" / "real").glob("010_*.log")  # seqs and max-model-len, no KV cache size line
    assert cli("ingest", str(log), "--label", "dual3090").exit_code == 0
    out = note(cli, "dual3090")
    assert "contract        insufficient: 1 x 200,000 = 200,000 tokens; no KV token count printed" in out
    assert "Contract: insufficient" in note(cli, "dual3090", "--format", "trailers")


# -- trailers ------------------------------------------------------------------------------------------


def test_trailers_parse_with_git_interpret_trailers(seeded, cli):
    block = note(cli, "bf16-3x241664-ready", "--against", "fp8-4x262144-ready", "--format", "trailers")
    t = parsed_trailers("KV is bf16 at three windows\n\nBody.\n\n" + block)
    assert t["Ledger-Boot"] == ["1"] and t["KV-Tokens"] == ["798280"]
    assert t["KV-Bytes-Per-Token"] == ["13838.52"] and t["Concurrency"] == ["3.30x"]
    assert t["Contract"] == ["ok +73288 (3x241664)"] and t["KV-Check"] == ["reference"]
    assert t["Ledger-Against"] == ["3 (fp8-4x262144-ready)"]


def test_the_7_3e9_pin_trailer_is_contract_ok_plus_3225(served, cli):
    """'524,288 tokens needs 7.256e9 B; pinned at 7.3e9 (~527,500 tokens, 3,206 margin)' — the
    boot at the pin, whose tokens the exact cost predicts (3,225 margin)."""
    t = parsed_trailers("pin\n\n" + note(cli, "bf16-2x262144", "--format", "trailers"))
    assert t["Contract"] == ["ok +3225 (2x262144)"] and t["KV-Tokens"] == ["527513"]


def test_a_failure_and_a_notice_become_trailers(seeded, cli):
    t = parsed_trailers("five\n\n" + note(cli, "fp8-5x262144-runtime-oom", "--format", "trailers"))
    assert "oom@runtime line 18" in t["Ledger-Failure"]
    assert t["Ledger-Notice"] == ["fp8-5x262144-runtime-oom has no ready boot: boot 2 is its latest (crashed)"]


def test_note_json_is_the_report_object(seeded, cli):
    obj = json.loads(note(cli, "bf16-3x241664-ready", "--against", "fp8-4x262144-ready", "--format", "json"))
    assert obj["a"]["boot"] == "1" and obj["b"]["boot"] == "3"
    assert obj["a"]["derived"]["kv_cache_tokens"] == 798_280
    assert round(obj["a"]["derived"]["bytes_per_token"], 2) == 13_838.52
    assert obj["a"]["verdicts"]["kv"] == "reference"


def test_note_markdown_is_a_list_for_a_pull_request(seeded, cli):
    out = note(cli, "bf16-3x241664-ready", "--against", "fp8-4x262144-ready", "--format", "markdown")
    assert out.startswith("**ledger note**: boot 1")
    assert "- **KV bytes/token** 7,698.36 B/token -> 13,838.52 B/token per rank" in out


# -- decode against the other boot ---------------------------------------------------------------------


def test_note_compares_decode_with_the_against_boot(served, cli):
    """'Prediction -3..-8% vs the fp8 control (136 t/s at 44.5k)'"""
    out = note(cli, "bf16-2x262144", "--against", "fp8-control")
    assert "decode          slower: decode 129.6 t/s vs 136.0 (-4.7 %), bound -3 %" in out


def test_note_without_runtime_says_decode_is_insufficient(seeded, cli):
    out = note(cli, "bf16-3x241664-ready", "--against", "fp8-4x262144-ready")
    assert "decode          insufficient: no decode figure for boot 1 and boot 3" in out


# -- which boot of a deploy ------------------------------------------------------------------------------


@pytest.fixture
def radiance_bf16(db, cli):
    """One deploy: the ready bf16 boot, then a newer boot that OOMs at graph capture."""
    for name in ("bf16-2x200k-ready", "bf16-3x262144-capture-oom"):
        r = cli("ingest", "--grammar", "radiance", str(RADIANCE / f"{name}.log"), "--label", "radiance-bf16")
        assert r.exit_code == 0
    return db


def test_a_deploy_means_its_latest_ready_boot_and_says_so(radiance_bf16, cli):
    out = note(cli, "radiance-bf16")
    assert out.startswith("note            boot 1 (radiance-bf16, ready")
    assert "boot 1 is its latest ready boot; the newer boot 2 (failed) is passed over (radiance-bf16@latest" in out


def test_at_latest_takes_the_newest_boot(radiance_bf16, cli):
    out = note(cli, "radiance-bf16@latest")
    assert out.startswith("note            boot 2 (radiance-bf16, failed")
    assert "notice" not in out


def test_at_ready_without_a_ready_boot_is_an_error(seeded, cli):
    r = cli("note", "fp8-5x262144-runtime-oom@ready")
    assert r.exit_code == 2
    assert "fp8-5x262144-runtime-oom@ready: that deploy has no ready boot (its latest, boot 2, is crashed)" in r.output


def test_a_boot_id_is_that_boot(radiance_bf16, cli):
    assert note(cli, "2").startswith("note            boot 2 (radiance-bf16, failed")


def test_note_needs_a_boot(cli, db):
    r = cli("note")
    assert r.exit_code == 2 and "give the boot or deploy to note (or --hook)" in r.output


# -- redaction ------------------------------------------------------------------------------------------


def test_paths_under_home_are_redacted_by_default(db, cli, tmp_path, monkeypatch):
    home = tmp_path / "home" / "frank"
    (home / "logs").mkdir(parents=True)
    shutil.copy(REC / "bf16-3x241664-ready.log", home / "logs" / "boot.log")
    monkeypatch.setenv("HOME", str(home))
    assert cli("ingest", str(home / "logs" / "boot.log"), "--label", "bf16").exit_code == 0
    out = note(cli, "bf16")
    assert "~/logs/boot.log:1-13" in out and str(home) not in out
    assert f"{home}/logs/boot.log:1-13" in note(cli, "bf16", "--no-redact")


def test_redaction_hides_tokens_addresses_and_host_names():
    r = Redactor(home="/home/dank", hosts=["frank-primary"])
    text = r.text("/home/dank/mtp_measure.py on frank-primary at 192.168.0.235 with hf_abcdefghijklmnopqrstuvwx12")
    assert text == "~/mtp_measure.py on <host> at <ip> with <token>"


def test_redaction_keeps_digests_loopback_and_model_names():
    r = Redactor(home="/home/dank", hosts=[])
    kept = "sha256:" + "da402966" * 8 + " 0.0.0.0 127.0.0.1 /models/Qwen3.6-35B-A3B f532e03"
    assert r.text(kept) == kept


def test_another_users_home_is_redacted_too():
    assert Redactor(home="/root", hosts=[]).text("/home/bob/serve.sh") == "/home/<user>/serve.sh"


# -- the commit hook -------------------------------------------------------------------------------------


def test_the_hook_appends_the_trailers_for_head(db, cli, tmp_path):
    repo = tmp_path / "deploy"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "LEDGER_DB": db,
           "LEDGER": str(Path(sys.executable).parent / "ledger")}
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, env=env, check=True, capture_output=True, text=True)  # noqa: E731
    git("init", "-q")
    (repo / "serve.sh").write_text("vllm serve --kv-cache-memory-bytes 11047010304\n")
    git("add", "serve.sh")
    git("commit", "-qm", "bf16 at three windows")
    assert cli("ingest", str(REC / "bf16-3x241664-ready.log"), "--repo", str(repo)).exit_code == 0
    hook = repo / ".git" / "hooks" / "prepare-commit-msg"
    hook.write_text(note(cli, "--hook"))
    hook.chmod(0o755)
    git("commit", "-q", "--allow-empty", "-m", "Pin the pool")
    message = git("log", "-1", "--format=%B").stdout
    t = parsed_trailers(message)
    assert t["KV-Tokens"] == ["798280"] and t["KV-Bytes-Per-Token"] == ["13838.52"]
    assert message.startswith("Pin the pool\n")


def test_the_hook_never_stops_a_commit_without_a_deploy(db, cli, tmp_path):
    repo = tmp_path / "other"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "LEDGER_DB": db,
           "LEDGER": str(Path(sys.executable).parent / "ledger")}
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, env=env, check=True, capture_output=True, text=True)  # noqa: E731
    git("init", "-q")
    hook = repo / ".git" / "hooks" / "prepare-commit-msg"
    hook.write_text(note(cli, "--hook"))
    hook.chmod(0o755)
    git("commit", "-q", "--allow-empty", "-m", "first")
    git("commit", "-q", "--allow-empty", "-m", "second")
    assert git("log", "-1", "--format=%B").stdout.strip() == "second"


# -- the README's tour ------------------------------------------------------------------------------------


def test_the_readme_tour_is_what_the_commands_print(db, cli, monkeypatch):
    """The tour in docs/notes.md (note, sweep, check --against on the bundled boots; the README
    links it) prints what the commands print, on a ledger filled as its bash block fills it."""
    import shlex

    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("COLUMNS", raising=False)  # tables as on a pipe: not cut
    for f in [*sorted((REC).glob("*.log")), *sorted(DECODE.glob("*.log")), ROOT / "fixtures/sweeps/fp8-6x262144-kv-alloc-oom.log"]:
        assert cli("ingest", str(f.relative_to(ROOT)), "--label", f.stem).exit_code == 0
    for f in sorted((ROOT / "fixtures" / "sweeps").glob("bf16-3x*.log")):
        assert cli("ingest", str(f.relative_to(ROOT)), "--label", "night-ladder").exit_code == 0
    readme = (ROOT / "docs" / "notes.md").read_text()
    block = readme[readme.index("<!-- tour:"):readme.index("<!-- /tour -->")]
    lines = block.split("```console\n", 1)[1].rsplit("```", 1)[0].splitlines()
    runs: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            runs.append((line[2:], []))
        else:
            runs[-1][1].append(line)
    assert [cmd.split()[1] for cmd, _ in runs] == ["note", "note", "sweep", "sweep", "check"]
    for cmd, expected in runs:
        r = cli(*shlex.split(cmd)[1:])
        assert r.output.rstrip("\n").splitlines() == expected, cmd


def test_the_readmes_commit_message_commands_are_the_tours():
    """The README shows the tour's commands (note, sweep, check --against); docs/notes.md shows
    what they print, held by the test above."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## A commit message from the ledger"):]
    block = section[section.index("```bash\n") + 8:section.index("```", section.index("```bash\n") + 8)]
    tour = (ROOT / "docs" / "notes.md").read_text()
    tour = tour[tour.index("<!-- tour:"):tour.index("<!-- /tour -->")]
    assert block.strip().splitlines() == [line[2:] for line in tour.splitlines() if line.startswith("$ ledger")]
