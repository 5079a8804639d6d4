"""The built-in grammar: what upstream vLLM prints, 0.2.7 to 0.33, as rules.

Each rule carries the format string(s) it reads and the releases that print them, from
``../shared/reference/vllm-log-lines.md`` (cited as "ref §x").  A wording that changed between
releases is one rule whose pattern has alternatives, or several rules yielding the same fact.
Patterns are searched in the message part of a line (after prefix, level, time, file:line).
"""

from __future__ import annotations

import re
from typing import Any

from . import units
from .dumps import parse_dict_repr, parse_keyvalue_repr
from .lines import Line
from .rules import COUNT, FACT, FAILURE, HINT, MARKER, META, RUNTIME, SHAPE, FastShape, Rule
from .vocabulary import F, G, K, P, R, S

NUM = r"\d[\d,]*"  # an integer, maybe with thousands separators ("1,350,182")
DEC = r"\d+(?:\.\d+)?"  # a decimal as %.2f / format_gib print it ("9.74", "2.2", "0")
SIZE_RX = r"\d+(?:\.\d+)? ?(?:bytes|[KMGT]iB)"  # torch format_size: "50.00 MiB", "1024 bytes"


def _fact(name: str, anchor: str, pattern: str, fields: dict[str, tuple[str, str | None]],
          **kw: Any) -> Rule:
    return Rule(name=name, anchor=anchor, emits=FACT, pattern=pattern, fields=fields, **kw)


def _marker(name: str, anchor: str, marker: str, pattern: str | None = None) -> Rule:
    return Rule(name=name, anchor=anchor, emits=MARKER, marker=marker, pattern=pattern)


# -- facts --------------------------------------------------------------------------------------

