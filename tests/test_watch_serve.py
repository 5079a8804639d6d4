"""``ledger serve`` while ``ledger watch`` writes (issue 26): the boot being read is marked live and
its page reloads itself (a plain refresh: no script, nothing from elsewhere), the deploys page
marks the watched deploy, and neither mark stays once the watch has stopped."""

from __future__ import annotations

import datetime as dt

from test_serve import pages
from test_watch import _boots
from watchlog import T0, Watch, append, boot, served, wait_until


def test_a_watched_boot_s_page_refreshes_and_its_deploy_is_marked_watched(db, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(boot(T0) + served(T0, 3))
    # samples committed every 0.2 s (not 5 s): the page shows the next batch sooner
    w = Watch(db, str(log), "--label", "qwen-live", "--commit-every", "200ms")
    wait_until(lambda: _boots(db) == [(1, "ready")])
    with pages(db) as get:  # serve's application, reading the ledger the watch writes

        def page_at(path: str) -> str:
            status, text = get(path)
            assert status == 200, path
            return text

        page = page_at("/boot/1")
        assert '<meta http-equiv="refresh" content="10">' in page
        assert 'class="live"' in page
        deploys = page_at("/")
        assert 'class="live"' in deploys and ">watched<" in deploys
        append(log, served(T0 + dt.timedelta(minutes=5), 4))
        # the next request sees the batch stored meanwhile (the page's cache follows the ledger)
        wait_until(lambda: "6 stats intervals" in page_at("/boot/1"), what="the new batch on the page")
        assert w.stop() == 0
        page = page_at("/boot/1")
        assert "http-equiv=\"refresh\"" not in page
        assert ">watched<" not in page_at("/")
