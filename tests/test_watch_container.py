"""``ledger watch --container`` against a real podman container whose command prints a log slowly
(issue 26), read through ``ledger.origins`` (issue 24): the boots are stored as they are
printed and are what ``ledger ingest --container`` stores of the finished container.  Skipped
where podman cannot run a container (``tools/podman-here.sh`` of the shared folder sets it up
on the project's machines)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from conftest import ROOT
from dbutil import rows
from test_watch import _same_as_ingest
from watchlog import T0, TOLD_FROM_START, Watch, boot, crash, served, wait_until

# real containers (podman's start-up, conmon, an image import): heavy, run by .ci/run, not everyday
pytestmark = pytest.mark.heavy
PRINT_SLOWLY = "while read -r l; do printf '%s\\n' \"$l\"; sleep 0.01; done < /log/boot.log"


def _podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, timeout=120)


@pytest.fixture
def container(tmp_path):
    """A container (not started yet) whose command prints a served boot that crashes."""
    if shutil.which("podman") is None or _podman("info", check=False).returncode != 0:
        pytest.skip("podman cannot run containers here")
    root = tmp_path / "rootfs"
    for d in ("bin", "lib/x86_64-linux-gnu", "lib64", "log"):
        (root / d).mkdir(parents=True)
    shutil.copy("/bin/dash", root / "bin" / "sh")
    shutil.copy("/bin/sleep", root / "bin" / "sleep")
    shutil.copy("/bin/cat", root / "bin" / "cat")
    for lib in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"):
        shutil.copy(lib, root / lib.lstrip("/"))
    (root / "log" / "boot.log").write_text(boot(T0) + served(T0, 5) + crash(T0 + dt.timedelta(minutes=1)))
    tag = uuid.uuid4().hex[:10]
    image, name = f"localhost/ledger-watch-test:{tag}", f"ledger-watch-test-{tag}"
    subprocess.run(["tar", "-C", str(root), "-cf", str(tmp_path / "rootfs.tar"), "."], check=True)
    _podman("import", str(tmp_path / "rootfs.tar"), image)
    _podman("create", "--name", name, image, "/bin/sh", "-c", PRINT_SLOWLY)
    try:
        yield name
    finally:
        _podman("rm", "-f", name, check=False)
        _podman("rmi", "-f", image, check=False)


def test_a_container_printing_its_log_slowly_is_watched_as_it_prints(db, tmp_path, container):
    w = Watch(db, *TOLD_FROM_START, "--container", container, "--runtime", "podman", "--format", "jsonl")
    _podman("start", container)
    w.wait_line(lambda x: '"crashed"' in x, timeout=60)
    assert w.stop() == 0
    (source,) = rows(db, "SELECT DISTINCT source_path FROM boot")[0]
    assert source.startswith(f"container:{container}@")
    plain = str(tmp_path / "plain.db")
    done = subprocess.run([sys.executable, "-m", "ledger", "ingest", "--db", plain, "--container", container,
                           "--runtime", "podman"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    _same_as_ingest(db, plain)


def _stored_samples(db: str) -> int:
    """The samples the watch has stored so far; 0 before it made the ledger (a new PostgreSQL
    database has no tables until the watch's first write migrates it)."""
    try:
        return int(rows(db, "SELECT count(*) FROM runtime_sample_row")[0][0])
    except Exception:  # noqa: BLE001
        return 0


def test_a_container_printing_split_lines_is_watched_with_every_sample_and_figure(db, tmp_path, container):
    """The lines the runtime kept as several records (``logs --timestamps`` prints each record's
    time in the middle of the line; issue 38, item 3) are read whole by the watch too: its
    samples are those of an ingest of the file the container printed."""
    from test_containers import SAMPLES, _ingest, _long_lines_log

    data = tmp_path / "data"
    data.mkdir()
    log = _long_lines_log(data, intervals=5_000)
    image = _podman("container", "inspect", container, "--format", "{{.ImageName}}").stdout.strip()
    name = f"{container}-long"
    _podman("create", "--name", name, "-v", f"{data}:/data", image, "/bin/sh", "-c", "cat /data/long.log")
    try:
        w = Watch(db, "--container", name, "--runtime", "podman", "--format", "jsonl")
        _podman("start", name)
        plain = str(tmp_path / "file.db")
        assert _ingest("--db", plain, str(log)).returncode == 0
        # 5,000 records through podman, the watch and its batches: seconds alone, a minute and
        # more on two cores shared with another suite
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and _stored_samples(db) < 4_999:
            time.sleep(0.2)
        assert w.stop() == 0
        assert rows(db, SAMPLES) == rows(plain, SAMPLES), (w.stderr[-3000:], w.lines)
    finally:
        _podman("rm", "-f", name, check=False)


def _image_of(container: str) -> str:
    return _podman("container", "inspect", container, "--format", "{{.ImageName}}").stdout.strip()


def _id_of(name: str) -> str:
    return _podman("container", "inspect", name, "--format", "{{.Id}}").stdout.strip()


def test_a_redeployed_container_is_followed_by_its_name(db, tmp_path, container):
    """``podman rm -f`` then ``podman run --name`` the same name (issue 38, item 5): the watch
    says once that the container is gone, then reads the new one from its start as a source of
    its own.  Before: it retried the removed container about once a second, forever, and never
    read the new one."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.log").write_text(boot(T0) + served(T0, 3))
    later = T0 + dt.timedelta(hours=1)
    (data / "b.log").write_text(boot(later, 2, 44) + served(later, 4, api_pid=2))
    image, name = _image_of(container), f"{container}-redeploy"
    run = ("run", "-d", "--name", name, "-v", f"{data}:/data", image, "/bin/sh", "-c")
    _podman(*run, "cat /data/a.log; sleep 600")
    try:
        first = _id_of(name)
        w = Watch(db, "--container", name, "--runtime", "podman", "--format", "jsonl")
        wait_until(lambda: _outcomes(db) == [(f"container:{name}@{first[:12]}", "ready")], timeout=60,
                   what="the first container's boot")
        _podman("rm", "-f", "-t", "0", name)
        w.wait_line(lambda x: '"source_down"' in x, timeout=30)
        time.sleep(4)  # looking for it again, less and less often, saying nothing more
        _podman(*run, "cat /data/b.log; sleep 600")
        second = _id_of(name)
        w.wait_line(lambda x: '"recovered"' in x, timeout=60)
        wait_until(lambda: len(_outcomes(db)) == 2, timeout=60, what="the new container's boot")
        assert w.stop() == 0
    finally:
        _podman("rm", "-f", "-t", "0", name, check=False)
    assert _outcomes(db) == [(f"container:{name}@{first[:12]}", "ready"), (f"container:{name}@{second[:12]}", "ready")]
    alerts = w.alerts()
    down = [a for a in alerts if a["kind"] == "source_down"]
    assert len(down) == 1 and down[0]["message"] == f"container {name} was removed: nothing to read until it runs again"
    [back] = [a for a in alerts if a["kind"] == "recovered"]
    assert back["source"] == f"container:{name}@{second[:12]}"
    # the new container's boot is what an ingest of it stores, under its own source and origin
    assert rows(db, "SELECT value FROM boot_origin o JOIN boot b ON b.id = o.boot_id "
                    "WHERE o.key = 'container_id' ORDER BY b.id") == [(first,), (second,)]
    assert "was removed" in w.stderr and w.stderr.count(name) <= 4, w.stderr


def test_a_stopped_container_is_said_down_once_and_looked_for_less_and_less_often(db, tmp_path, container):
    """A container that stopped (exit 1): one alert and one line on stderr, the name looked up
    again after 1 s, 2 s, 4 s … (not every second), and its next run read when it is started
    again.  Before: "starting it again" on stderr every second (22 times in 38 s), no alert."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.log").write_text(boot(T0) + served(T0, 3))
    calls = tmp_path / "calls"
    shim = tmp_path / "bin"
    shim.mkdir()
    real = shutil.which("podman")
    (shim / "podman").write_text(f'#!/bin/sh\necho "$1 $2" >> {calls}\nexec {real} "$@"\n')
    (shim / "podman").chmod(0o755)
    image, name = _image_of(container), f"{container}-stops"
    _podman("create", "--name", name, "-v", f"{data}:/data", image, "/bin/sh", "-c",
            "cat /data/a.log; [ -e /data/again ] && sleep 600; exit 1")
    try:
        _podman("start", name)
        wait_until(lambda: _podman("container", "inspect", name, "--format", "{{.State.Status}}").stdout.strip()
                   == "exited", timeout=30, what="the container exited")
        w = Watch(db, "--container", name, "--runtime", "podman", "--format", "jsonl",
                  env={"PATH": f"{shim}:{os.environ['PATH']}"})
        w.wait_line(lambda x: '"source_down"' in x, timeout=60)
        calls.write_text("")
        time.sleep(10)
        looks = calls.read_text().splitlines()
        (data / "again").touch()
        _podman("start", name)  # its second run prints the log again (a boot of its own) and stays up
        w.wait_line(lambda x: '"recovered"' in x, timeout=60)
        wait_until(lambda: len(_outcomes(db)) == 2, timeout=60, what="the second run's boot")
        assert w.stop() == 0
    finally:
        _podman("rm", "-f", "-t", "0", name, check=False)
    # one look (inspect, and its image and events) per try: 1 s, 2 s, 4 s, 8 s apart — at most 4
    # tries in 10 s, where once a second was 10
    inspects = [x for x in looks if x.startswith("container inspect")]
    assert 1 <= len(inspects) <= 4, looks
    down = [a for a in w.alerts() if a["kind"] == "source_down"]
    assert len(down) == 1 and f"container {name} (" in down[0]["message"] and "exit code 1" in down[0]["message"]
    assert "starting it again" not in w.stderr and w.stderr.count(name) <= 4, w.stderr


def _outcomes(db: str) -> list[tuple]:
    try:
        return rows(db, "SELECT source_path, outcome FROM boot ORDER BY id")
    except Exception:  # noqa: BLE001 (the ledger is not created yet)
        return []