FACT_RULES = [
    # V1 0.9.1-0.13 "Available KV cache memory: %.2f GiB"; 0.14+ "%s GiB" via format_gib (ref §2.3)
    _fact("v1_available_kv", "Available KV cache memory: ",
          rf"Available KV cache memory: (?P<v>{DEC}) GiB", {"v": (F.available_kv_cache_bytes, "GiB")}),
    # V0 0.6.5-0.10.2, third line of the multi-line profiling record (ref §2.3):
    # "model weights take {w:.2f}GiB; non_torch_memory takes {n:.2f}GiB; PyTorch activation peak
    #  memory takes {a:.2f}GiB; the rest of the memory reserved for KV Cache is {kv:.2f}GiB."
    _fact("v0_profile_breakdown", "the rest of the memory reserved for KV Cache is ",
          rf"model weights take (?P<w>{DEC}) ?GiB; non_torch_memory takes (?P<n>{DEC}) ?GiB; "
          rf"PyTorch activation peak memory takes (?P<a>{DEC}) ?GiB; "
          rf"the rest of the memory reserved for KV Cache is (?P<kv>{DEC}) ?GiB",
          {"w": (F.model_weights_bytes, "GiB"), "n": (F.non_torch_memory_bytes, "GiB"),
           "a": (F.activation_peak_bytes, "GiB"), "kv": (F.available_kv_cache_bytes, "GiB")}),
    # V0 0.6.5-0.10.2, second line: "the current vLLM instance can use total_gpu_memory
    # ({T:.2f}GiB) x gpu_memory_utilization ({u:.2f}) = {R:.2f}GiB"
    _fact("v0_profile_total", "the current vLLM instance can use total_gpu_memory",
          rf"total_gpu_memory \((?P<t>{DEC}) ?GiB\) x gpu_memory_utilization \({DEC}\) = "
          rf"(?P<r>{DEC}) ?GiB",
          {"t": (F.total_gpu_memory_bytes, "GiB"), "r": (F.requested_memory_bytes, "GiB")}),
    # V0 0.6.5-0.10.2, first line: "Memory profiling takes {t:.2f} seconds"
    _fact("v0_profile_time", "Memory profiling takes ",
          rf"Memory profiling takes (?P<s>{DEC}) seconds", {"s": (F.memory_profiling_seconds, "s")}),
    # V0 0.6.4 only: "Memory profiling results: total_gpu_memory=%.2fGiB initial_memory_usage=..
    # ... kv_cache_size=%.2fGiB gpu_memory_utilization=%.2f"
    _fact("v0_064_profile", "Memory profiling results: ",
          rf"total_gpu_memory=(?P<t>{DEC})GiB.*?kv_cache_size=(?P<kv>{DEC})GiB",
          {"t": (F.total_gpu_memory_bytes, "GiB"), "kv": (F.available_kv_cache_bytes, "GiB")}),
    # --kv-cache-memory-bytes (ref §2.4): 0.10.2-0.11 "Initial free memory {free} GiB, reserved
    # {kv:.2f}GiB memory for KV Cache as specified by kv_cache_memory_bytes config"; 0.11.1+
    # "reserved {kv:.2f} GiB memory"; 0.14+ format_gib.  {free} is an unformatted float in 0.10.2.
    _fact("kv_reserved", "memory for KV Cache as specified by kv_cache_memory_bytes",
          rf"(?:Initial free memory (?P<free>{DEC}) ?GiB, )?reserved (?P<kv>{DEC}) ?GiB memory for KV Cache",
          {"kv": (F.kv_cache_reserved_bytes, "GiB"), "free": (F.initial_free_memory_bytes, "GiB")}),
    # V1 0.8.0-0.27 "GPU KV cache size: %s tokens" (f"{n:,}"); 0.28+ merged with the concurrency
    # line; 0.30+ "%s KV cache size" with GPU / CPU / XPU / "GPU + host" (ref §2.5)
    _fact("v1_kv_tokens", "KV cache size: ",
          rf"(?:^|[A-Z]+(?: \+ host)? )KV cache size: (?P<t>{NUM}) tokens",
          {"t": (F.kv_cache_tokens, "tokens")}),
    # "Maximum concurrency for %s tokens per request: %.2fx": raw int in V0 0.6.3-0.11 and early
    # V1 (0.7.1-0.7.3), f"{L:,}" in V1 0.8+; also the tail of the 0.28+ merged line
    _fact("max_concurrency", "Maximum concurrency for ",
          rf"Maximum concurrency for (?P<l>{NUM}) tokens per request: (?P<x>{DEC})x",
          {"l": (F.max_concurrency_tokens, "tokens"), "x": (F.max_concurrency, "x")}),
    # V0 0.2.7-0.6.6 "# GPU blocks: %d, # CPU blocks: %d"; 0.7.0-0.7.2 "# CUDA blocks"; 0.7.3+
    # "# cuda blocks"; other platforms "# TPU blocks" etc. (ref §2.5)
    _fact("v0_blocks", " blocks: ",
          rf"# (?:GPU|CUDA|cuda|[A-Za-z]+) blocks: (?P<g>{NUM}), # CPU blocks: (?P<c>{NUM})",
          {"g": (F.gpu_blocks, "blocks"), "c": (F.cpu_blocks, "blocks")}),
    # early V1 0.6.4-0.7.3: "# GPU blocks: %d" alone
    _fact("v1_early_blocks", "# GPU blocks: ", rf"^# GPU blocks: (?P<g>{NUM})$",
          {"g": (F.gpu_blocks, "blocks")}),
    # 0.9.0 "vllm cache_config_info with initialization after num_gpu_blocks is: %d"; 0.9.1+
    # "Engine %03d: ..." / "%d Engines: ..."
    _fact("num_gpu_blocks_is", "num_gpu_blocks is: ", rf"num_gpu_blocks is: (?P<g>{NUM})",
          {"g": (F.gpu_blocks, "blocks")}),
    # 0.4.0-0.7.3 "Loading model weights took %.4f GB" (GiB labelled GB); some 0.7.x/0.8-dev
    # builds append " and %.6f seconds"
    _fact("v0_weights", "Loading model weights took ",
          rf"Loading model weights took (?P<w>{DEC}) GB(?: and (?P<s>{DEC}) seconds)?",
          {"w": (F.model_weights_bytes, "GB"), "s": (F.model_load_seconds, "s")}),
    # 0.8.0-0.8.2 "Model loading took %.4f GB and %.6f seconds"; 0.8.3+ "GiB"; 0.11.1+ "GiB memory";
    # 0.14+ "%s GiB memory" (format_gib); Model Runner V2 "…GiB and …" (ref §2.2)
    _fact("model_loading", "Model loading took ",
          rf"Model loading took (?P<w>{DEC}) (?P<u>GiB|GB)(?: memory)? and (?P<s>{DEC}) seconds",
          {"w": (F.model_weights_bytes, "GiB"), "s": (F.model_load_seconds, "s")}),
    # 0.8.0+ default_loader: "Loading weights took %.2f seconds"
    _fact("loading_weights", "Loading weights took ", rf"Loading weights took (?P<s>{DEC}) seconds",
          {"s": (F.model_load_seconds, "s")}),
    # 0.2.7-0.6.3 "Graph capturing finished in %.0f secs."; 0.6.4+ "…, took %.2f GiB" (ref §2.7)
    _fact("graph_capture", "Graph capturing finished in ",
          rf"Graph capturing finished in (?P<s>{DEC}) secs(?:, took (?P<b>{DEC}) GiB)?",
          {"s": (F.graph_capture_seconds, "s"), "b": (F.graph_capture_bytes, "GiB")}),
    # 0.6.5-0.17.1 "torch.compile takes %.2f s in total"; 0.18+ "took"; 0.32+ optional "[tag] "
    _fact("torch_compile", "torch.compile t", rf"torch\.compile (?:takes|took) (?P<s>{DEC}) s in total",
          {"s": (F.torch_compile_seconds, "s")}),
    # 0.6.5-0.19 "init engine (profile, create kv cache, warmup model) took %.2f seconds";
    # 0.20+ "… took %.2f s" with optional compilation breakdown
    _fact("init_engine", "init engine (profile, create kv cache, warmup model) took ",
          rf"warmup model\) took (?P<s>{DEC}) s(?:econds)?\b", {"s": (F.init_engine_seconds, "s")}),
    # 0.9.2+ "Using max model len %s"
    _fact("max_model_len", "Using max model len ", rf"Using max model len (?P<l>{NUM})\b",
          {"l": (F.max_model_len, "tokens")}),
    # 0.18+ "Estimated CUDA graph memory: %.2f GiB total"
    _fact("cudagraph_estimate", "Estimated CUDA graph memory: ",
          rf"Estimated CUDA graph memory: (?P<b>{DEC}) GiB", {"b": (F.estimated_cuda_graph_bytes, "GiB")}),
]

