"""``ledger ingest --container`` on a real container runtime: podman, made to work here by
shared/tools/podman-here.sh (``.ci/run`` runs it as root).  No registry is reachable, so the
image is a tarball of a tiny root filesystem (a shell, cat, sleep and real logs of
fixtures/real/) imported with ``podman import``.  Skipped, with the reason, where podman cannot
run a container.  Every container and the image are removed afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REAL

F008 = REAL / "008_v1-nightly-dual4090-dflash-kvpool-specdecode-runtime.log"
F028 = REAL / "028_v1-mtp-runtime-engine-stats-high-kv-usage-waiting.log"
TAG = f"ledgertest-{os.getpid()}"
IMAGE = f"localhost/{TAG}:1"
PODMAN = shutil.which("podman")
# real containers (podman's start-up, conmon, an image import): heavy, run by .ci/run, not everyday
pytestmark = pytest.mark.heavy
WAIT = 30.0  # seconds any one container gets to do what it must


def _podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    assert PODMAN is not None
    return subprocess.run([PODMAN, *args], capture_output=True, text=True, timeout=120, check=check)


def _rootfs(folder: Path) -> Path:
    """A root filesystem with dash, cat, sleep and their loader, and the logs under /log."""
    root = folder / "root"
    for sub in ("bin", "lib/x86_64-linux-gnu", "lib64", "log", "ctl"):
        (root / sub).mkdir(parents=True)
    shutil.copy("/bin/dash", root / "bin/sh")
    shutil.copy("/bin/cat", root / "bin/cat")
    shutil.copy("/bin/sleep", root / "bin/sleep")
    shutil.copy("/lib/x86_64-linux-gnu/libc.so.6", root / "lib/x86_64-linux-gnu/")
    shutil.copy("/lib64/ld-linux-x86-64.so.2", root / "lib64/")
    shutil.copy(F008, root / "log/008.log")
    shutil.copy(F028, root / "log/028.log")
    lines = F008.read_text().splitlines(keepends=True)
    (root / "log/008-first.log").write_text("".join(lines[:15]))
    (root / "log/008-rest.log").write_text("".join(lines[15:]))
    tar = folder / "rootfs.tar"
    subprocess.run(["tar", "-C", str(root), "-cf", str(tar), "."], check=True)
    return tar


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """The test image (its OCI labels set), or a skip saying why podman cannot run here."""
    if PODMAN is None:
        pytest.skip("podman is not installed (as root: bash shared/tools/podman-here.sh)")
    if not all(Path(p).exists() for p in ("/bin/dash", "/lib64/ld-linux-x86-64.so.2",
                                            "/lib/x86_64-linux-gnu/libc.so.6")):
        pytest.skip("no x86-64 Debian dash and loader to build the test image from")
    tar = _rootfs(tmp_path_factory.mktemp("image"))
    made = _podman("import", "--change", "LABEL org.opencontainers.image.revision=0123abc",
                   "--change", "LABEL org.opencontainers.image.version=0.20.2",
                   "--change", "LABEL org.opencontainers.image.source=https://example.invalid/deploy",
                   str(tar), IMAGE, check=False)
    if made.returncode != 0:
        pytest.skip(f"podman cannot import an image here: {made.stderr.strip().splitlines()[-1:]}")
    probe = _podman("run", "--rm", IMAGE, "/bin/cat", "/log/008.log", check=False)
    if probe.returncode != 0:
        _podman("rmi", "-f", IMAGE, check=False)
        pytest.skip(f"podman cannot run a container here (as root: bash shared/tools/podman-here.sh): "
                    f"{(probe.stderr.strip().splitlines() or ['?'])[-1]}")
    yield IMAGE
    names = _podman("ps", "-a", "--filter", f"name={TAG}", "--format", "{{.Names}}", check=False).stdout.split()
    if names:
        _podman("rm", "-f", "-t", "0", *names, check=False)
    _podman("rmi", "-f", IMAGE, check=False)


def _run(image: str, name: str, *args: str, script: str, detach: bool = False) -> str:
    """A container ``TAG-name`` running ``sh -c script``; its full name."""
    full = f"{TAG}-{name}"
    _podman("run", *(["-d"] if detach else []), "--name", full, *args, image, "/bin/sh", "-c", script)
    return full


def _inspect(name: str) -> dict:
    return json.loads(_podman("container", "inspect", name).stdout)[0]


def _wait(what, seconds: float = WAIT) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError("the container did not get there in time")
        time.sleep(0.1)


def _exported(cli, *args: str) -> list[dict]:
    r = cli("ingest", *args, "--format", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_one_boot_keeps_the_containers_image_digest(image, db, cli):
    name = _run(image, "one", script="cat /log/008.log >&2")
    [boot] = _exported(cli, "--container", name)
    assert boot["deploy"]["image_digest"] == _inspect(name)["ImageDigest"]


def test_a_containers_boots_are_named_after_it(image, db, cli):
    name = _run(image, "named", script="cat /log/008.log >&2")
    [boot] = _exported(cli, "--container", name)
    assert boot["source"]["path"] == f"container:{name}@{_inspect(name)['Id'][:12]}"


def test_the_same_container_again_stores_nothing(image, db, cli):
    name = _run(image, "again", script="cat /log/008.log >&2")
    cli("ingest", "--container", name)
    r = cli("ingest", "--container", name)
    assert r.exit_code == 0 and "already in the ledger (1 boot in deploy:1" in r.output


def test_the_oci_labels_are_kept_with_the_boot(image, db, cli):
    name = _run(image, "labels", script="cat /log/008.log >&2")
    [boot] = _exported(cli, "--container", name)
    assert {k: boot["origin"][k] for k in ("oci_revision", "oci_version", "oci_source")} == {
        "oci_revision": "0123abc", "oci_version": "0.20.2", "oci_source": "https://example.invalid/deploy"}


def test_show_names_the_container(image, db, cli):
    name = _run(image, "show", script="cat /log/008.log >&2")
    cli("ingest", "--container", name)
    assert f"origin   container {name}  id {_inspect(name)['Id'][:12]}  runtime podman  run 1" in cli("show", "1").output


def test_a_restart_loop_gives_one_boot_per_run(image, db, cli):
    name = _run(image, "loop", "--restart", "on-failure:3", script="cat /log/008.log >&2; exit 1", detach=True)
    _wait(lambda: _inspect(name)["RestartCount"] == 3 and _inspect(name)["State"]["Status"] == "exited")
    boots = _exported(cli, "--container", name)
    assert [(b["origin"]["run"], b["origin"]["restart_count"], b["outcome"]) for b in boots] == [
        ("1", "3", "ready"), ("2", "3", "ready"), ("3", "3", "ready"), ("4", "3", "ready")]


def test_a_runtime_log_keeps_every_stats_interval(image, db, cli, tmp_path):
    name = _run(image, "runtime", script="cat /log/028.log")
    [boot] = _exported(cli, "--container", name)
    [from_file] = _exported(cli, str(F028), "--db", str(tmp_path / "file.db"))
    assert boot["runtime"] == from_file["runtime"] and boot["runtime"]["engine_stats"] > 0


def test_a_running_container_ingested_twice_keeps_one_boot_that_grew(image, db, cli, tmp_path):
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    name = _run(image, "running", "-v", f"{ctl}:/ctl", detach=True,
                script="cat /log/008-first.log >&2; while [ ! -e /ctl/go ]; do sleep 0.1; done; "
                       "cat /log/008-rest.log >&2; sleep 600")
    first_part = F008.read_text().splitlines()[14]
    _wait(lambda: first_part in _podman("logs", name, check=False).stderr)
    cli("ingest", "--container", name)
    (ctl / "go").touch()
    last = F008.read_text().splitlines()[-1]
    _wait(lambda: last in _podman("logs", name, check=False).stderr)
    r = cli("ingest", "--container", name)
    assert "boot 2" in r.output and "supersedes boot 1" in r.output
    assert [b["boot"] for b in json.loads(cli("export").output)] == ["2"]


def test_a_container_that_does_not_exist_is_one_line(image, db, cli):
    r = cli("ingest", "--container", f"{TAG}-missing", "--runtime", "podman")
    assert r.exit_code == 2
    assert r.output == f"Error: no container {TAG}-missing found (podman: Error: inspecting object: no such container " \
                       f"{TAG}-missing)\n"


def test_dockers_cli_path_gives_what_podmans_gives(image, db, cli, tmp_path, monkeypatch):
    """docker here is a client with no engine: the docker path runs through podman's
    docker-compatible CLI (a ``docker`` on PATH that is podman)."""
    name = _run(image, "docker", script="cat /log/008.log >&2")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "docker").write_text(f"#!/bin/sh\nexec {PODMAN} \"$@\"\n")
    (shim / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    [by_docker] = _exported(cli, "--container", name, "--runtime", "docker")
    [by_podman] = _exported(cli, "--container", name, "--runtime", "podman", "--db", str(tmp_path / "p.db"))
    assert by_docker["origin"].pop("runtime") == "docker" and by_podman["origin"].pop("runtime") == "podman"
    by_docker.pop("boot")
    by_podman.pop("boot")
    assert by_docker == by_podman


def _long_lines_log(folder: Path, intervals: int = 20_000) -> Path:
    """A served boot whose stats lines (each with its own figures) are printed as fast as cat
    writes, with a 40 kB line every 500 of them: the runtime's log pipe is read in the middle of
    hundreds of lines and the long ones are split into several records."""
    import datetime as dt

    from watchlog import T0, boot, stats

    parts = [boot(T0)]
    for i in range(intervals):
        at = T0 + dt.timedelta(seconds=10 * (i + 1))
        parts.append(stats(at, tps=100.0 + i % 97 + (i % 10) / 10, running=1 + i % 13, kv=(i % 1000) / 10))
        if i % 500 == 250:
            parts.append(f"(APIServer pid=1) WARNING {at:%m-%d %H:%M:%S} [serving.py:42] " + "long " * 8000 + "end\n")
    log = folder / "long.log"
    log.write_text("".join(parts))
    return log


SAMPLES = ("SELECT count(*), count(generation_throughput_tps), count(gpu_kv_cache_usage_pct), "
           "sum(generation_throughput_tps), sum(running_reqs), sum(gpu_kv_cache_usage_pct) FROM runtime_sample")


def _ingest(*args: str) -> subprocess.CompletedProcess:
    import sys

    from conftest import ROOT

    return subprocess.run([sys.executable, "-m", "ledger", "ingest", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)


def test_long_and_split_lines_keep_every_sample_and_figure(image, db, tmp_path):
    """``podman logs --timestamps`` prints a line the runtime kept as several records with each
    record's time in the middle of it (issue 38, item 3: 674 of 200,000 samples lost, 2,661
    without a figure).  The container's samples are the file's, every one with its figures."""
    from dbutil import rows

    data = tmp_path / "data"
    data.mkdir()
    log = _long_lines_log(data)
    name = _run(image, "long", "-v", f"{data}:/data", script="cat /data/long.log")
    printed = _podman("logs", "--timestamps", name).stdout.splitlines()
    mid = sum(1 for line in printed if line.count("Z ") > 1)
    assert mid > 50, mid  # the runtime did split lines: the case is there
    done = _ingest("--db", db, "--container", name, "--runtime", "podman")
    assert done.returncode == 0, done.stderr
    plain = str(tmp_path / "file.db")
    done = _ingest("--db", plain, str(log))
    assert done.returncode == 0, done.stderr
    assert rows(plain, SAMPLES)[0][0] == 20_000
    assert rows(db, SAMPLES) == rows(plain, SAMPLES)
    q = "SELECT outcome, first_line, last_line FROM boot"
    assert rows(db, q) == rows(plain, q)
