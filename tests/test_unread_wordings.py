"""The CI guard for the next unread wording: over every fixture, a line that carries a figure in
one of facts.md's units (memory, tokens, seconds, %, x) or states an exception, and that no rule
reads, fails — unless it is listed below with why it stays unread (the goldens' notes and
``unreadable`` entries say the same).  Built on what ``ledger grammar check`` calls "unclaimed
lines with figures"; a listed line that a rule reads now must leave the list."""

from __future__ import annotations

import re

from conftest import ROOT

from ledger.parsers.packs import Pack, check, load_pack

# a figure in a unit of facts.md, or an exception stated ("RuntimeError: …", "SystemExit:")
WORDING = re.compile(
    r"\d[\d,]*(?:\.\d+)?\s?(?:GiB|MiB|KiB|GB|MB|Gb|slots|tokens|t/s|%|s|secs|seconds|x)(?!\w)"
    r"|\d\)\]Gb\b"  # tpu-inference's per-chip list: hbm=[(3.74, 31.25), …]Gb
    r"|^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit)\b"
)

_COMPILE_PART = "a part of the torch.compile total the log prints as 'torch.compile takes/took X s in total'"
_PADDING = "KV page-layout detail (padding), no vocabulary name"
_BAR = "a tqdm progress bar: its % and rates are progress, not a figure of the boot"

# (fixture, line) -> why the line stays unread
UNREAD = {
    ("015", 20): "'CUDA graphs can take additional 1~3 GiB' is advice, not a measurement",
    ("017", 14): "'Initial profiling/warmup run took X s': a step inside init engine, no vocabulary name",
    ("017", 17): _PADDING,
    ("021", 11): _PADDING,
    ("022", 14): _COMPILE_PART,
    ("022", 16): _COMPILE_PART,
    ("024", 11): _COMPILE_PART,
    ("024", 13): _COMPILE_PART,
    ("024", 14): _COMPILE_PART,
    ("024", 15): _COMPILE_PART,
    ("024", 16): _COMPILE_PART,
    ("024", 17): _COMPILE_PART,
    ("032", 16): _COMPILE_PART,
    ("033", 11): "'Initial profiling/warmup run took X s': a step inside init engine, no vocabulary name",
    ("033", 12): _PADDING,
    ("033", 16): _BAR,
    ("033", 17): _BAR,
    ("034", 12): _COMPILE_PART,
    ("034", 13): _COMPILE_PART,
    ("034", 16): "'Initial profiling/warmup run took X s': a step inside init engine, no vocabulary name",
    ("046", 16): "'CUDA graphs can take additional 1~3 GiB' is advice, not a measurement",
    ("049", 13): _PADDING,
    ("049", 17): _PADDING,
    ("053", 13): "gpustack's own profiling logger, not a vLLM line",
    ("209", 11): _COMPILE_PART,
    ("211", 18): "checkpoint size on disk and host RAM (the loader's prefetch inputs), not GPU memory",
    ("211", 21): "'JIT kernel warmup finished in X s': a warm-up step inside init, no vocabulary name",
    ("216", 11): _BAR,
    ("216", 12): _BAR,
    ("217", 11): "tpu-inference's own per-chip 'hbm=[(used, limit), …]Gb' list: grammar-pack material, no rank form",
    ("217", 17): "tpu-inference's own per-chip 'hbm=[(used, limit), …]Gb' list: grammar-pack material, no rank form",
    ("218", 20): "Intel llm-scaler's own '[Memory Profiling Analysis]' block: grammar-pack material",
    ("218", 21): "Intel llm-scaler's own '[Memory Profiling Analysis]' block: grammar-pack material",
    ("218", 22): "Intel llm-scaler's own '[Memory Profiling Analysis]' block: grammar-pack material",
    ("218", 23): "Intel llm-scaler's own '[Memory Profiling Analysis]' block: grammar-pack material",
    ("219", 18): _PADDING,
    ("219", 51): _COMPILE_PART,
    ("219", 53): _COMPILE_PART,
    ("220", 40): "the worker's signal handler exiting (SystemExit) at shutdown, not a failure",
    ("419", 11): "vllm-omni's own '[Model Loaded] … size=X MB' logging line (not vLLM's; its stage's weights)",
    ("419", 15): "the encoder cache's budget in tokens: a multimodal knob, no vocabulary name",
    ("601", 19): "tpu-inference's 'Memory statistics | total_hbm_limit_gb=…GiB | …' (TPU HBM per chip): no facts.md "
                 "name holds it (total_gpu_memory_bytes is V0's profiler and V1's 'Free memory on device' line)",
    ("615", 11): "LMCache's own logger printing its configuration dict (its CPU and disk cache sizes): LMCache's, not "
                 "vLLM's; grammar-pack material",
}

