"""``ledger serve`` while ``ledger watch`` writes (issue 26): the boot being read is marked live and
its page reloads itself (a plain refresh: no script, nothing from elsewhere), the deploys page
marks the watched deploy, and neither mark stays once the watch has stopped."""

from __future__ import annotations

import datetime as dt
import urllib.request

from dbutil import rows
from test_serve import _start, _stop
from test_watch import _boots
from watchlog import T0, Watch, append, boot, served, wait_until


def _get(base: str, path: str) -> str:
    with urllib.request.urlopen(base + path, timeout=20) as r:
        return r.read().decode()


def test_a_watched_boot_s_page_refreshes_and_its_deploy_is_marked_watched(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0) + served(T0, 3))
    # samples committed every 0.2 s (not 5 s): the page shows the next batch sooner
    w = Watch(db, str(log), "--label", "qwen-live", "--commit-every", "200ms")
    wait_until(lambda: _boots(db) == [(1, "ready")])
    server, base = _start(db)
    try:
        page = _get(base, "/boot/1")
        assert '<meta http-equiv="refresh" content="10">' in page
        assert 'class="live"' in page
        deploys = _get(base, "/")
        assert 'class="live"' in deploys and ">watched<" in deploys
        append(log, served(T0 + dt.timedelta(minutes=5), 4))
        # the next request once the watch has stored the batch shows it (the page's cache follows
        # the ledger); waited for in the ledger, not by asking for the page (a chart drawn each time)
        wait_until(lambda: rows(db, "SELECT engine_stats FROM boot_runtime WHERE boot_id = 1") == [(6,)],
                   what="the new batch in the ledger")
        assert "6 stats intervals" in _get(base, "/boot/1")
        assert w.stop() == 0
        page = _get(base, "/boot/1")
        assert "http-equiv=\"refresh\"" not in page
        assert ">watched<" not in _get(base, "/")
    finally:
        _stop(server)
