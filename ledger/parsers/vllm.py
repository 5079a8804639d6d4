"""The built-in grammar: what upstream vLLM prints, 0.2.7 to 0.33, as rules.

Each rule carries the format string(s) it reads and the releases that print them, from
``docs/vllm-log-lines.md`` (cited as "ref §x").  A wording that changed between
releases is one rule whose pattern has alternatives, or several rules yielding the same fact.
Patterns are searched in the message part of a line (after prefix, level, time, file:line).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import units
from .dumps import parse_dict_repr, parse_keyvalue_repr
from .lines import Line
from .rules import (
    Counter,
    CountRule,
    Event,
    Extractor,
    FactRule,
    FailureRule,
    FastShape,
    Fields,
    HintRule,
    LazyPattern,
    Marker,
    MarkerRule,
    MetaRule,
    Rule,
    RuntimeRule,
    ShapeRule,
    sample_problem,
    signed_figures,
)
from .vocabulary import (
    FactName,
    FailureFigure,
    FailureKind,
    Phase,
    RuntimeKind,
    RuntimeSeries,
    ShapeSource,
)

NUM = r"\d[\d,]*"  # an integer, maybe with thousands separators ("1,350,182")
DEC = r"\d+(?:\.\d+)?"  # a decimal as %.2f / format_gib print it ("9.74", "2.2", "0")
# the same with its sign, where vLLM may print one below zero ("-3.86"): a figure keeps its sign,
# and one whose name cannot be negative (all but available_kv_cache_bytes, facts.md) is then not
# read (``rules.FactRule``), rather than read without its "-" as a positive one
SDEC = rf"-?{DEC}"
SIZE_RX = r"\d+(?:\.\d+)? ?(?:bytes|[KMGT]iB)"  # torch format_size: "50.00 MiB", "1024 bytes"


def _fact(name: str, anchor: str, pattern: str, fields: Fields) -> FactRule:
    return FactRule(name=name, anchor=anchor, pattern=pattern, fields=fields)


def _marker(name: str, anchor: str, marker: Marker, pattern: str | None = None) -> MarkerRule:
    return MarkerRule(name=name, anchor=anchor, marker=marker, pattern=pattern)


def _shape(name: str, anchor: str, pattern: str, fields: Fields | None = None,
           extract: Extractor | None = None) -> ShapeRule:
    return ShapeRule(name=name, anchor=anchor, pattern=pattern, fields=fields or {}, extract=extract)


# -- facts --------------------------------------------------------------------------------------

# The post-warm-up suggestion (ref §2.3; INFO in 0.10.2 and 0.26+, DEBUG between): "Free memory on
# device ({f}/{t} GiB) on startup. Desired GPU memory utilization is ({u}, {r} GiB). Actual usage is
# {c} GiB for consumed memory (weights + non-torch), {a} GiB for peak activation, and {g} GiB for
# CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=<int>` (<x> GiB)
# to fit into requested memory, or `--kv-cache-memory=<int>` (<y> GiB) to fully utilize gpu
# memory. Current kv cache memory in use is <z> GiB." (0.10.2: "… in use is <int> bytes."; the
# usage part before 0.27 reads otherwise).  Read piece by piece, in printed order, so a release
# whose usage part differs still gives the rest.
_FREE_MEMORY_PIECES: list[tuple[LazyPattern, tuple[tuple[str, FactName, str], ...]]] = [
    (LazyPattern(rf"Free memory on device \((?P<f>{DEC})/(?P<t>{DEC}) GiB\)"),
     (("f", FactName.initial_free_memory_bytes, "GiB"), ("t", FactName.total_gpu_memory_bytes, "GiB"))),
    (LazyPattern(rf"Desired GPU memory utilization is \({DEC}, (?P<r>{DEC}) GiB\)"),
     (("r", FactName.requested_memory_bytes, "GiB"),)),
    (LazyPattern(rf"(?P<c>{SDEC}) GiB for consumed memory"), (("c", FactName.consumed_memory_bytes, "GiB"),)),
    (LazyPattern(rf"(?P<a>{SDEC}) GiB for peak activation"), (("a", FactName.activation_peak_bytes, "GiB"),)),
    # the graphs' memory as this line states it: its own name, so graph_capture_bytes holds only the
    # capture line's figure (one name, one wording)
    (LazyPattern(rf"(?P<g>{SDEC}) GiB for CUDAGraph memory"), (("g", FactName.cuda_graph_memory_bytes, "GiB"),)),
    # the exact byte counts, not their rounded GiB
    (LazyPattern(r"--kv-cache-memory=(?P<n>\d+)`? \([^)]*\) to fit into requested memory"),
     (("n", FactName.kv_cache_requested_limit_bytes, ""),)),
    (LazyPattern(r"--kv-cache-memory=(?P<n>\d+)`? \([^)]*\) to fully utilize gpu memory"),
     (("n", FactName.kv_cache_gpu_limit_bytes, ""),)),
    (LazyPattern(rf"kv cache memory in use is (?P<z>{SDEC}) (?P<u>GiB|bytes)"),
     (("z", FactName.available_kv_cache_bytes, "u"),)),
]


@dataclass(kw_only=True, eq=False)
class _FreeMemoryOnDevice(FactRule):
    """The suggestion line's figures (``_FREE_MEMORY_PIECES``); a unit "" is an exact byte count
    printed without one, "u" the unit the line printed."""

    def read(self, m: Any, line: Line, record: str) -> dict[str, Any] | None:
        values: dict[str, Any] = {}
        for rx, fields in _FREE_MEMORY_PIECES:
            piece = rx.search(record)
            if piece is None:
                continue
            for group, name, unit in fields:
                printed = piece.group(group)
                try:
                    if unit == "":
                        values[name] = units.Quantity(_count(printed), "bytes", None, printed)
                    else:
                        values[name] = units.quantity(printed, piece.group("u") if unit == "u" else unit)
                except units.UnitError:
                    continue  # a damaged figure costs that figure
        return signed_figures(values)


@dataclass(kw_only=True, eq=False)
class _FormatGibRule(FactRule):
    """A figure vLLM prints with ``format_gib`` (vllm/utils/mem_utils.py: ``str(round(b / GiB, 2))``):
    Python drops trailing zeros, so "1.0" is 1.00 GiB to the nearest hundredth — its precision is
    half a hundredth of a GiB, not half a tenth."""

    def read(self, m: Any, line: Line, record: str) -> dict[str, Any] | None:
        values = super().read(m, line, record)
        for name, q in (values or {}).items():
            if isinstance(q, units.Quantity) and q.unit == "bytes" and q.precision is not None:
                values[name] = dataclasses.replace(q, precision=min(q.precision, 0.005 * 2**30))  # type: ignore[index]
        return values


FACT_RULES = [
    # V1 0.9.1-0.13 "Available KV cache memory: %.2f GiB"; 0.14+ "%s GiB" via format_gib (ref §2.3).
    # Negative when the weights and activations left nothing ("-3.86 GiB"): read as printed, the
    # evidence of the failure that follows (facts.md)
    _fact("v1_available_kv", "Available KV cache memory: ",
          rf"Available KV cache memory: (?P<v>{SDEC}) GiB", {"v": (FactName.available_kv_cache_bytes, "GiB")}),
    # The CPU backend's pool (vllm/v1/worker/cpu_worker.py, 0.11+): "Explicitly set
    # ({format_gib(kv)}/{format_gib(total)}) GiB for KV cache on node {n}." when the pool was
    # given (VLLM_CPU_KVCACHE_SPACE, which overrides --kv-cache-memory-bytes), else "Auto set
    # ({kv}/{total}) GiB for KV cache on node {n}, with …".  The first figure is the pool (per
    # node); the second is the node's memory, not a device's.
    _FormatGibRule(name="cpu_kv_pool", anchor="GiB for KV cache on node ",
                   pattern=rf"(?:Explicitly|Auto) set \((?P<v>{DEC})/{DEC}\) GiB for KV cache on node \d",
                   fields={"v": (FactName.available_kv_cache_bytes, "GiB")}),
    # V0 0.6.5-0.10.2, third line of the multi-line profiling record (ref §2.3):
    # "model weights take {w:.2f}GiB; non_torch_memory takes {n:.2f}GiB; PyTorch activation peak
    #  memory takes {a:.2f}GiB; the rest of the memory reserved for KV Cache is {kv:.2f}GiB."
    _fact("v0_profile_breakdown", "the rest of the memory reserved for KV Cache is ",
          rf"model weights take (?P<w>{SDEC}) ?GiB; non_torch_memory takes (?P<n>{SDEC}) ?GiB; "
          rf"PyTorch activation peak memory takes (?P<a>{SDEC}) ?GiB; "
          rf"the rest of the memory reserved for KV Cache is (?P<kv>{SDEC}) ?GiB",
          {"w": (FactName.model_weights_bytes, "GiB"), "n": (FactName.non_torch_memory_bytes, "GiB"),
           "a": (FactName.activation_peak_bytes, "GiB"), "kv": (FactName.available_kv_cache_bytes, "GiB")}),
    # V0 0.6.5-0.10.2, second line: "the current vLLM instance can use total_gpu_memory
    # ({T:.2f}GiB) x gpu_memory_utilization ({u:.2f}) = {R:.2f}GiB"
    _fact("v0_profile_total", "the current vLLM instance can use total_gpu_memory",
          rf"total_gpu_memory \((?P<t>{DEC}) ?GiB\) x gpu_memory_utilization \({DEC}\) = "
          rf"(?P<r>{DEC}) ?GiB",
          {"t": (FactName.total_gpu_memory_bytes, "GiB"), "r": (FactName.requested_memory_bytes, "GiB")}),
    # V0 0.6.5-0.10.2, first line: "Memory profiling takes {t:.2f} seconds"
    _fact("v0_profile_time", "Memory profiling takes ",
          rf"Memory profiling takes (?P<s>{DEC}) seconds", {"s": (FactName.memory_profiling_seconds, "s")}),
    # V0 0.6.4 only: "Memory profiling results: total_gpu_memory=%.2fGiB initial_memory_usage=..
    # ... kv_cache_size=%.2fGiB gpu_memory_utilization=%.2f"
    _fact("v0_064_profile", "Memory profiling results: ",
          rf"total_gpu_memory=(?P<t>{DEC})GiB.*?kv_cache_size=(?P<kv>{SDEC})GiB",
          {"t": (FactName.total_gpu_memory_bytes, "GiB"), "kv": (FactName.available_kv_cache_bytes, "GiB")}),
    # --kv-cache-memory-bytes (ref §2.4): 0.10.2-0.11 "Initial free memory {free} GiB, reserved
    # {kv:.2f}GiB memory for KV Cache as specified by kv_cache_memory_bytes config"; 0.11.1+
    # "reserved {kv:.2f} GiB memory"; 0.14+ format_gib.  {free} is an unformatted float in 0.10.2.
    _fact("kv_reserved", "memory for KV Cache as specified by kv_cache_memory_bytes",
          rf"(?:Initial free memory (?P<free>{DEC}) ?GiB, )?reserved (?P<kv>{DEC}) ?GiB memory for KV Cache",
          {"kv": (FactName.kv_cache_reserved_bytes, "GiB"), "free": (FactName.initial_free_memory_bytes, "GiB")}),
    # V1 0.8.0-0.27 "GPU KV cache size: %s tokens" (f"{n:,}"); 0.28+ merged with the concurrency
    # line; 0.30+ "%s KV cache size" with GPU / CPU / XPU / "GPU + host" (ref §2.5)
    _fact("v1_kv_tokens", "KV cache size: ",
          rf"(?:^|[A-Z]+(?: \+ host)? )KV cache size: (?P<t>{NUM}) tokens",
          {"t": (FactName.kv_cache_tokens, "tokens")}),
    # "Maximum concurrency for %s tokens per request: %.2fx": raw int in V0 0.6.3-0.11 and early
    # V1 (0.7.1-0.7.3), f"{L:,}" in V1 0.8+; also the tail of the 0.28+ merged line
    _fact("max_concurrency", "Maximum concurrency for ",
          rf"Maximum concurrency for (?P<l>{NUM}) tokens per request: (?P<x>{DEC})x",
          {"l": (FactName.max_concurrency_tokens, "tokens"), "x": (FactName.max_concurrency, "x")}),
    # V0 0.2.7-0.6.6 "# GPU blocks: %d, # CPU blocks: %d"; 0.7.0-0.7.2 "# CUDA blocks"; 0.7.3+
    # "# cuda blocks"; other platforms "# TPU blocks" etc. (ref §2.5).  A paste that lost the
    # leading "# " (markdown took it for a heading) still reads "GPU blocks: N, # CPU blocks: M"
    _fact("v0_blocks", " blocks: ",
          rf"(?:^|# )(?:GPU|CUDA|cuda|[A-Za-z]+) blocks: (?P<g>{NUM}), # CPU blocks: (?P<c>{NUM})",
          {"g": (FactName.gpu_blocks, "blocks"), "c": (FactName.cpu_blocks, "blocks")}),
    # early V1 0.6.4-0.7.3: "# GPU blocks: %d" alone
    _fact("v1_early_blocks", "# GPU blocks: ", rf"^# GPU blocks: (?P<g>{NUM})$",
          {"g": (FactName.gpu_blocks, "blocks")}),
    # 0.9.0 "vllm cache_config_info with initialization after num_gpu_blocks is: %d"; 0.9.1+
    # "Engine %03d: ..." / "%d Engines: ..."
    _fact("num_gpu_blocks_is", "num_gpu_blocks is: ", rf"num_gpu_blocks is: (?P<g>{NUM})",
          {"g": (FactName.gpu_blocks, "blocks")}),
    # 0.4.0-0.7.3 "Loading model weights took %.4f GB" (GiB labelled GB); some 0.7.x/0.8-dev
    # builds append " and %.6f seconds"
    _fact("v0_weights", "Loading model weights took ",
          rf"Loading model weights took (?P<w>{SDEC}) GB(?: and (?P<s>{DEC}) seconds)?",
          {"w": (FactName.model_weights_bytes, "GB"), "s": (FactName.model_load_seconds, "s")}),
    # 0.8.0-0.8.2 "Model loading took %.4f GB and %.6f seconds"; 0.8.3+ "GiB"; 0.11.1+ "GiB memory";
    # 0.14+ "%s GiB memory" (format_gib); Model Runner V2 "…GiB and …" (ref §2.2)
    _fact("model_loading", "Model loading took ",
          rf"Model loading took (?P<w>{SDEC}) (?P<u>GiB|GB)(?: memory)? and (?P<s>{DEC}) seconds",
          {"w": (FactName.model_weights_bytes, "GiB"), "s": (FactName.model_load_seconds, "s")}),
    # 0.8.0+ default_loader: "Loading weights took %.2f seconds"
    _fact("loading_weights", "Loading weights took ", rf"Loading weights took (?P<s>{DEC}) seconds",
          {"s": (FactName.model_load_seconds, "s")}),
    # 0.2.7-0.6.3 "Graph capturing finished in %.0f secs."; 0.6.4+ "…, took %.2f GiB" (ref §2.7)
    _fact("graph_capture", "Graph capturing finished in ",
          rf"Graph capturing finished in (?P<s>{DEC}) secs(?:, took (?P<b>{SDEC}) GiB)?",
          {"s": (FactName.graph_capture_seconds, "s"), "b": (FactName.graph_capture_bytes, "GiB")}),
    # 0.6.5-0.17.1 "torch.compile takes %.2f s in total"; 0.18+ "took"; 0.32+ optional "[tag] "
    _fact("torch_compile", "torch.compile ", rf"torch\.compile (?:takes|took) (?P<s>{DEC}) s in total",
          {"s": (FactName.torch_compile_seconds, "s")}),
    # newest (Sep 2026 main): "torch.compile and initial profiling/warmup run together took %.2f s in total"
    _fact("torch_compile_with_warmup", "torch.compile ",
          rf"torch\.compile and initial profiling/warmup run together took (?P<s>{DEC}) s in total",
          {"s": (FactName.torch_compile_seconds, "s")}),
    # 0.6.5-0.19 "init engine (profile, create kv cache, warmup model) took %.2f seconds";
    # 0.20+ "… took %.2f s" with optional compilation breakdown
    _fact("init_engine", "init engine (profile, create kv cache, warmup model) took ",
          rf"warmup model\) took (?P<s>{DEC}) s(?:econds)?\b", {"s": (FactName.init_engine_seconds, "s")}),
    # 0.9.2+ "Using max model len %s"
    _fact("max_model_len", "Using max model len ", rf"Using max model len (?P<l>{NUM})\b",
          {"l": (FactName.max_model_len, "tokens")}),
    # 0.18+ "Estimated CUDA graph memory: %.2f GiB total"
    _fact("cudagraph_estimate", "Estimated CUDA graph memory: ",
          rf"Estimated CUDA graph memory: (?P<b>{DEC}) GiB", {"b": (FactName.estimated_cuda_graph_bytes, "GiB")}),
    # 0.28+ (not in ref; from the line): "CUDA graph pool memory: %s GiB (actual), %s GiB (estimated),
    # difference: %s GiB (%.1f%%)." — the pool's own two figures, under their own names (not the
    # capture line's graph_capture_bytes, nor the profiler's estimate); the difference is derived
    _fact("cudagraph_pool", "CUDA graph pool memory: ",
          rf"CUDA graph pool memory: (?P<a>{DEC}) GiB \(actual\), (?P<e>{DEC}) GiB \(estimated\)",
          {"a": (FactName.cuda_graph_pool_bytes, "GiB"), "e": (FactName.cuda_graph_pool_estimated_bytes, "GiB")}),
    # XPU (llm-scaler 0.14; not in ref): "Peak XPU memory after loading weights: peak=%s GiB,
    # current=%s GiB"; the single-figure form read as the peak
    _fact("load_peak_memory", "memory after loading weights: ",
          rf"Peak (?:[A-Z]+ )?memory after loading weights: (?:peak=)?(?P<p>{DEC}) GiB(?:, current=(?P<c>{DEC}) GiB)?",
          {"p": (FactName.load_peak_memory_bytes, "GiB"), "c": (FactName.load_end_memory_bytes, "GiB")}),
    _FreeMemoryOnDevice(name="free_memory_on_device", anchor="Free memory on device (",
                        pattern=r"Free memory on device \("),
]

# -- shape knobs printed outside the dumps --------------------------------------------------------

SHAPE_LOG_RULES = [
    _shape("v0_profile_util", "gpu_memory_utilization (",
         rf"gpu_memory_utilization \((?P<u>{DEC})\)", fields={"u": ("gpu_memory_utilization", None)}),
    _shape("v0_064_profile_util", "Memory profiling results: ",
         rf"gpu_memory_utilization=(?P<u>{DEC})", fields={"u": ("gpu_memory_utilization", None)}),
    # the post-warm-up suggestion (ref §2.3): "Desired GPU memory utilization is ({u}, {r} GiB)"
    _shape("free_memory_util", "Free memory on device (",
           rf"Desired GPU memory utilization is \((?P<u>{DEC}),", fields={"u": ("gpu_memory_utilization", None)}),
    # "Chunked prefill is enabled with max_num_batched_tokens=%d."
    _shape("chunked_prefill", "Chunked prefill is enabled with max_num_batched_tokens=",
         rf"max_num_batched_tokens=(?P<n>{NUM})", fields={"n": ("max_num_batched_tokens", None)}),
    # hybrid models (0.10+): "Setting attention block size to %d tokens to ensure that attention
    # page size is >= mamba page size."; backends: "Forcing kv cache block size to 64 for FlashMLA
    # backend." (0.8-0.17.1), "Setting kv cache block size to %d for %s backend." (0.18+)
    _shape("hybrid_block_size", "Setting attention block size to ",
         rf"Setting attention block size to (?P<b>{NUM}) tokens", fields={"b": ("block_size", None)}),
    _shape("backend_block_size", "kv cache block size to ",
         rf"(?:Forcing|Setting) kv cache block size to (?P<b>{NUM})", fields={"b": ("block_size", None)}),
    # "Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d" (0.8+)
    _shape("blocks_override", "with num_gpu_blocks_override=",
         rf"with num_gpu_blocks_override=(?P<n>{NUM})", fields={"n": ("num_gpu_blocks_override", None)}),
]

# -- the dumps ------------------------------------------------------------------------------------

_ENGINE_CONFIG_KEYS = {"max_seq_len": "max_model_len"}  # VllmConfig.__str__ name -> arg name


def _clean_config_value(key: str, value: Any) -> Any:
    if isinstance(value, str) and value.startswith("torch.") and key in ("dtype", "kv_cache_dtype"):
        return value[len("torch."):]
    return value


def _args_dict(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    items, complete = parse_dict_repr(m.group("d"))
    return {"source": ShapeSource.args, "items": items, "complete": complete}


def _args_namespace(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    items, complete = parse_keyvalue_repr(m.group("d"), close=")")
    items.pop("subparser", None)
    return {"source": ShapeSource.args, "items": items, "complete": complete}


def _engine_config(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    body = m.group("d")
    # 0.2.7-0.3.x close the list with a stray ")" ("…, seed=0)")
    if body.rstrip().endswith(")") and body.count(")") > body.count("("):
        items, complete = parse_keyvalue_repr(body.rstrip()[:-1] + ",")
    else:
        items, complete = parse_keyvalue_repr(body)
    out = {}
    for key, value in items.items():
        key = _ENGINE_CONFIG_KEYS.get(key, key)
        out[key] = _clean_config_value(key, value)
    return {"source": ShapeSource.engine_config, "items": out, "complete": complete}


# "Initializing an LLM engine with config: …" (0.2.7-0.3.3), "Initializing an LLM engine (v%s)
# with config: …" (0.4.0-0.7.0), "Initializing a V0 LLM engine (v%s) …" (0.7.1-0.10.2),
# "Initializing a V1 LLM engine (v%s) with config: %s" (0.7.1+)  (ref §2.1)
_ENGINE_INIT = r"Initializing an? (?:V[01] )?LLM engine(?: \(v(?P<v>[^)\s]+)\))? with config: (?P<d>.*)$"

# V1 0.9+ logging_utils/dump_input.py (not in ref): "Dumping input data for V1 LLM engine (v%s) with
# config: %s, " — the engine's config as the init line prints it, dumped when a model-execution
# step raised (EngineCore.log_error_detail): a step was in flight, so the engine was serving
_DUMP_INPUT = r"Dumping input data for V1 LLM engine \(v(?P<v>[^)\s]+)\) with config: (?P<d>.*)$"

DUMP_RULES = [
    # 0.9.0+ "non-default args: %s" (dict repr)
    _shape("args_dict", "non-default args: ", r"non-default args: (?P<d>\{.*)$", extract=_args_dict),
    # 0.2.7-0.8.5 "args: %s" (argparse Namespace)
    _shape("args_namespace", "args: Namespace(", r"^args: Namespace\((?P<d>.*)$", extract=_args_namespace),
    _shape("engine_config", "LLM engine", _ENGINE_INIT, extract=_engine_config),
    _shape("dump_input_config", "Dumping input data for V1 LLM engine", _DUMP_INPUT, extract=_engine_config),
]

# -- engine identity --------------------------------------------------------------------------------

_COMMIT = LazyPattern(r"\+g(?P<c>[0-9a-f]{7,40})\b")


def _version(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    version = m.group("v")
    if not version:
        return None
    c = _COMMIT.search(version)
    return {"engine_version": version, "engine_commit": c.group("c") if c else None}


def _digest(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    return {"image_digests": sorted(set(re.findall(r"sha256:[0-9a-f]{64}\b", record)))}


META_RULES = [
    # "vLLM API server version %s" (0.4.0-0.24); "vLLM server version %s, serving model %s" (0.15+)
    MetaRule(name="api_server_version", anchor="server version ", pattern=r"vLLM (?:API )?server version (?P<v>\S+?),?(?:\s|$)",
         extract=_version),
    # 0.15+ ASCII logo: "█ ▀▄▀ █  version 0.23.0"
    MetaRule(name="logo_version", anchor="█  version ", pattern=r"█  version (?P<v>\S+)\s*$", extract=_version),
    MetaRule(name="engine_version", anchor="LLM engine", pattern=_ENGINE_INIT, extract=_version),
    MetaRule(name="dump_input_version", anchor="Dumping input data for V1 LLM engine", pattern=_DUMP_INPUT,
             extract=_version),
    MetaRule(name="image_digest", anchor="sha256:", pattern=r"sha256:[0-9a-f]{64}\b", extract=_digest),
]

# -- boot progress and start-up markers ---------------------------------------------------------------

MARKER_RULES = [
    _marker("banner_api_server", "server version ", Marker.start_banner, r"vLLM (?:API )?server version \S"),
    _marker("banner_logo", "█  version ", Marker.start_banner, r"█  version \S+\s*$"),
    _marker("args_dict_start", "non-default args: ", Marker.start_args, r"non-default args: \{"),
    _marker("args_namespace_start", "args: Namespace(", Marker.start_args, r"^args: Namespace\("),
    _marker("engine_init_start", "LLM engine", Marker.start_engine, _ENGINE_INIT),
    _marker("load_start", "Starting to load model ", Marker.progress_load),
    _marker("load_shards", "Loading safetensors checkpoint shards", Marker.progress_load),
    # Model Runner V2 (not in ref): "Loading model from scratch..." opens the load
    _marker("load_start_mrv2", "Loading model from scratch", Marker.progress_load),
    _marker("load_done_v0", "Loading model weights took ", Marker.progress_loaded),
    _marker("load_done_v1", "Model loading took ", Marker.progress_loaded),
    _marker("profiled_v1", "Available KV cache memory: ", Marker.progress_profiled),
    _marker("profiled_v0", "the rest of the memory reserved for KV Cache is ", Marker.progress_profiled),
    _marker("profiled_064", "Memory profiling results: ", Marker.progress_profiled),
    _marker("profiled_reserved", "memory for KV Cache as specified by kv_cache_memory_bytes", Marker.progress_profiled),
    _marker("kv_sized_v1", "KV cache size: ", Marker.progress_kv, rf"KV cache size: {NUM} tokens"),
    _marker("kv_sized_v0", " blocks: ", Marker.progress_kv, rf"# \w+ blocks: {NUM}"),
    _marker("capture_v0_old", "Capturing the model for CUDA graphs", Marker.progress_capture),
    _marker("capture_v0", "Capturing cudagraphs for decoding", Marker.progress_capture),
    _marker("capture_v1", "Capturing CUDA graph", Marker.progress_capture),
    # start-up complete (facts.md "ready"): the engine's last steps, then the server
    _marker("ready_init_engine", "init engine (profile, create kv cache, warmup model) took ", Marker.ready),
    _marker("ready_graphs", "Graph capturing finished in ", Marker.ready),
    _marker("ready_api_server", "Starting vLLM API server", Marker.ready),  # 0.7.3-0.17
    _marker("ready_server", "Starting vLLM server on ", Marker.ready),  # 0.18+
    _marker("ready_uvicorn", "Uvicorn running on ", Marker.ready),
    _marker("ready_startup", "Application startup complete", Marker.ready),
    # a requested stop (facts.md, "How a boot ended"): 0.30+ launcher.py "[shutdown] API server:
    # shutdown triggered" (SIGTERM or Ctrl-C), core.py "[shutdown] EngineCore: trigger received
    # signal=%s"; uvicorn's "Shutting down" and "Application shutdown complete" in every release.
    # After a failure these are the server's clean-up, not a stop (the assembler decides).
    _marker("stop_api_server", "API server: shutdown triggered", Marker.stop),
    _marker("stop_engine_signal", "EngineCore: trigger received signal=", Marker.stop),
    _marker("stop_uvicorn", "Shutting down", Marker.stop, r"^(?:INFO:\s+)?Shutting down\s*$"),
    _marker("stop_uvicorn_done", "Application shutdown complete", Marker.stop),
    # a traceback's lines: its header and its frames (Python's '  File "…", line N, in f'); the
    # assembler counts those in vLLM's code or printed by a vLLM process (facts.md "exception": a
    # start-up whose text ends in a traceback is not incomplete)
    _marker("traceback_header", "Traceback (most recent call last)", Marker.traceback,
            r"^Traceback \(most recent call last\):"),
    _marker("traceback_frame", '", line ', Marker.traceback, r'^File "[^"]+", line \d+, in \S'),
    # a frame line cut after its path (a paste's storage broke it; '", line N, in f' starts the
    # next physical line, unprefixed): still a line of the traceback
    _marker("traceback_frame_cut", 'File "', Marker.traceback, r'^File "[^"]+"$'),
]

# Traceback frames that tell which start-up step an exception came from (innermost wins).
_HINTS = {
    Phase.load: ("load_model", "get_model", "load_weights"),
    Phase.profile: ("determine_available_memory", "profile_run", "determine_num_available_blocks"),
    Phase.kv_alloc: ("initialize_kv_cache", "_initialize_kv_caches", "initialize_from_config",
                 "_allocate_kv_cache", "get_kv_cache_config", "_check_enough_kv_cache_memory",
                 "initialize_cache"),
    Phase.graph_capture: ("capture_model", "_capture_cudagraphs", "_warm_up_model",
                      "compile_or_warm_up_model"),
    # serving: the engine had come up (facts.md "Boot outcome"); a start-up frame in the same
    # traceback wins (V0's profile_run calls execute_model)
    Phase.runtime: ("output_handler", "generate", "step", "execute_model", "run_busy_loop"),
}
HINT_RULES = [
    # (a trailing "^M" is a carriage return a paste shows as text)
    HintRule(name=f"frame_{func}", anchor=f", in {func}", pattern=rf", in {re.escape(func)}(?:\^M)?$", phase=phase)
    for phase, funcs in _HINTS.items()
    for func in funcs
]

# -- failures -------------------------------------------------------------------------------------

_OOM_FIGURES = [
    (LazyPattern(rf"Tried to allocate (?P<v>{SIZE_RX})"), FailureFigure.tried_to_allocate_bytes),
    # torch 2.1+: ". GPU <d> has a total capac(i)ty of <T> of which <F> is free."
    (LazyPattern(r"GPU (?P<v>\d+) has a total capac"), FailureFigure.gpu_index),
    (LazyPattern(rf"has a total capaci?ty of (?P<v>{SIZE_RX})"), FailureFigure.total_capacity_bytes),
    (LazyPattern(rf"of which (?P<v>{SIZE_RX}) is free"), FailureFigure.free_bytes),
    # torch <=2.0: " (GPU <d>; <T> total capacity; <A> already allocated; <F> free; ...
    #  <R> reserved in total by PyTorch)"
    (LazyPattern(r"\(GPU (?P<v>\d+); "), FailureFigure.gpu_index),
    (LazyPattern(rf"(?P<v>-?{SIZE_RX}) total capacity;"), FailureFigure.total_capacity_bytes),
    (LazyPattern(rf"(?P<v>-?{SIZE_RX}) already allocated;"), FailureFigure.allocated_by_pytorch_bytes),
    (LazyPattern(rf"; (?P<v>{SIZE_RX}) free;"), FailureFigure.free_bytes),
    (LazyPattern(rf"this process has (?P<v>{SIZE_RX}) memory in use"), FailureFigure.in_use_bytes),
    (LazyPattern(rf"Of the allocated memory (?P<v>{SIZE_RX}) is allocated by PyTorch"),
     FailureFigure.allocated_by_pytorch_bytes),
    (LazyPattern(rf"(?P<v>-?{SIZE_RX}) is reserved by PyTorch but unallocated"), FailureFigure.reserved_unallocated_bytes),
]


def _figures(record: str, table: Sequence[tuple[LazyPattern, str]]) -> dict[str, Any]:
    """A failure's figures; one printed below zero is not read (no failure figure can be: a
    pattern that does not start at a word takes the "-" in, so that its digits are not read as
    a positive figure)."""
    out: dict[str, Any] = {}
    for rx, name in table:
        if name in out:
            continue
        m = rx.search(record)
        if not m:
            continue
        printed = m.group("v")
        if printed.startswith("-"):
            continue
        try:
            out[name] = units.size(printed) if re.search(r"[A-Za-z]", printed) else _count(printed)
        except units.UnitError:
            continue  # a damaged figure costs that figure, not the failure
    return out


def _count(printed: str) -> int:
    """A whole number printed in digits; a UnitError past ``units.MAX_FIGURE``."""
    value = units.parse_number(printed)
    if not isinstance(value, int):
        raise units.UnitError(f"not a count: {printed[:40]!r}")
    return value


def _oom(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    return _figures(record[m.start():], _OOM_FIGURES)


_KV_TOO_SMALL_FIGURES = [
    (LazyPattern(r"max seq len \((?P<v>\d+)\)"), FailureFigure.max_model_len),
    # the "(" goes missing where a reporter wrapped the message by hand before the figure
    (LazyPattern(rf"(?:\(|\b|(?=-))(?P<v>{SDEC} Gi?B) KV cache is needed"), FailureFigure.needed_bytes),
    (LazyPattern(rf"available KV cache memory \((?P<v>{DEC} Gi?B)\)"), FailureFigure.available_bytes),
    (LazyPattern(r"estimated maximum model length is (?P<v>\d+)\."), FailureFigure.estimated_max_model_len),
    # V0: "… that can be stored in KV cache ({max_seq_len})"
    (LazyPattern(r"can be stored in KV cache \((?P<v>\d+)\)"), FailureFigure.kv_cache_tokens),
]


def _kv_too_small(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    # "GB" in 0.7.0-0.8.2 is GiB like every vLLM GB
    return _figures(record[m.start():], _KV_TOO_SMALL_FIGURES)


def _message(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    msg = m.group("m").strip() if "m" in m.re.groupindex and m.group("m") else ""
    msg = msg.removesuffix("^M").rstrip()  # a carriage return shown as text
    return {FailureFigure.message: msg} if msg else {}


# With VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vLLM logs the same message as a warning and goes on
# (config/model.py 0.32: logger.warning_once("%s %s", msg, "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be
# used with extreme caution …"); the ValueError says "To allow overriding this maximum, set the
# env var …" before that same caution): a warning is no failure
def _max_len_error(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    warned = "must be used with extreme caution" in record and "To allow overriding" not in record
    if line.level == "WARNING" or warned:
        return None
    return _message(m, line, record)


def _failure(name: str, anchor: str, kind: FailureKind, pattern: str | None = None, *,
             extract: Extractor | None = None, phase: Phase | None = None, wraps: bool = False,
             implies_up: bool = False, runtime_kind: FailureKind | None = None,
             fallback: bool = False) -> FailureRule:
    if extract is None and pattern and "(?P<m>" in pattern:
        extract = _message
    return FailureRule(name=name, anchor=anchor, pattern=pattern, failure=kind, extract=extract, phase=phase,
                       wraps=wraps, implies_up=implies_up, runtime_kind=runtime_kind, fallback=fallback)


# "ValueError: Free memory on device cuda:1 (19.77/22.05 GiB) on startup is less than desired GPU
# memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used
# by other processes." (V1's worker start-up check; not in ref: from fixtures/real/401 — an older
# form without the device name, "on device (F/T GiB)", is read too)
_STARTUP_MEMORY = LazyPattern(
    rf"Free memory on device (?:\S+ )?\((?P<f>{DEC})/(?P<t>{DEC}) GiB\) on startup is less than desired "
    rf"GPU memory utilization \((?P<u>{DEC}), (?P<r>{DEC}) GiB\)")


def _startup_memory(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    s = _STARTUP_MEMORY.search(record)
    if s is None:
        return {}
    out: dict[str, Any] = {}
    for name, group in ((FailureFigure.free_bytes, "f"), (FailureFigure.total_capacity_bytes, "t"),
                        (FailureFigure.gpu_memory_utilization, "u"), (FailureFigure.requested_bytes, "r")):
        try:  # a damaged figure costs that figure, not the failure
            out[name] = (float(units.parse_number(s.group(group))) if group == "u"
                         else units.quantity(s.group(group), "GiB"))
        except units.UnitError:
            continue
    return out


# an exception stated as Python prints it: "ValueError: …", "torch.OutOfMemoryError: …",
# "vllm.v1.engine.exceptions.EngineDeadError: …" (the module path dropped from the class name)
_EXCEPTION = r"^(?:[A-Za-z_]\w*\.)*(?P<e>[A-Z]\w*(?:Error|Exception)): (?P<m>.*)$"


def _exception(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    out: dict[str, Any] = {FailureFigure.exception: m.group("e")}
    out.update(_message(m, line, record) or {})
    return out


def _exception_class(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    return {FailureFigure.exception: m.group("e")}


def _signal(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    return {FailureFigure.signal: abs(int(m.group("s")))} if "s" in m.re.groupindex and m.group("s") else {}


FAILURE_RULES = [
    # torch: "CUDA out of memory. Tried to allocate <S>…" under torch.OutOfMemoryError,
    # torch.cuda.OutOfMemoryError, RuntimeError, or re-raised as "Worker failed with error '…'"; also
    # vLLM's own re-raise "CUDA out of memory occurred when warming up sampler with %d dummy requests.
    # Please try lowering `max_num_seqs` or `gpu_memory_utilization` …" (V1 0.8.x; fixtures/real/415)
    _failure("oom", "CUDA out of memory", FailureKind.oom, r"CUDA out of memory", extract=_oom, wraps=True),
    # V0 worker.py 0.4.1-0.10.2: "The model's max seq len ({max_model_len}) is larger than the
    # maximum number of tokens that can be stored in KV cache ({max_seq_len})."
    _failure("kv_too_small_v0", "is larger than the maximum number of tokens that can be stored in KV cache",
             FailureKind.kv_too_small, r"max seq len \(\d+\) is larger", extract=_kv_too_small, phase=Phase.kv_alloc,
             wraps=True),
    # V1 0.7.0+: "To serve at least one request with the models's max seq len ({L}), ({need:.2f}
    # GiB KV cache is needed, which is larger than the available KV cache memory ({avail:.2f} GiB).
    # Based on the available memory, the estimated maximum model length is {E}." ("model's" 0.22+)
    _failure("kv_too_small_v1", "To serve at least one request with the model", FailureKind.kv_too_small,
             r"To serve at least one request with the models?'s max seq len", extract=_kv_too_small,
             phase=Phase.kv_alloc, wraps=True),
    _failure("no_kv_memory", "No available memory for the cache blocks", FailureKind.no_kv_memory, phase=Phase.kv_alloc),
    # config validation (config/model.py), 0.27+: "Decode context parallelism for GQA/MQA requires
    # `--tensor-parallel-size` ({tp}) to be greater than the model's total number of KV heads ({h})."
    _failure("dcp_kv_heads", "Decode context parallelism for GQA/MQA requires", FailureKind.config_error,
             r"(?P<m>Decode context parallelism for GQA/MQA requires.*)$"),
    # 0.11.1-0.26: AssertionError "tensor parallel size {tp} must be greater than total num kv heads"
    _failure("dcp_kv_heads_assert", "must be greater than total num kv heads", FailureKind.config_error,
             r"(?P<m>tensor parallel size \d+ must be greater than total num kv heads.*)$"),
    _failure("dcp_too_large", "exceeds the maximum supported value", FailureKind.config_error,
             r"(?P<m>`--decode-context-parallel-size` .*exceeds the maximum supported value.*)$"),
    # "Total number of attention heads (%d) must be divisible by tensor parallel size (%d)."
    _failure("heads_not_divisible", "must be divisible by tensor parallel size", FailureKind.config_error,
             r"(?P<m>Total number of (?:attention|key-value) heads.*must be divisible by tensor parallel size.*)$"),
    # config.py _get_and_verify_max_len (0.4+; not in ref): "User-specified max_model_len ({L}) is
    # greater than the derived max_model_len ({key}={D} or model_max_length={M} in model's
    # config.json). This may lead to incorrect model outputs or CUDA errors. …" (later "… To allow
    # overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", and inside
    # pydantic's "Value error, … [type=value_error, …]" from 0.10)
    _failure("max_model_len_too_large", "is greater than the derived max_model_len", FailureKind.config_error,
             r"(?P<m>User-specified max_model_len \(\d+\) is greater than the derived max_model_len.*?)"
             r"(?: \[type=value_error.*)?$", extract=_max_len_error),
    _failure("heads_per_kv_not_divisible", "query heads per KV head", FailureKind.config_error,
             r"(?P<m>The model's number of query heads per KV head .*must be divisible.*)$"),
    # pydantic wraps config errors: "pydantic_core._pydantic_core.ValidationError: 1 validation
    # error for ModelConfig" then an indented "Value error, <message> [type=value_error, …]"
    _failure("pydantic_validation", "ValidationError: ", FailureKind.config_error,
             r"ValidationError: (?P<m>\d+ validation errors? for \w+)"),
    _failure("pydantic_value_error", "Value error, ", FailureKind.config_error,
             r"^Value error, (?P<m>.*?)(?: \[type=value_error.*)?$"),
    # V1 0.8.5+ "EngineCore failed to start."; 0.8.4+ "Engine core initialization failed. See root
    # cause above."; workers: "WorkerProc failed to start.", "WorkerProc initialization failed due
    # to an exception in a background process"; V0 "Engine process failed to start."
    _failure("engine_core_failed", "EngineCore failed to start", FailureKind.engine_init_failed),
    _failure("engine_core_init_failed", "Engine core initialization failed", FailureKind.engine_init_failed),
    _failure("workerproc_failed", "WorkerProc failed to start", FailureKind.engine_init_failed),
    _failure("workerproc_init_failed", "WorkerProc initialization failed", FailureKind.engine_init_failed),
    _failure("v0_engine_process_failed", "Engine process failed to start", FailureKind.engine_init_failed),
    # "Worker proc %s died unexpectedly, shutting down executor." (0.8.5+); "WorkerProc hit an
    # exception." (a worker's busy loop raised)
    _failure("worker_proc_died", "died unexpectedly", FailureKind.worker_died, r"Worker proc \S+ died unexpectedly"),
    _failure("workerproc_exception", "WorkerProc hit an exception", FailureKind.worker_died),
    # engine death: "Engine core proc %s died unexpectedly" (0.10.1+), EngineDeadError (0.8.5+),
    # "EngineCore encountered a fatal error.", "AsyncLLM output_handler failed.", V0 MQLLMEngine
    _failure("engine_core_died", "died unexpectedly", FailureKind.engine_dead,
             r"Engine core (?:proc|process) \S+ died unexpectedly"),
    # 0.30+ core_client.py, the API server seeing its engine core gone (SIGKILL, the OOM killer):
    # "[shutdown] MPClient: engine core exited unexpectedly; starting cleanup"
    _failure("engine_core_exited", "engine core exited unexpectedly", FailureKind.engine_dead),
    _failure("engine_dead_error", "EngineDeadError", FailureKind.engine_dead, r"EngineDeadError\b", implies_up=True),
    _failure("engine_fatal", "EngineCore encountered a fatal error", FailureKind.engine_dead, implies_up=True),
    _failure("output_handler", "AsyncLLM output_handler failed", FailureKind.engine_dead, implies_up=True),
    _failure("mq_engine_dead", "MQLLMEngine", FailureKind.engine_dead, r"MQLLMEngine\b.*\bdead\b", implies_up=True),
    # V1 0.8.3-0.8.4 core.py (not in ref): "EngineCore hit an exception: %s" with the traceback as
    # its argument, for start-up and busy-loop exceptions alike: the frames tell which (a busy-loop
    # frame makes it the engine's death at runtime)
    _failure("engine_core_hit_exception", "EngineCore hit an exception", FailureKind.engine_init_failed,
             runtime_kind=FailureKind.engine_dead),
    # V0 multiproc_worker_utils.py (not in ref): "Exception in worker %s while processing method
    # %s." — the method tells the step: a start-up one (init_device, load_model, ...), or serving
    *[_failure(f"worker_method_{phase}", "while processing method ", FailureKind.engine_init_failed,
               rf"^Exception in worker \S+ while processing method (?:{'|'.join(funcs)})\b", phase=phase)
      for phase, funcs in _HINTS.items() if phase != Phase.runtime],
    _failure("worker_method_runtime", "while processing method ", FailureKind.engine_dead,
             rf"^Exception in worker \S+ while processing method (?:{'|'.join(_HINTS[Phase.runtime])})\b",
             phase=Phase.runtime, implies_up=True),
    _failure("worker_method_other", "while processing method ", FailureKind.engine_init_failed,
             rf"^Exception in worker \S+ while processing method (?!(?:{'|'.join(f for fs in _HINTS.values() for f in fs)})\b)"),
    # V1 ~0.7-0.8.4 (not in ref): multiproc_executor.py "MulitprocExecutor got fatal signal from
    # worker processes, shutting down. See stack trace above for root cause issue." (sic) and
    # core_client.py "Got fatal signal from worker processes, shutting down. …"
    _failure("executor_fatal_signal", "fatal signal from worker processes", FailureKind.worker_died,
             r"Mul(?:ti|it)procExecutor got fatal signal from worker processes"),
    _failure("core_client_fatal_signal", "fatal signal from worker processes", FailureKind.engine_dead,
             r"^Got fatal signal from worker processes"),
    # abseil's failure-signal handler (Ray workers install it; not vLLM's): "*** SIGSEGV received
    # at time=%d on cpu %d ***" (SIGABRT, SIGBUS, SIGFPE, SIGILL alike): the worker died
    _failure("worker_signal", " received at time=", FailureKind.worker_died,
             r"\*\*\* SIG[A-Z]+ received at time=\d+"),
    # the ROCm/HSA runtime (not vLLM's): "HW Exception by GPU node-%d (Agent handle: 0x%x) reason :%s"
    _failure("rocm_hw_exception", "HW Exception by GPU node-", FailureKind.cuda_error,
             r"^HW Exception by GPU node-\d+ \(Agent handle: 0x[0-9a-f]+\) reason :(?P<m>.+)$"),
    # "CUDA error: an illegal memory access was encountered" and friends; custom all-reduce's
    # "Failed: Cuda error %s:%d '%s'"
    _failure("cuda_error", "CUDA error: ", FailureKind.cuda_error, r"CUDA error: (?P<m>.+)$"),
    _failure("cuda_error_custom_ar", "Failed: Cuda error ", FailureKind.cuda_error, r"Failed: Cuda error (?P<m>.+)$"),
    # torch / the CUDA driver: "RuntimeError: CUDA driver error: out of memory" (no sizes)
    _failure("oom_driver", "CUDA driver error: out of memory", FailureKind.oom),
    # the start-up memory check (ValueError, see _STARTUP_MEMORY): the device is used by another process
    _failure("startup_memory", "on startup is less than desired GPU memory utilization", FailureKind.startup_memory,
             extract=_startup_memory),
    # collective communication (torch's and the libraries' wordings, not vLLM's): "NCCL error: unhandled
    # system error (run with NCCL_DEBUG=INFO for details)", "NCCL error in: …"; NCCL's result codes
    # by name; the ProcessGroupNCCL watchdog ("Watchdog caught collective operation timeout", its
    # thread's frame "c10d::ProcessGroupNCCL::ncclCommWatchdog()"); Ascend's "HCCL function error: …";
    # gloo's "Gloo connectFullMesh failed"; the c10d store and backend errors
    _failure("nccl_error", "NCCL error", FailureKind.comm_error,
             r"(?P<m>NCCL error\b.*?)(?:,? Traceback \(most recent call last\):)?$"),
    *[_failure(f"nccl_{code}", code, FailureKind.comm_error, rf"(?P<m>\b{code}\b.*)$")
      for code in ("ncclInternalError", "ncclUnhandledCudaError", "ncclSystemError", "ncclRemoteError",
                   "ncclInvalidUsage")],
    _failure("nccl_watchdog", "Watchdog caught collective operation timeout", FailureKind.comm_error,
             r"(?P<m>Watchdog caught collective operation timeout.*)$"),
    _failure("nccl_watchdog_frame", "ProcessGroupNCCL::ncclCommWatchdog", FailureKind.comm_error),
    _failure("hccl_error", "HCCL function error", FailureKind.comm_error, r"(?P<m>HCCL function error.*)$"),
    _failure("gloo_error", "Gloo connectFullMesh failed", FailureKind.comm_error, r"(?P<m>Gloo connectFullMesh failed.*)$"),
    *[_failure(f"c10d_{name}", name, FailureKind.comm_error, rf"\b{name}\b:? ?(?P<m>.*)$")
      for name in ("DistStoreError", "DistNetworkError", "DistBackendError")],
    # the engine stopped answering: V1 multiproc_executor's "RPC call to %s timed out." (the
    # TimeoutError's message; not in ref: the wording of fixtures/real/409-410's threads), and any
    # TimeoutError stated; shm_broadcast's "No available shared memory broadcast block found in 60
    # second" is a warning and not read
    _failure("rpc_timeout", "timed out", FailureKind.timeout, r"(?P<m>RPC call to \S+ timed out)"),
    _failure("timeout_error", "TimeoutError", FailureKind.timeout, r"^(?:[A-Za-z_]\w*\.)*TimeoutError\b:? ?(?P<m>.*)$"),
    # a process killed by a signal: the shell's bare "Killed" (the kernel's OOM killer, most often);
    # 0.26+ "Worker proc %s died unexpectedly (exit code: %s), …" with SIGKILL's or SIGTERM's -9 / -15
    _failure("shell_killed", "Killed", FailureKind.killed, r"^Killed$"),
    _failure("worker_exit_signal", "died unexpectedly (exit code: -", FailureKind.killed,
             r"died unexpectedly \(exit code: (?P<s>-(?:9|15))\)", extract=_signal),
    # V0 worker_base.py logger.exception: "Error executing method %s. This might cause deadlock in
    # distributed execution." (the exception itself follows in the traceback)
    _failure("error_executing_method", "Error executing method ", FailureKind.exception,
             r"^Error executing method \S+", fallback=True),
    # IPython's (Jupyter, Colab) traceback header names the class, "RuntimeError      Traceback (most
    # recent call last)"; its message comes at the end, which a paste often cuts
    _failure("exception_ipython", "Traceback (most recent call last)", FailureKind.exception,
             r"^(?:[A-Za-z_]\w*\.)*(?P<e>[A-Z]\w*(?:Error|Exception))\s+Traceback \(most recent call last\)",
             extract=_exception_class, fallback=True),
    # any other exception stated (facts.md "exception"): only where no other failure rule reads the line
    _failure("exception_error", "Error: ", FailureKind.exception, _EXCEPTION, extract=_exception, fallback=True),
    _failure("exception_exception", "Exception: ", FailureKind.exception, _EXCEPTION, extract=_exception,
             fallback=True),
]

# -- serving: stats intervals, spec decode, access and request lines --------------------------------

# V0 (0.2.7-0.11) "Avg prompt throughput: …, Running: %d reqs, Swapped: %d reqs, Pending: %d reqs,
# GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%"; V1 0.7.1+ "… Running: %d reqs, Waiting:
# %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%" with "Engine %03d: " from
# 0.8.3; 0.11.1+ built from ", "-joined parts (ref §2.8): read the key: value pairs one by one.
_STATS_KEYS = {
    "Avg prompt throughput": RuntimeSeries.prompt_throughput_tps,
    "Avg generation throughput": RuntimeSeries.generation_throughput_tps,
    "Running": RuntimeSeries.running_reqs,
    "Waiting": RuntimeSeries.waiting_reqs,
    "Swapped": RuntimeSeries.swapped_reqs,
    "Pending": RuntimeSeries.pending_reqs,
    "GPU KV cache usage": RuntimeSeries.gpu_kv_cache_usage_pct,
    "CPU KV cache usage": RuntimeSeries.cpu_kv_cache_usage_pct,
    "Prefix cache hit rate": RuntimeSeries.prefix_cache_hit_rate_pct,
}
# at most 18 ASCII digits: int() of a longer one is out of any column's range (and Python refuses past
# 4,300 digits); such an engine is not read
_ENGINE_IDX = LazyPattern(r"^Engine (?P<e>[0-9]{1,18}): ")


def _stats(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    """Split the ", "-joined "key: value" parts (0.11.1+ builds the line from optional parts;
    0.7.1-0.7.2 lost a comma: "Waiting: %d reqs GPU KV cache usage")."""
    body = record[record.find("Avg prompt throughput: "):].replace(" reqs GPU", " reqs, GPU")
    parts = [part.partition(": ") for part in body.split(", ")]
    # V0 prints the GPU's usage and then the CPU's (its swap space), beside Swapped/Pending; V1
    # prints one "<device> KV cache usage", the engine's own, whatever its device (vLLM's CPU
    # build: "CPU KV cache usage"): facts.md, runtime series
    devices = sum(1 for key, sep, _ in parts if sep and key.endswith("KV cache usage"))
    v0 = devices > 1 or any(key in ("Swapped", "Pending") for key, sep, _ in parts if sep)
    values: dict[str, Any] = {}
    for key, sep, val in parts:
        if not sep:
            continue
        name: RuntimeSeries | None
        if key.endswith("KV cache usage"):
            name = RuntimeSeries.cpu_kv_cache_usage_pct if v0 and key.startswith("CPU") \
                else RuntimeSeries.gpu_kv_cache_usage_pct
        else:
            name = _STATS_KEYS.get(key)
            if name is None:
                continue
        number = val.split(" ", 1)[0].rstrip(".%")
        try:
            values.setdefault(name, units.parse_number(number))
        except units.UnitError:
            continue  # a damaged figure is not guessed at: it costs that figure, not the record
    if not values:
        return None
    e = _ENGINE_IDX.search(record)
    return {"kind": RuntimeKind.engine_stats, "engine": int(e.group("e")) if e else None, "values": values}


# V0 0.5.5-0.11: separate "Prefix cache hit rate: GPU: %.2f%%, CPU: %.2f%%"
def _v0_prefix(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    return {"kind": "engine_stats_extra", "engine": None,
            "values": {RuntimeSeries.prefix_cache_hit_rate_pct: units.parse_number(m.group("g"))}}


_SPEC_V1 = {
    "Mean acceptance length": RuntimeSeries.spec_mean_acceptance_length,
    "Accepted": RuntimeSeries.spec_accepted_tokens,
    "Drafted": RuntimeSeries.spec_drafted_tokens,
    "Avg Draft acceptance rate": RuntimeSeries.spec_draft_acceptance_rate_pct,
    "Draft acceptance rate": RuntimeSeries.spec_draft_acceptance_rate_pct,
}
_PER_POSITION = "Per-position acceptance rate"


def _rate(printed: str) -> float | None:
    """One of the per-position rates: a number, else unread (None, as ``nan`` is)."""
    try:
        return float(units.parse_number(printed))
    except units.UnitError:
        return None


# V1 0.8.3+ "SpecDecoding metrics: …" (ref §2.9)
def _spec_v1(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    """The ", "-joined "key: value" parts; the per-position rates are the parts after their key
    up to the next "key: value" part.  A damaged figure costs that figure (a rate: that rate)."""
    values: dict[str, Any] = {}
    parts = record[record.find("SpecDecoding metrics: ") + len("SpecDecoding metrics: "):].split(", ")
    at = 0
    while at < len(parts):
        key, sep, val = parts[at].partition(": ")
        at += 1
        if sep and key == _PER_POSITION:
            rates = [val]
            while at < len(parts) and ": " not in parts[at]:
                rates.append(parts[at])
                at += 1
            values.setdefault(RuntimeSeries.spec_per_position_acceptance, [_rate(x) for x in rates])
            continue
        name = _SPEC_V1.get(key)
        if not sep or name is None:
            continue
        try:
            values.setdefault(name, units.parse_number(val.split(" ", 1)[0].rstrip("%")))
        except units.UnitError:
            continue
    return {"kind": RuntimeKind.spec_decode, "engine": None, "values": values} if values else None


# V0 0.4.1-0.9.2 "Speculative metrics: Draft acceptance rate: {:.3f}, System efficiency: {:.3f},
# Number of speculative tokens: {}, Number of accepted tokens: {}, Number of draft tokens: {},
# Number of emitted tokens: {}." ("draft tokens tokens" in 0.4.1-0.5.2).  Counts are cumulative.
_SPEC_V0 = {
    RuntimeSeries.spec_draft_acceptance_rate_pct: LazyPattern(r"Draft acceptance rate: (?P<v>[^,]*)"),
    RuntimeSeries.spec_accepted_tokens: LazyPattern(r"Number of accepted tokens: (?P<v>[^,]*)"),
    RuntimeSeries.spec_drafted_tokens: LazyPattern(r"Number of draft tokens(?: tokens)?: (?P<v>[^,]*)"),
}


def _spec_v0(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    """Each figure on its own: a damaged one costs that figure, not the record."""
    values: dict[str, Any] = {}
    for name, pattern in _SPEC_V0.items():
        s = pattern.search(record)
        if s is None:
            continue
        try:
            value = units.parse_number(s.group("v").rstrip("."))
        except units.UnitError:
            continue
        if name == RuntimeSeries.spec_draft_acceptance_rate_pct:
            value = round(float(value) * 100, 6)  # printed as a fraction; stored as percent like V1's
        values[name] = value
    return {"kind": RuntimeKind.spec_decode, "engine": None, "values": values} if values else None


# Fast shapes of the two lines a served V1 log is mostly made of, exactly as 0.8.3+ prints them:
# one fullmatch instead of splitting "key: value" parts.  Any other shape (optional parts,
# damaged figures, V0) takes the general extractor; tests hold both to the same result.  Each
# group is named after the series it prints; a series a shape does not print is None.
# "Engine %03d: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s,
#  Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%"
_FAST_STATS = FastShape(
    RuntimeKind.engine_stats,
    # at most 18 digits a figure: a longer one (out of any column's range) takes the general
    # extractor, which does not read it
    r"Engine (?P<engine>\d{1,18}): Avg prompt throughput: (?P<prompt_throughput_tps>\d{1,18}\.\d) tokens/s, "
    r"Avg generation throughput: (?P<generation_throughput_tps>\d{1,18}\.\d) tokens/s, "
    r"Running: (?P<running_reqs>\d{1,18}) reqs, Waiting: (?P<waiting_reqs>\d{1,18}) reqs, "
    # the engine's own device: GPU, CPU (vLLM's CPU build), XPU, TPU, …
    r"[A-Z][A-Za-z]{0,15} KV cache usage: (?P<gpu_kv_cache_usage_pct>\d{1,18}\.\d)%, "
    r"Prefix cache hit rate: (?P<prefix_cache_hit_rate_pct>\d{1,18}\.\d)%",
    {RuntimeSeries.prompt_throughput_tps: float, RuntimeSeries.generation_throughput_tps: float, RuntimeSeries.running_reqs: int,
     RuntimeSeries.waiting_reqs: int, RuntimeSeries.gpu_kv_cache_usage_pct: float, RuntimeSeries.prefix_cache_hit_rate_pct: float},
)


def _floats(printed: str) -> list[float]:
    return [float(x) for x in printed.split(", ")]


# "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s,
#  Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens,
#  Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%"
_FAST_SPEC = FastShape(
    RuntimeKind.spec_decode,
    # at most 18 digits a figure, as above
    r"SpecDecoding metrics: Mean acceptance length: (?P<spec_mean_acceptance_length>\d{1,18}\.\d{1,18}), "
    r"Accepted throughput: \d+\.\d+ tokens/s, Drafted throughput: \d+\.\d+ tokens/s, "
    r"Accepted: (?P<spec_accepted_tokens>\d{1,18}) tokens, Drafted: (?P<spec_drafted_tokens>\d{1,18}) tokens, "
    r"Per-position acceptance rate: (?P<spec_per_position_acceptance>\d\.\d+(?:, \d\.\d+)*), "
    r"Avg Draft acceptance rate: (?P<spec_draft_acceptance_rate_pct>\d{1,18}\.\d)%",
    {RuntimeSeries.spec_mean_acceptance_length: float, RuntimeSeries.spec_accepted_tokens: int, RuntimeSeries.spec_drafted_tokens: int,
     RuntimeSeries.spec_per_position_acceptance: _floats, RuntimeSeries.spec_draft_acceptance_rate_pct: float},
)


RUNTIME_RULES: list[Rule] = [
    RuntimeRule(name="engine_stats", anchor="Avg prompt throughput: ", pattern=r"Avg prompt throughput: ",
                extract=_stats, fast=_FAST_STATS),
    RuntimeRule(name="v0_prefix_hit", anchor="Prefix cache hit rate: GPU: ",
                pattern=r"^Prefix cache hit rate: GPU: (?P<g>[\d.]+)%", extract=_v0_prefix),
    RuntimeRule(name="spec_decode_v1", anchor="SpecDecoding metrics: ", pattern=r"SpecDecoding metrics: ",
                extract=_spec_v1, fast=_FAST_SPEC),
    RuntimeRule(name="spec_decode_v0", anchor="Speculative metrics: ", pattern=r"Speculative metrics: ",
                extract=_spec_v0),
    # Counted, not stored: every occurrence of these anchors in the boot.  uvicorn's access line
    # '172.18.0.1:50504 - "POST /v1/chat/completions HTTP/1.1" 200 OK'; the request log's
    # "Received request %s: prompt: …" (one per request with --enable-log-requests).
    CountRule(name="access_line", anchor="HTTP/1.", counter=Counter.access),
    CountRule(name="request_line", anchor="Received request ", counter=Counter.request),
    # "Request %s failed (engine dead)." (V1): requests were in flight, so the engine was serving
    MarkerRule(name="request_failed", anchor="failed (engine dead)", pattern=r"^Request \S+ failed \(engine dead\)",
               marker=Marker.serving, implies_up=True),
    # serving_chat.py's logger.exception("Error in chat completion stream generator.") (not in
    # ref): an error inside a request, so the engine had come up (facts.md "Boot outcome")
    MarkerRule(name="request_error", anchor="Error in chat completion stream generator",
               marker=Marker.serving, implies_up=True),
    # the fatal-error dump of a model-execution step (``_DUMP_INPUT``): the engine was serving
    MarkerRule(name="dump_input_serving", anchor="Dumping input data for V1 LLM engine",
               pattern=r"Dumping input data for V1 LLM engine \(v", marker=Marker.serving, implies_up=True),
]

BUILTIN_RULES: list[Rule] = (
    [*FACT_RULES, *SHAPE_LOG_RULES, *DUMP_RULES, *META_RULES, *MARKER_RULES, *HINT_RULES, *FAILURE_RULES,
     *RUNTIME_RULES]
)


def _carry_samples(rules: list[Rule], read: bool = False) -> None:
    """Every built-in rule carries its samples (``vllm_samples``: a real line each, and what it
    must yield), checked at import: a rule without one, or samples of no rule, fail the import.
    ``read``: also read every sample through its rule as stated, the check a grammar pack's
    samples get when it loads (lnav's rule for its built-in formats).  The import does not
    read them: that compiles every pattern of the grammar, 0.17 s of a 0.1 s boot-log ingest
    (measured 2026-12-01: 264 ms with it, against 97 ms before it), where a scan compiles only
    the rules whose anchors a log holds.  ``check_samples`` reads them: the suite runs it
    (``tests/test_rule_samples.py``), and so does ``ledger grammar check vllm``."""
    from . import vllm_samples

    if vllm_samples.DRAFTING:  # tests/rule_samples.py drafts them: it checks what it keeps itself
        for r in rules:
            r.samples = vllm_samples.SAMPLES.get(r.name, ())
        return
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise RuntimeError("the built-in grammar: two rules share a name")
    problems = [f"rule {r.name}: no sample (tests/rule_samples.py drafts one)" for r in rules
                if r.name not in vllm_samples.SAMPLES]
    problems += [f"no rule {name} for its samples" for name in vllm_samples.SAMPLES if name not in names]
    for r in rules:
        r.samples = vllm_samples.SAMPLES.get(r.name, ())
        if read:
            problems += [f"rule {r.name}: {p}" for s in r.samples if (p := sample_problem(r, s)) is not None]
    if problems:
        raise RuntimeError("the built-in grammar: " + "; ".join(problems))


def check_samples(rules: list[Rule] | None = None) -> None:
    """Read every built-in rule's samples through it (``_carry_samples`` with ``read``): a rule
    that stops reading its line is refused with its name."""
    _carry_samples(BUILTIN_RULES if rules is None else rules, read=True)


_carry_samples(BUILTIN_RULES)

# Failure wordings other programs print too (torch, pydantic, the ROCm runtime, abseil's signal
# handler, NCCL, the shell, Python's exceptions): read in a vLLM log, but they do not make a file one.
_SHARED_WORDINGS = frozenset({
    "oom", "cuda_error", "cuda_error_custom_ar", "pydantic_validation", "pydantic_value_error",
    "worker_signal", "rocm_hw_exception",
    # torch's, NCCL's, the shell's and Python's own: any program's log may print them
    "oom_driver", "nccl_error", "nccl_watchdog", "nccl_watchdog_frame", "hccl_error", "gloo_error",
    *(r.name for r in FAILURE_RULES if r.name.startswith(("nccl_ncc", "c10d_"))),
    "timeout_error", "shell_killed", "exception_error", "exception_exception", "exception_ipython",
})
_OWN_RULES = frozenset(id(r) for r in BUILTIN_RULES if r.name not in _SHARED_WORDINGS)


def vllm_own_wording(event: Event) -> bool:
    """Whether an event was read from one of vLLM's own wordings — a fact, a failure or a
    start-up line of the built-in grammar — which makes message-only text (no prefix, no
    header: a quote, a notebook paste) a vLLM log."""
    rule = event.rule
    if id(rule) not in _OWN_RULES:
        return False
    if isinstance(rule, MarkerRule):
        return rule.marker in (Marker.start_banner, Marker.start_args, Marker.start_engine)
    return isinstance(rule, (FactRule, FailureRule, ShapeRule))