LOGS = [p for p in sorted((ROOT / "fixtures").glob("*/*.log")) if p.parent.name != "sglang"] \
    + sorted((ROOT / "fixtures" / "live").glob("*/*.log"))  # the real vLLM's whole logs (the lab)
RADIANCE = load_pack(ROOT / "ledger" / "parsers" / "packs" / "radiance.toml")
NO_PACK = Pack("none", "the built-in grammar alone", ROOT, "test")


# The real vLLM's whole logs (fixtures/live) repeat their lines in every recording: their unread
# wordings are listed once each, by what the line says -> why it stays unread
UNREAD_LIVE = {
    "Initializing model took ": "the model object's construction time, a part of the load the log also prints "
                                "as 'Loading weights took' / model_load_seconds; no vocabulary name",
    "Checkpoint size: ": "the loader's note on the checkpoint file and the host's free RAM (0.32's base_loader): "
                        "no vocabulary name, and the RAM is the host's, not the engine's",
    "Initial profiling/warmup run took ": _COMPILE_PART.replace("a part of the torch.compile total", "a step inside init engine"),
    "[shutdown] ": "a stop's own bookkeeping (timeout=0s, mode=abort): how the boot ended is read from the stop's "
                   "first line, these figures are settings of the stop",
    "No available shared memory broadcast block found in ": "shm_broadcast's warning that a process is busy "
                                                            "(here: compiling); facts.md: a warning, not a failure",
}


def _excused(key: tuple[str, int], raw: str) -> bool:
    return key[0].startswith("live/") and any(w in raw for w in UNREAD_LIVE)


def _key(log) -> str:
    """``208`` for a real excerpt, ``synthetic/001``, ``live/bf16-kv`` for a recorded log."""
    if log.parent.parent.name == "live":
        return f"live/{log.stem}"
    return f"{log.parent.name}/{log.name[:3]}" if log.parent.name != "real" else log.name[:3]


def unread_lines() -> dict[tuple[str, int], str]:
    """Every fixture line carrying a WORDING that no rule reads, keyed like UNREAD."""
    out = {}
    for log in LOGS:
        pack = RADIANCE if log.parent.name == "radiance" else NO_PACK  # fork lines are a pack's
        for _, number, raw in check(pack, [str(log)], unread=WORDING).unclaimed:
            out[(_key(log), number)] = raw
    return out


def test_every_line_carrying_a_vocabulary_wording_is_read_or_listed_with_why():
    found = unread_lines()
    new = {key: raw for key, raw in found.items() if key not in UNREAD and not _excused(key, raw)}
    assert new == {}, "read these lines (and name their figures) or list them in UNREAD with why"


def test_every_listed_unread_line_is_still_unread():
    found = unread_lines()
    assert sorted(set(UNREAD) - set(found)) == []


def test_every_listed_unread_live_wording_is_still_printed_and_unread():
    found = [raw for key, raw in unread_lines().items() if key[0].startswith("live/")]
    assert [w for w in UNREAD_LIVE if not any(w in raw for raw in found)] == []