# -- shape knobs printed outside the dumps --------------------------------------------------------

SHAPE_LOG_RULES = [
    Rule("v0_profile_util", "gpu_memory_utilization (", SHAPE,
         rf"gpu_memory_utilization \((?P<u>{DEC})\)", fields={"u": ("gpu_memory_utilization", None)}),
    Rule("v0_064_profile_util", "Memory profiling results: ", SHAPE,
         rf"gpu_memory_utilization=(?P<u>{DEC})", fields={"u": ("gpu_memory_utilization", None)}),
    # "Chunked prefill is enabled with max_num_batched_tokens=%d."
    Rule("chunked_prefill", "Chunked prefill is enabled with max_num_batched_tokens=", SHAPE,
         rf"max_num_batched_tokens=(?P<n>{NUM})", fields={"n": ("max_num_batched_tokens", None)}),
    # hybrid models (0.10+): "Setting attention block size to %d tokens to ensure that attention
    # page size is >= mamba page size."; backends: "Forcing kv cache block size to 64 for FlashMLA
    # backend." (0.8-0.17.1), "Setting kv cache block size to %d for %s backend." (0.18+)
    Rule("hybrid_block_size", "Setting attention block size to ", SHAPE,
         rf"Setting attention block size to (?P<b>{NUM}) tokens", fields={"b": ("block_size", None)}),
    Rule("backend_block_size", "kv cache block size to ", SHAPE,
         rf"(?:Forcing|Setting) kv cache block size to (?P<b>{NUM})", fields={"b": ("block_size", None)}),
    # "Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d" (0.8+)
    Rule("blocks_override", "with num_gpu_blocks_override=", SHAPE,
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
    return {"source": S.args, "items": items, "complete": complete}


def _args_namespace(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    items, complete = parse_keyvalue_repr(m.group("d"), close=")")
    items.pop("subparser", None)
    return {"source": S.args, "items": items, "complete": complete}


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
    return {"source": S.engine_config, "items": out, "complete": complete}


# "Initializing an LLM engine with config: …" (0.2.7-0.3.3), "Initializing an LLM engine (v%s)
# with config: …" (0.4.0-0.7.0), "Initializing a V0 LLM engine (v%s) …" (0.7.1-0.10.2),
# "Initializing a V1 LLM engine (v%s) with config: %s" (0.7.1+)  (ref §2.1)
_ENGINE_INIT = r"Initializing an? (?:V[01] )?LLM engine(?: \(v(?P<v>[^)\s]+)\))? with config: (?P<d>.*)$"

DUMP_RULES = [
    # 0.9.0+ "non-default args: %s" (dict repr)
    Rule("args_dict", "non-default args: ", SHAPE, r"non-default args: (?P<d>\{.*)$", extract=_args_dict),
    # 0.2.7-0.8.5 "args: %s" (argparse Namespace)
    Rule("args_namespace", "args: Namespace(", SHAPE, r"^args: Namespace\((?P<d>.*)$", extract=_args_namespace),
    Rule("engine_config", "LLM engine", SHAPE, _ENGINE_INIT, extract=_engine_config),
]

# -- engine identity --------------------------------------------------------------------------------

_COMMIT = re.compile(r"\+g(?P<c>[0-9a-f]{7,40})\b")


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
    Rule("api_server_version", "server version ", META, r"vLLM (?:API )?server version (?P<v>\S+?),?(?:\s|$)",
         extract=_version),
    # 0.15+ ASCII logo: "█ ▀▄▀ █  version 0.23.0"
    Rule("logo_version", "█  version ", META, r"█  version (?P<v>\S+)\s*$", extract=_version),
    Rule("engine_version", "LLM engine", META, _ENGINE_INIT, extract=_version),
    Rule("image_digest", "sha256:", META, r"sha256:[0-9a-f]{64}\b", extract=_digest),
]

# -- boot progress and start-up markers ---------------------------------------------------------------

MARKER_RULES = [
    _marker("banner_api_server", "server version ", "start:banner", r"vLLM (?:API )?server version \S"),
    _marker("banner_logo", "█  version ", "start:banner", r"█  version \S+\s*$"),
    _marker("args_dict_start", "non-default args: ", "start:args", r"non-default args: \{"),
    _marker("args_namespace_start", "args: Namespace(", "start:args", r"^args: Namespace\("),
    _marker("engine_init_start", "LLM engine", "start:engine", _ENGINE_INIT),
    _marker("load_start", "Starting to load model ", "progress:load"),
    _marker("load_shards", "Loading safetensors checkpoint shards", "progress:load"),
    _marker("load_done_v0", "Loading model weights took ", "progress:loaded"),
    _marker("load_done_v1", "Model loading took ", "progress:loaded"),
    _marker("profiled_v1", "Available KV cache memory: ", "progress:profiled"),
    _marker("profiled_v0", "the rest of the memory reserved for KV Cache is ", "progress:profiled"),
    _marker("profiled_064", "Memory profiling results: ", "progress:profiled"),
    _marker("profiled_reserved", "memory for KV Cache as specified by kv_cache_memory_bytes", "progress:profiled"),
    _marker("kv_sized_v1", "KV cache size: ", "progress:kv", rf"KV cache size: {NUM} tokens"),
    _marker("kv_sized_v0", " blocks: ", "progress:kv", rf"# \w+ blocks: {NUM}"),
    _marker("capture_v0_old", "Capturing the model for CUDA graphs", "progress:capture"),
    _marker("capture_v0", "Capturing cudagraphs for decoding", "progress:capture"),
    _marker("capture_v1", "Capturing CUDA graph", "progress:capture"),
    # start-up complete (facts.md "ready"): the engine's last steps, then the server
    _marker("ready_init_engine", "init engine (profile, create kv cache, warmup model) took ", "ready"),
    _marker("ready_graphs", "Graph capturing finished in ", "ready"),
    _marker("ready_api_server", "Starting vLLM API server", "ready"),  # 0.7.3-0.17
    _marker("ready_server", "Starting vLLM server on ", "ready"),  # 0.18+
    _marker("ready_uvicorn", "Uvicorn running on ", "ready"),
    _marker("ready_startup", "Application startup complete", "ready"),
]

# Traceback frames that tell which start-up step an exception came from (innermost wins).
_HINTS = {
    P.load: ("load_model", "get_model", "load_weights"),
    P.profile: ("determine_available_memory", "profile_run", "determine_num_available_blocks"),
    P.kv_alloc: ("initialize_kv_cache", "_initialize_kv_caches", "initialize_from_config",
                 "_allocate_kv_cache", "get_kv_cache_config", "_check_enough_kv_cache_memory",
                 "initialize_cache"),
    P.graph_capture: ("capture_model", "_capture_cudagraphs", "_warm_up_model",
                      "compile_or_warm_up_model"),
    P.runtime: ("output_handler",),
}
HINT_RULES = [
    Rule(f"frame_{func}", f", in {func}", HINT, rf", in {re.escape(func)}$", phase=phase)
    for phase, funcs in _HINTS.items()
    for func in funcs
]

# -- failures -------------------------------------------------------------------------------------

_OOM_FIGURES = [
    (re.compile(rf"Tried to allocate (?P<v>{SIZE_RX})"), G.tried_to_allocate_bytes),
    # torch 2.1+: ". GPU <d> has a total capac(i)ty of <T> of which <F> is free."
    (re.compile(r"GPU (?P<v>\d+) has a total capac"), G.gpu_index),
    (re.compile(rf"has a total capaci?ty of (?P<v>{SIZE_RX})"), G.total_capacity_bytes),
    (re.compile(rf"of which (?P<v>{SIZE_RX}) is free"), G.free_bytes),
    # torch <=2.0: " (GPU <d>; <T> total capacity; <A> already allocated; <F> free; ...
    #  <R> reserved in total by PyTorch)"
    (re.compile(r"\(GPU (?P<v>\d+); "), G.gpu_index),
    (re.compile(rf"(?P<v>{SIZE_RX}) total capacity;"), G.total_capacity_bytes),
    (re.compile(rf"(?P<v>{SIZE_RX}) already allocated;"), G.allocated_by_pytorch_bytes),
    (re.compile(rf"; (?P<v>{SIZE_RX}) free;"), G.free_bytes),
    (re.compile(rf"this process has (?P<v>{SIZE_RX}) memory in use"), G.in_use_bytes),
    (re.compile(rf"Of the allocated memory (?P<v>{SIZE_RX}) is allocated by PyTorch"),
     G.allocated_by_pytorch_bytes),
    (re.compile(rf"(?P<v>{SIZE_RX}) is reserved by PyTorch but unallocated"), G.reserved_unallocated_bytes),
]


def _figures(record: str, table: list[tuple[re.Pattern[str], str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rx, name in table:
        if name in out:
            continue
        m = rx.search(record)
        if not m:
            continue
        printed = m.group("v")
        out[name] = units.size(printed) if re.search(r"[A-Za-z]", printed) else int(printed)
    return out


def _oom(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    return _figures(record[m.start():], _OOM_FIGURES)


_KV_TOO_SMALL_FIGURES = [
    (re.compile(r"max seq len \((?P<v>\d+)\)"), G.max_model_len),
    (re.compile(rf"\((?P<v>{DEC} Gi?B) KV cache is needed"), G.needed_bytes),
    (re.compile(rf"available KV cache memory \((?P<v>{DEC} Gi?B)\)"), G.available_bytes),
    (re.compile(r"estimated maximum model length is (?P<v>\d+)\."), G.estimated_max_model_len),
    # V0: "… that can be stored in KV cache ({max_seq_len})"
    (re.compile(r"can be stored in KV cache \((?P<v>\d+)\)"), G.kv_cache_tokens),
]


def _kv_too_small(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    # "GB" in 0.7.0-0.8.2 is GiB like every vLLM GB
    return _figures(record[m.start():], _KV_TOO_SMALL_FIGURES)


def _message(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    msg = m.group("m").strip() if "m" in m.re.groupindex and m.group("m") else ""
    return {G.message: msg} if msg else {}


def _failure(name: str, anchor: str, kind: str, pattern: str | None = None, **kw: Any) -> Rule:
    extract = kw.pop("extract", _message if pattern and "(?P<m>" in pattern else None)
    return Rule(name=name, anchor=anchor, emits=FAILURE, pattern=pattern, failure=kind,
                extract=extract or (lambda m, line, record: {}), **kw)


FAILURE_RULES = [
    # torch: "CUDA out of memory. Tried to allocate <S>…" under torch.OutOfMemoryError,
    # torch.cuda.OutOfMemoryError, RuntimeError, or re-raised as "Worker failed with error '…'"
    _failure("oom", "CUDA out of memory", K.oom, r"CUDA out of memory", extract=_oom, wraps=True),
    # V0 worker.py 0.4.1-0.10.2: "The model's max seq len ({max_model_len}) is larger than the
    # maximum number of tokens that can be stored in KV cache ({max_seq_len})."
    _failure("kv_too_small_v0", "is larger than the maximum number of tokens that can be stored in KV cache",
             K.kv_too_small, r"max seq len \(\d+\) is larger", extract=_kv_too_small, phase=P.kv_alloc,
             wraps=True),
    # V1 0.7.0+: "To serve at least one request with the models's max seq len ({L}), ({need:.2f}
    # GiB KV cache is needed, which is larger than the available KV cache memory ({avail:.2f} GiB).
    # Based on the available memory, the estimated maximum model length is {E}." ("model's" 0.22+)
    _failure("kv_too_small_v1", "To serve at least one request with the model", K.kv_too_small,
             r"To serve at least one request with the models?'s max seq len", extract=_kv_too_small,
             phase=P.kv_alloc, wraps=True),
    _failure("no_kv_memory", "No available memory for the cache blocks", K.no_kv_memory, phase=P.kv_alloc),
    # config validation (config/model.py), 0.27+: "Decode context parallelism for GQA/MQA requires
    # `--tensor-parallel-size` ({tp}) to be greater than the model's total number of KV heads ({h})."
    _failure("dcp_kv_heads", "Decode context parallelism for GQA/MQA requires", K.config_error,
             r"(?P<m>Decode context parallelism for GQA/MQA requires.*)$"),
    # 0.11.1-0.26: AssertionError "tensor parallel size {tp} must be greater than total num kv heads"
    _failure("dcp_kv_heads_assert", "must be greater than total num kv heads", K.config_error,
             r"(?P<m>tensor parallel size \d+ must be greater than total num kv heads.*)$"),
    _failure("dcp_too_large", "exceeds the maximum supported value", K.config_error,
             r"(?P<m>`--decode-context-parallel-size` .*exceeds the maximum supported value.*)$"),
    # "Total number of attention heads (%d) must be divisible by tensor parallel size (%d)."
    _failure("heads_not_divisible", "must be divisible by tensor parallel size", K.config_error,
             r"(?P<m>Total number of (?:attention|key-value) heads.*must be divisible by tensor parallel size.*)$"),
    _failure("heads_per_kv_not_divisible", "query heads per KV head", K.config_error,
             r"(?P<m>The model's number of query heads per KV head .*must be divisible.*)$"),
    # pydantic wraps config errors: "pydantic_core._pydantic_core.ValidationError: 1 validation
    # error for ModelConfig" then an indented "Value error, <message> [type=value_error, …]"
    _failure("pydantic_validation", "ValidationError: ", K.config_error,
             r"ValidationError: (?P<m>\d+ validation errors? for \w+)"),
    _failure("pydantic_value_error", "Value error, ", K.config_error,
             r"^Value error, (?P<m>.*?)(?: \[type=value_error.*)?$"),
    # V1 0.8.5+ "EngineCore failed to start."; 0.8.4+ "Engine core initialization failed. See root
    # cause above."; workers: "WorkerProc failed to start.", "WorkerProc initialization failed due
    # to an exception in a background process"; V0 "Engine process failed to start."
    _failure("engine_core_failed", "EngineCore failed to start", K.engine_init_failed),
    _failure("engine_core_init_failed", "Engine core initialization failed", K.engine_init_failed),
    _failure("workerproc_failed", "WorkerProc failed to start", K.engine_init_failed),
    _failure("workerproc_init_failed", "WorkerProc initialization failed", K.engine_init_failed),
    _failure("v0_engine_process_failed", "Engine process failed to start", K.engine_init_failed),
    # "Worker proc %s died unexpectedly, shutting down executor." (0.8.5+); "WorkerProc hit an
    # exception." (a worker's busy loop raised)
    _failure("worker_proc_died", "died unexpectedly", K.worker_died, r"Worker proc \S+ died unexpectedly"),
    _failure("workerproc_exception", "WorkerProc hit an exception", K.worker_died),
    # engine death: "Engine core proc %s died unexpectedly" (0.10.1+), EngineDeadError (0.8.5+),
    # "EngineCore encountered a fatal error.", "AsyncLLM output_handler failed.", V0 MQLLMEngine
    _failure("engine_core_died", "died unexpectedly", K.engine_dead,
             r"Engine core (?:proc|process) \S+ died unexpectedly"),
    _failure("engine_dead_error", "EngineDeadError", K.engine_dead, r"EngineDeadError\b", implies_up=True),
    _failure("engine_fatal", "EngineCore encountered a fatal error", K.engine_dead, implies_up=True),
    _failure("output_handler", "AsyncLLM output_handler failed", K.engine_dead, implies_up=True),
    _failure("mq_engine_dead", "MQLLMEngine", K.engine_dead, r"MQLLMEngine\b.*\bdead\b"),
    # "CUDA error: an illegal memory access was encountered" and friends; custom all-reduce's
    # "Failed: Cuda error %s:%d '%s'"
    _failure("cuda_error", "CUDA error: ", K.cuda_error, r"CUDA error: (?P<m>.+)$"),
    _failure("cuda_error_custom_ar", "Failed: Cuda error ", K.cuda_error, r"Failed: Cuda error (?P<m>.+)$"),
]

# -- serving: stats intervals, spec decode, access and request lines --------------------------------

# V0 (0.2.7-0.11) "Avg prompt throughput: …, Running: %d reqs, Swapped: %d reqs, Pending: %d reqs,
# GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%"; V1 0.7.1+ "… Running: %d reqs, Waiting:
# %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%" with "Engine %03d: " from
# 0.8.3; 0.11.1+ built from ", "-joined parts (ref §2.8): read the key: value pairs one by one.
_STATS_KEYS = {
    "Avg prompt throughput": R.prompt_throughput_tps,
    "Avg generation throughput": R.generation_throughput_tps,
    "Running": R.running_reqs,
    "Waiting": R.waiting_reqs,
    "Swapped": R.swapped_reqs,
    "Pending": R.pending_reqs,
    "GPU KV cache usage": R.gpu_kv_cache_usage_pct,
    "CPU KV cache usage": R.cpu_kv_cache_usage_pct,
    "Prefix cache hit rate": R.prefix_cache_hit_rate_pct,
}
_ENGINE_IDX = re.compile(r"^Engine (?P<e>\d+): ")


def _stats(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    """Split the ", "-joined "key: value" parts (0.11.1+ builds the line from optional parts;
    0.7.1-0.7.2 lost a comma: "Waiting: %d reqs GPU KV cache usage")."""
    body = record[record.find("Avg prompt throughput: "):].replace(" reqs GPU", " reqs, GPU")
    values: dict[str, Any] = {}
    for part in body.split(", "):
        key, sep, val = part.partition(": ")
        if not sep:
            continue
        if key.endswith("KV cache usage"):  # "GPU KV cache usage"; any device name in 0.30+
            name = R.cpu_kv_cache_usage_pct if key.startswith("CPU") else R.gpu_kv_cache_usage_pct
        else:
            name = _STATS_KEYS.get(key)
            if name is None:
                continue
        number = val.split(" ", 1)[0].rstrip(".%")
        try:
            values.setdefault(name, units.parse_number(number))
        except units.UnitError:
            continue  # a damaged figure is not guessed at
    if R.prompt_throughput_tps not in values:
        return None
    e = _ENGINE_IDX.search(record)
    return {"kind": "engine_stats", "engine": int(e.group("e")) if e else None, "values": values}


# V0 0.5.5-0.11: separate "Prefix cache hit rate: GPU: %.2f%%, CPU: %.2f%%"
def _v0_prefix(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    return {"kind": "engine_stats_extra", "engine": None,
            "values": {R.prefix_cache_hit_rate_pct: units.parse_number(m.group("g"))}}


_SPEC_V1 = {
    "Mean acceptance length": R.spec_mean_acceptance_length,
    "Accepted": R.spec_accepted_tokens,
    "Drafted": R.spec_drafted_tokens,
    "Avg Draft acceptance rate": R.spec_draft_acceptance_rate_pct,
    "Draft acceptance rate": R.spec_draft_acceptance_rate_pct,
}
_PER_POSITION = re.compile(r"Per-position acceptance rate: (?P<v>(?:[\d.]+|nan)(?:, (?:[\d.]+|nan))*)")


# V1 0.8.3+ "SpecDecoding metrics: …" (ref §2.9)
def _spec_v1(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    values: dict[str, Any] = {}
    pp = _PER_POSITION.search(record)
    body = record[: pp.start()] + record[pp.end():] if pp else record
    for part in body[body.find("SpecDecoding metrics: ") + len("SpecDecoding metrics: "):].split(", "):
        key, sep, val = part.partition(": ")
        name = _SPEC_V1.get(key)
        if not sep or name is None:
            continue
        try:
            values.setdefault(name, units.parse_number(val.split(" ", 1)[0].rstrip("%")))
        except units.UnitError:
            continue
    if pp:
        values[R.spec_per_position_acceptance] = [
            None if x == "nan" else float(x) for x in pp.group("v").split(", ")
        ]
    return {"kind": "spec_decode", "engine": None, "values": values} if values else None


# V0 0.4.1-0.9.2 "Speculative metrics: Draft acceptance rate: {:.3f}, System efficiency: {:.3f},
# Number of speculative tokens: {}, Number of accepted tokens: {}, Number of draft tokens: {},
# Number of emitted tokens: {}." ("draft tokens tokens" in 0.4.1-0.5.2).  Counts are cumulative.
_SPEC_V0 = re.compile(
    r"Draft acceptance rate: (?P<rate>[\d.]+).*?Number of accepted tokens: (?P<acc>\d+), "
    r"Number of draft tokens(?: tokens)?: (?P<draft>\d+)"
)


def _spec_v0(m: re.Match[str], line: Line, record: str) -> dict[str, Any] | None:
    s = _SPEC_V0.search(record)
    if not s:
        return None
    values = {
        # printed as a fraction; stored as percent like V1's
        R.spec_draft_acceptance_rate_pct: round(float(s.group("rate")) * 100, 6),
        R.spec_accepted_tokens: int(s.group("acc")),
        R.spec_drafted_tokens: int(s.group("draft")),
    }
    return {"kind": "spec_decode", "engine": None, "values": values}


# Fast shapes of the two lines a served V1 log is mostly made of, exactly as 0.8.3+ prints them:
# one fullmatch instead of splitting "key: value" parts.  Any other shape (optional parts,
# damaged figures, V0) takes the general extractor; tests hold both to the same result.
# "Engine %03d: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s,
#  Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%"
# figures in ENGINE_STATS_SERIES order: V0's swapped, pending and CPU KV usage are not printed
def _stats_figures(g: tuple[str, ...]) -> tuple[int | None, tuple[Any, ...]]:
    return int(g[0]), (float(g[1]), float(g[2]), int(g[3]), int(g[4]), None, None, float(g[5]), None, float(g[6]))


_FAST_STATS = FastShape(
    "engine_stats",
    # at most 18 digits a figure: a longer one (out of any column's range) takes the general
    # extractor, which does not read it
    r"Engine (\d{1,18}): Avg prompt throughput: (\d{1,18}\.\d) tokens/s, Avg generation throughput: (\d{1,18}\.\d) tokens/s, "
    r"Running: (\d{1,18}) reqs, Waiting: (\d{1,18}) reqs, GPU KV cache usage: (\d{1,18}\.\d)%, Prefix cache hit rate: (\d{1,18}\.\d)%",
    _stats_figures,
)


# "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s,
#  Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens,
#  Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%"
# figures in SPEC_DECODE_SERIES order
def _spec_figures(g: tuple[str, ...]) -> tuple[int | None, tuple[Any, ...]]:
    return None, (float(g[0]), int(g[1]), int(g[2]), float(g[4]), [float(x) for x in g[3].split(", ")])


_FAST_SPEC = FastShape(
    "spec_decode",
    r"SpecDecoding metrics: Mean acceptance length: (\d{1,18}\.\d{1,18}), Accepted throughput: \d+\.\d+ tokens/s, "
    r"Drafted throughput: \d+\.\d+ tokens/s, Accepted: (\d{1,18}) tokens, Drafted: (\d{1,18}) tokens, "
    r"Per-position acceptance rate: (\d\.\d+(?:, \d\.\d+)*), Avg Draft acceptance rate: (\d+\.\d)%",
    _spec_figures,
)


RUNTIME_RULES = [
    Rule("engine_stats", "Avg prompt throughput: ", RUNTIME, r"Avg prompt throughput: ", extract=_stats,
         fast=_FAST_STATS),
    Rule("v0_prefix_hit", "Prefix cache hit rate: GPU: ", RUNTIME,
         r"^Prefix cache hit rate: GPU: (?P<g>[\d.]+)%", extract=_v0_prefix),
    Rule("spec_decode_v1", "SpecDecoding metrics: ", RUNTIME, r"SpecDecoding metrics: ", extract=_spec_v1,
         fast=_FAST_SPEC),
    Rule("spec_decode_v0", "Speculative metrics: ", RUNTIME, r"Speculative metrics: ", extract=_spec_v0),
    # Counted, not stored: every occurrence of these anchors in the boot.  uvicorn's access line
    # '172.18.0.1:50504 - "POST /v1/chat/completions HTTP/1.1" 200 OK'; the request log's
    # "Received request %s: prompt: …" (one per request with --enable-log-requests).
    Rule("access_line", "HTTP/1.", COUNT, marker="access"),
    Rule("request_line", "Received request ", COUNT, marker="request"),
    # "Request %s failed (engine dead)." (V1): requests were in flight, so the engine was serving
    Rule("request_failed", "failed (engine dead)", MARKER, r"^Request \S+ failed \(engine dead\)",
         marker="serving", implies_up=True),
]

BUILTIN_RULES: list[Rule] = (
    FACT_RULES + SHAPE_LOG_RULES + DUMP_RULES + META_RULES + MARKER_RULES + HINT_RULES
    + FAILURE_RULES + RUNTIME_RULES
)
