"""The real fixtures by class — release range, backend, wrapper, failure kind — and how many
fixtures and figures each class covers, counted from the goldens.  The guide's tables under
"What is read" (docs/guide.md) are this module's ``render()``; ``test_readme_fixture_tables`` holds them equal,
so a new fixture (or a changed golden) shows in the counts.

Release range and backend are as the excerpt prints them or as fixtures/real/README.md
estimates them; the wrapper is what a reader must peel first; the failure kind is the golden's
(first failure, or the outcome when there is none).

    python tests/fixture_classes.py   # prints the tables
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"

V0_OLD, V0, V1_EARLY, V1_MID, V1_NEW, V1_UNKNOWN = (
    "V0 0.2-0.6", "V0 0.6.6-0.9", "V1 0.7-0.10", "V1 0.11-0.19", "V1 0.20+ and main", "V1, release not told")
NVIDIA, NOT_STATED, ROCM, XPU, TPU, ASCEND, TENSTORRENT, CPU = (
    "CUDA, NVIDIA GPU named", "CUDA presumed (GPU not named)", "ROCm (AMD)", "XPU (Intel Arc)", "TPU (tpu-inference)",
    "Ascend NPU (vllm-ascend)", "Tenstorrent", "CPU backend (IBM Z)")
PLAIN, CONTAINER, COMPOSE, JOURNALD, RAY, QUOTED, MESSAGE_ONLY, CI, ESCAPES, OTHER_LOGGER, TERMINAL = (
    "none: vLLM's own prefixes", "container / CI timestamps (RFC 3339, Buildkite)", "docker compose `name | `",
    "journald", "Ray worker prefixes (nested, `ip=`)", "markdown quote / mangled markdown",
    "message-only: quote bars, notebook or bare traceback", "CI log copy without prefixes",
    "caret / octal colour escapes", "another program's logger interleaved", "terminal wrap and padding, tqdm bars")
SERVICE_TAG, SITE_FORMAT = "a hosting service's tag (`[vllm]: `)", "a site's own log format (full date, pid)"

ORDER = [V0_OLD, V0, V1_EARLY, V1_MID, V1_NEW, V1_UNKNOWN, NVIDIA, NOT_STATED, ROCM, XPU, TPU, ASCEND, TENSTORRENT, CPU,
         PLAIN, TERMINAL, CONTAINER, COMPOSE, JOURNALD, RAY, QUOTED, MESSAGE_ONLY, CI, ESCAPES, OTHER_LOGGER,
         SERVICE_TAG, SITE_FORMAT]

# fixture -> (release range, backend, wrapper)
CLASSES: dict[str, tuple[str, str, str]] = {
    "002": (V0, NOT_STATED, RAY),
    "003": (V0, NVIDIA, PLAIN),
    "004": (V0, NOT_STATED, PLAIN),
    "005": (V1_MID, NOT_STATED, CONTAINER),
    "006": (V1_MID, NOT_STATED, QUOTED),
    "007": (V1_EARLY, NOT_STATED, PLAIN),
    "008": (V1_NEW, NVIDIA, PLAIN),
    "010": (V1_NEW, NVIDIA, PLAIN),
    "011": (V1_NEW, NVIDIA, PLAIN),
    "013": (V0, NVIDIA, RAY),
    "015": (V0_OLD, NVIDIA, PLAIN),
    "016": (V0, NVIDIA, PLAIN),
    "017": (V1_NEW, XPU, PLAIN),
    "018": (V1_EARLY, NOT_STATED, COMPOSE),
    "021": (V1_NEW, NVIDIA, PLAIN),
    "022": (V1_EARLY, NVIDIA, QUOTED),
    "024": (V1_MID, NOT_STATED, PLAIN),
    "026": (V0, NOT_STATED, OTHER_LOGGER),
    "028": (V1_UNKNOWN, NOT_STATED, PLAIN),
    "029": (V1_UNKNOWN, TENSTORRENT, CONTAINER),
    "030": (V1_NEW, NVIDIA, PLAIN),
    "032": (V1_UNKNOWN, NOT_STATED, TERMINAL),
    "033": (V1_UNKNOWN, NVIDIA, PLAIN),
    "034": (V1_MID, NOT_STATED, PLAIN),
    "036": (V1_UNKNOWN, NOT_STATED, TERMINAL),
    "037": (V0, NOT_STATED, PLAIN),
    "039": (V1_UNKNOWN, NOT_STATED, PLAIN),
    "040": (V1_EARLY, NOT_STATED, TERMINAL),
    "042": (V1_EARLY, NOT_STATED, PLAIN),
    "043": (V0_OLD, NOT_STATED, PLAIN),
    "045": (V0_OLD, NOT_STATED, CONTAINER),
    "046": (V0_OLD, NOT_STATED, PLAIN),
    "048": (V0, NVIDIA, PLAIN),
    "049": (V1_NEW, NVIDIA, PLAIN),
    "050": (V1_MID, NOT_STATED, TERMINAL),
    "052": (V0_OLD, NOT_STATED, RAY),
    "053": (V0, NOT_STATED, OTHER_LOGGER),
    "055": (V1_UNKNOWN, NVIDIA, COMPOSE),
    "056": (V1_EARLY, NOT_STATED, PLAIN),
    "058": (V1_NEW, NVIDIA, PLAIN),
    "060": (V1_NEW, NVIDIA, PLAIN),
    "062": (V1_EARLY, NOT_STATED, PLAIN),
    "201": (V1_EARLY, NOT_STATED, MESSAGE_ONLY),
    "202": (V1_MID, NOT_STATED, MESSAGE_ONLY),
    "203": (V1_EARLY, NOT_STATED, MESSAGE_ONLY),
    "204": (V1_NEW, NVIDIA, MESSAGE_ONLY),
    "205": (V1_MID, NOT_STATED, PLAIN),
    "206": (V1_MID, NOT_STATED, RAY),
    "207": (V1_EARLY, NOT_STATED, PLAIN),
    "208": (V1_MID, ROCM, RAY),
    "209": (V1_MID, NVIDIA, PLAIN),
    "210": (V1_NEW, NVIDIA, CI),
    "211": (V1_NEW, NVIDIA, PLAIN),
    "212": (V1_MID, NOT_STATED, COMPOSE),
    "213": (V1_MID, NVIDIA, PLAIN),
    "214": (V1_NEW, NOT_STATED, OTHER_LOGGER),
    "215": (V1_MID, NOT_STATED, PLAIN),
    "216": (V1_MID, NOT_STATED, TERMINAL),
    "217": (V1_EARLY, TPU, PLAIN),
    "218": (V1_MID, XPU, PLAIN),
    "219": (V1_MID, ROCM, PLAIN),
    "220": (V1_EARLY, ASCEND, ESCAPES),
    "221": (V1_MID, NOT_STATED, CONTAINER),
    "222": (V1_NEW, NOT_STATED, JOURNALD),
    "223": (V1_MID, NVIDIA, CONTAINER),
    "224": (V0, NVIDIA, ESCAPES),
    "225": (V1_EARLY, NOT_STATED, PLAIN),
    "226": (V1_NEW, NVIDIA, RAY),
    "401": (V1_NEW, NOT_STATED, CONTAINER),
    "402": (V1_MID, NOT_STATED, PLAIN),
    "403": (V1_MID, NVIDIA, CI),
    "404": (V0_OLD, NOT_STATED, SERVICE_TAG),
    "405": (V0_OLD, NOT_STATED, PLAIN),
    "406": (V1_EARLY, NOT_STATED, PLAIN),
    "407": (V0_OLD, NOT_STATED, RAY),
    "408": (V0, ROCM, PLAIN),
    "409": (V1_MID, NOT_STATED, RAY),
    "410": (V1_NEW, NVIDIA, PLAIN),
    "411": (V0_OLD, NOT_STATED, SITE_FORMAT),
    "412": (V1_MID, NVIDIA, PLAIN),
    "413": (V0_OLD, NVIDIA, PLAIN),
    "414": (V1_EARLY, NOT_STATED, PLAIN),
    "415": (V1_EARLY, NOT_STATED, PLAIN),
    "416": (V1_EARLY, NOT_STATED, RAY),
    "417": (V0, NOT_STATED, RAY),
    "418": (V1_EARLY, NOT_STATED, MESSAGE_ONLY),
    "419": (V1_MID, NVIDIA, OTHER_LOGGER),
    "420": (V1_EARLY, NOT_STATED, OTHER_LOGGER),
    "601": (V1_MID, TPU, PLAIN),
    "602": (V1_MID, NOT_STATED, PLAIN),
    "603": (V0, NOT_STATED, PLAIN),
    "604": (V1_MID, NOT_STATED, PLAIN),
    "605": (V0_OLD, NOT_STATED, CONTAINER),
    "606": (V0, NVIDIA, PLAIN),
    "607": (V1_NEW, NOT_STATED, PLAIN),
    "608": (V1_EARLY, NOT_STATED, TERMINAL),
    "609": (V1_MID, NOT_STATED, PLAIN),
    "610": (V0_OLD, NOT_STATED, TERMINAL),
    "611": (V1_EARLY, NOT_STATED, PLAIN),
    "612": (V0_OLD, NVIDIA, SERVICE_TAG),
    "613": (V0_OLD, NOT_STATED, OTHER_LOGGER),
    "614": (V0, NOT_STATED, TERMINAL),
    "615": (V1_EARLY, NOT_STATED, OTHER_LOGGER),
    "616": (V1_MID, CPU, PLAIN),
    "617": (V0_OLD, NOT_STATED, PLAIN),
    "619": (V0, ASCEND, PLAIN),
    "620": (V0, NVIDIA, PLAIN),
}


def counts(golden: dict) -> dict[str, int]:
    boots = golden["boots"]
    return {
        "facts": sum(len(b["facts"]) for b in boots),
        "failures": sum(len(b["failures"]) for b in boots),
        "failure figures": sum(len(f["figures"]) for b in boots for f in b["failures"]),
        "runtime samples": sum(len(b["runtime"]["samples"]) for b in boots),
        "shape keys": sum(len(b["shape"]) for b in boots),
    }


def failure_kind(golden: dict) -> str:
    for boot in golden["boots"]:
        for failure in boot["failures"]:
            return f"`{failure['kind']}`"
    return "none (" + ", ".join(sorted({b["outcome"] for b in golden["boots"]})) + ")"


def goldens() -> dict[str, dict]:
    return {p.name[:3]: json.loads(p.read_text()) for p in sorted(REAL.glob("*.golden.json"))}


def render() -> str:
    """Markdown: one table per class dimension, rows in the order the labels are declared (failure
    kinds by name, fixtures without a failure last)."""
    gold = goldens()
    dims = {
        "release range": {k: v[0] for k, v in CLASSES.items()},
        "backend": {k: v[1] for k, v in CLASSES.items()},
        "wrapper": {k: v[2] for k, v in CLASSES.items()},
        "failure kind": {k: failure_kind(g) for k, g in gold.items()},
    }
    columns = ["fixtures", "facts", "failures", "failure figures", "runtime samples", "shape keys"]
    out = []
    for dim, labels in dims.items():
        rows: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(columns, 0))
        for fixture, label in sorted(labels.items(), key=lambda kv: (ORDER.index(kv[1]) if kv[1] in ORDER
                                                                     else len(ORDER), kv[1].startswith("none"), kv[1])):
            row = rows[label]
            row["fixtures"] += 1
            for name, n in counts(gold[fixture]).items():
                row[name] += n
        out.append(f"| {dim} | " + " | ".join(columns) + " |")
        out.append("|---|" + "---:|" * len(columns))
        for label, row in rows.items():
            out.append(f"| {label} | " + " | ".join(str(row[c]) for c in columns) + " |")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
