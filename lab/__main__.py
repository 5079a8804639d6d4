"""``python -m lab``: the live lab's commands (run from the repository's root)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab", description=__doc__, epilog=(
        "examples:\n  python -m lab list\n  python -m lab record                 # every scenario, into "
        "fixtures/live/vllm-VERSION/\n  python -m lab record fp8-kv bf16-kv\n  python -m lab model /tmp/tiny "
        "--geometry wide"), formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run scenarios against the real vLLM and write their logs as fixtures")
    rec.add_argument("names", nargs="*", help="scenarios (default: all; see `list`)")
    rec.add_argument("--out", type=Path, help="folder (default: fixtures/live/vllm-VERSION)")
    rec.add_argument("--work", type=Path, help="keep models and raw logs here (default: a temporary folder)")
    mod = sub.add_parser("model", help="make a tiny model (needs transformers: run it with vLLM's Python)")
    mod.add_argument("out", type=Path)
    mod.add_argument("--geometry", default="tiny")
    sub.add_parser("list", help="the scenarios")
    a = ap.parse_args(argv)
    if a.command == "model":
        from .model import GEOMETRIES, make
        if a.geometry not in GEOMETRIES:
            ap.error(f"unknown geometry {a.geometry!r}: one of {', '.join(GEOMETRIES)}")
        print(make(a.out, GEOMETRIES[a.geometry]))
        return 0
    from .scenarios import BY_NAME, SCENARIOS
    if a.command == "list":
        for s in SCENARIOS:
            print(f"{s.name:24} {s.model:6} {s.what}")
        return 0
    unknown = [n for n in a.names if n not in BY_NAME]
    if unknown:
        ap.error(f"unknown scenario(s): {', '.join(unknown)} (python -m lab list)")
    from .record import ROOT
    from .record import main as record_main
    from .server import vllm_version
    out = a.out
    if out is None:
        version = vllm_version()
        if version is None:
            print("Error: no vLLM in this Python (pip install -e '.[live]', or set LEDGER_LAB_PYTHON)", file=sys.stderr)
            return 2
        out = ROOT / "fixtures" / "live" / f"vllm-{version}"
    return record_main(a.names, out, a.work)


if __name__ == "__main__":
    sys.exit(main())
