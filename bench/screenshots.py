"""Screenshots of every page of ``ledger serve`` at 1,280 px wide, into ``docs/img/`` (the guide
shows them): on a ledger filled as the README's quick start fills ``demo.db`` (the real
excerpts, then the reconcile and radiance boots, each labelled with its name).

    python bench/screenshots.py              # writes docs/img/*.png
    python bench/screenshots.py /tmp/shots   # elsewhere

Run from the repository's folder, with the ``serve`` and ``test`` extras and Debian's
``chromium`` (Playwright drives it headless, as ``tests/test_serve.py`` does).  Each page is
opened at a 1,280 × 900 viewport and shot whole (full page), then stored as a 256-colour PNG
(a few hundred KB at most).  Before each shot the script says what would be clipped: a page
wider than the viewport, or an element whose content is wider than its box while its overflow
hides it (a cut table column).  Look at the images too.  Nothing here is timed.
"""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner
from serve_pages import serve  # bench/ is on the path: python bench/screenshots.py

from ledger.cli import main

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
WIDTH = 1280

# elements whose content is wider than their box and whose overflow hides the rest
CLIPPED = """() => [...document.querySelectorAll('body *')].filter(e => {
  const s = getComputedStyle(e);
  return e.scrollWidth > e.clientWidth + 1 && ['hidden', 'clip'].includes(s.overflowX);
}).map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ': ' + e.textContent.trim().slice(0, 60))"""


def fill(db: str) -> None:
    """The quick start's ingests (README.md, "Quick start"), in this process."""
    runner = CliRunner()

    def run(*args: str) -> None:
        r = runner.invoke(main, [*args, "--db", db], env={"LEDGER_DB": None, "LEDGER_GRAMMARS": None})
        if r.exit_code != 0:
            raise SystemExit(f"ledger {' '.join(args)}: {r.output}")

    run("ingest", *sorted(str(p) for p in Path("fixtures/real").glob("*.log")))
    for log in sorted(Path("fixtures/reconcile").glob("*.log")):
        run("ingest", "--label", log.stem, str(log))
    for log in sorted(Path("fixtures/radiance").glob("*.log")):
        run("ingest", "--grammar", "radiance", "--label", f"radiance-{log.stem}", str(log))


def boot_of(db: str, label: str) -> str:
    """The latest boot of the deploy labelled ``label``."""
    r = CliRunner().invoke(main, ["history", "--deploy", label, "--limit", "1", "--columns", "boot", "--format",
                                  "csv", "--db", db])
    return r.stdout.split()[1]


def pages(db: str) -> dict[str, str]:
    """Every page of ``ledger/serve/app.py``'s PAGES with a real id: name -> path."""
    fp8_4, fp8_5 = boot_of(db, "fp8-4x262144-ready"), boot_of(db, "fp8-5x262144-runtime-oom")
    broken = boot_of(db, "radiance-fp8-3x200k-ready")
    spec = CliRunner().invoke(main, ["sql", "SELECT id FROM boot WHERE source_path LIKE '%/008_v1-nightly%'",
                                     "--format", "csv", "--db", db]).stdout.split()[1]
    return {
        "deploys": "/",
        "deploy": "/deploy/1",  # the real excerpts' deploy: many boots
        "boot": f"/boot/{broken}",  # a broken contract and a VRAM ceiling over
        "boot-runtime": f"/boot/{fp8_5}",  # runtime charts to the OOM that killed it
        "boot-spec-decode": f"/boot/{spec}",  # a real excerpt's runtime, speculative decoding included
        "diff": f"/diff?a={fp8_4}&b={fp8_5}",
        "diff-form": "/diff",
        "check": "/check",
    }


def small_png(path: Path) -> None:
    """The screenshot as a 256-colour PNG: text and charts survive, the file shrinks 3-4x."""
    from PIL import Image

    with Image.open(path) as image:
        quantized = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    quantized.save(path, optimize=True)


def shoot(base: str, paths: dict[str, str], out: Path) -> list[str]:
    """Each page's screenshot; what was clipped, if anything."""
    from playwright.sync_api import sync_playwright

    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()
        for name, path in paths.items():
            response = page.goto(base + path)
            if response is None or response.status != 200:
                problems.append(f"{name}: {path} answered {response.status if response else 'nothing'}")
            wide = page.evaluate("document.documentElement.scrollWidth")
            if wide > WIDTH:
                problems.append(f"{name}: {path} is {wide} px wide")
            problems += [f"{name}: clipped {what}" for what in page.evaluate(CLIPPED)]
            target = out / f"{name}.png"
            page.screenshot(path=str(target), full_page=True)
            small_png(target)
            print(f"{target}  {path}  {target.stat().st_size // 1024} KB")
        browser.close()
    return problems


def main_(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "demo.db")  # the header names it: sqlite:////tmp/…/demo.db
        fill(db)
        proc, base = serve(db)
        try:
            problems = shoot(base, pages(db), out)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=20)
    for problem in problems:
        print("clipped?", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main_(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/img")))
