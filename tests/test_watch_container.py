"""``ledger watch --container`` against a real podman container whose command prints a log slowly
(issue 26), read through ``ledger.origins`` (issue 24): the boots are stored as they are
printed and are what ``ledger ingest --container`` stores of the finished container.  Skipped
where podman cannot run a container (``tools/podman-here.sh`` of the shared folder sets it up
on the project's machines)."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from conftest import ROOT
from dbutil import rows
from test_watch import _same_as_ingest
from watchlog import T0, Watch, boot, crash, served

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
    w = Watch(db, "--container", container, "--runtime", "podman", "--format", "jsonl")
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
        assert rows(db, SAMPLES) == rows(plain, SAMPLES), w.stderr[-3000:]
    finally:
        _podman("rm", "-f", name, check=False)
