"""The fact vocabulary: every name ledger stores, with its unit and how a boot summarises it.

This is the one module that spells fact names, failure kinds, figures, phases, outcomes and
runtime series.  It mirrors ``../shared/facts.md`` (the project's contract); the few names
marked ``extension`` are figures vLLM prints that facts.md does not list yet.  Everything else
(rules, schema, export, diff, docs) refers to these constants instead of repeating the strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace


@dataclass(frozen=True)
class FactSpec:
    name: str
    unit: str
    # How several values of one fact in one boot (one per rank, or repeated lines) reduce to the
    # boot's figure: the engine sizes the KV pool by the smallest rank, so capacities take "min";
    # costs (weights, times) are bounded by the largest rank, so they take "max".
    summary: str
    description: str
    extension: bool = False


_FACTS = [
    FactSpec("available_kv_cache_bytes", "bytes", "min", "KV budget the profiler left (per rank)"),
    FactSpec("kv_cache_reserved_bytes", "bytes", "min", "KV budget fixed by --kv-cache-memory-bytes"),
    FactSpec("kv_cache_tokens", "tokens", "min", "GPU KV cache size in tokens"),
    FactSpec("max_concurrency", "x", "min", "maximum concurrency at max_concurrency_tokens"),
    FactSpec("max_concurrency_tokens", "tokens", "last", "the request length the concurrency is for"),
    FactSpec("gpu_blocks", "blocks", "min", "KV blocks on the GPU"),
    FactSpec("cpu_blocks", "blocks", "min", "KV swap blocks on the CPU (V0)"),
    FactSpec("model_weights_bytes", "bytes", "max", "memory taken by the model weights"),
    FactSpec("model_load_seconds", "s", "max", "time to load the weights"),
    FactSpec("graph_capture_seconds", "s", "max", "CUDA graph capture time"),
    FactSpec("graph_capture_bytes", "bytes", "max", "memory taken by CUDA graphs"),
    FactSpec("torch_compile_seconds", "s", "max", "torch.compile time in total"),
    FactSpec("init_engine_seconds", "s", "max", "profile + KV cache + warm-up time"),
    FactSpec("total_gpu_memory_bytes", "bytes", "min", "GPU memory the V0 profiler saw"),
    FactSpec("max_model_len", "tokens", "last", "the model length the engine serves"),
    # extensions: printed by vLLM, useful for budgets, not (yet) in facts.md
    FactSpec("requested_memory_bytes", "bytes", "min",
             "total_gpu_memory x gpu_memory_utilization (V0 profiler)", extension=True),
    FactSpec("non_torch_memory_bytes", "bytes", "max", "non-torch memory (V0 profiler)", extension=True),
    FactSpec("activation_peak_bytes", "bytes", "max",
             "PyTorch activation peak (V0 profiler)", extension=True),
    FactSpec("memory_profiling_seconds", "s", "max", "memory profiling time (V0)", extension=True),
    FactSpec("initial_free_memory_bytes", "bytes", "min",
             "free memory at start-up when kv_cache_memory_bytes is set", extension=True),
    FactSpec("estimated_cuda_graph_bytes", "bytes", "max",
             "CUDA graph memory the profiler estimated (0.18+)", extension=True),
]

FACTS: dict[str, FactSpec] = {f.name: f for f in _FACTS}

#: attribute access to fact names: ``F.kv_cache_tokens == "kv_cache_tokens"``
F = SimpleNamespace(**{name: name for name in FACTS})


def summarize(name: str, items: list, value=lambda f: f.value, line=lambda f: f.line):
    """The one value a boot reports for fact ``name`` out of all its ``items`` (per rank,
    repeated lines), by the fact's ``summary`` rule; pack facts (unknown here) take the last."""
    if not items:
        return None
    how = FACTS[name].summary if name in FACTS else "last"
    if how == "min":
        return min(items, key=lambda f: (value(f), line(f)))
    if how == "max":
        return max(items, key=lambda f: (value(f), -line(f)))
    return max(items, key=line)


# -- failures ---------------------------------------------------------------------------------

FAILURE_KINDS = (
    "oom",
    "kv_too_small",
    "no_kv_memory",
    "config_error",
    "engine_init_failed",
    "worker_died",
    "engine_dead",
    "cuda_error",
)
K = SimpleNamespace(**{k: k for k in FAILURE_KINDS})

#: figures a failure may carry; memory in bytes, lengths in tokens
FAILURE_FIGURES = {
    "tried_to_allocate_bytes": "bytes",
    "gpu_index": "index",
    "total_capacity_bytes": "bytes",
    "free_bytes": "bytes",
    "in_use_bytes": "bytes",
    "allocated_by_pytorch_bytes": "bytes",
    "reserved_unallocated_bytes": "bytes",
    "max_model_len": "tokens",
    "kv_cache_tokens": "tokens",
    "needed_bytes": "bytes",
    "available_bytes": "bytes",
    "estimated_max_model_len": "tokens",
    "message": "text",
}
G = SimpleNamespace(**{k: k for k in FAILURE_FIGURES})

PHASES = ("load", "profile", "kv_alloc", "graph_capture", "runtime", "unknown")
P = SimpleNamespace(**{p: p for p in PHASES})

OUTCOMES = ("ready", "failed", "crashed", "incomplete")
O = SimpleNamespace(**{o: o for o in OUTCOMES})

# -- shape ------------------------------------------------------------------------------------

SHAPE_SOURCES = ("args", "engine_config", "log", "default")
S = SimpleNamespace(**{s: s for s in SHAPE_SOURCES})

#: vLLM's documented defaults, used only when a complete non-default args dump shows the key
#: was left alone (a missing key in a cut-short dump or an excerpt tells nothing).
SHAPE_DEFAULTS = {
    "tensor_parallel_size": 1,
    "pipeline_parallel_size": 1,
    "data_parallel_size": 1,
    "kv_cache_dtype": "auto",
    "gpu_memory_utilization": 0.9,
    "enforce_eager": False,
    "quantization": None,
}

# -- runtime series ---------------------------------------------------------------------------

ENGINE_STATS_SERIES = (
    "prompt_throughput_tps",
    "generation_throughput_tps",
    "running_reqs",
    "waiting_reqs",
    "swapped_reqs",
    "pending_reqs",
    "gpu_kv_cache_usage_pct",
    "cpu_kv_cache_usage_pct",
    "prefix_cache_hit_rate_pct",
)
SPEC_DECODE_SERIES = (
    "spec_mean_acceptance_length",
    "spec_accepted_tokens",
    "spec_drafted_tokens",
    "spec_draft_acceptance_rate_pct",
    "spec_per_position_acceptance",
)
RUNTIME_SERIES = ENGINE_STATS_SERIES + SPEC_DECODE_SERIES
R = SimpleNamespace(**{r: r for r in RUNTIME_SERIES})

RUNTIME_KINDS = ("engine_stats", "spec_decode")
# a sample's figures, in this order (``RuntimeSample.figures``)
RUNTIME_KIND_SERIES = {"engine_stats": ENGINE_STATS_SERIES, "spec_decode": SPEC_DECODE_SERIES}


def is_snake_case_name(name: str) -> bool:
    """True for names fit to be a fact: lower snake_case starting with a letter."""
    import re

    return re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*", name) is not None
