"""The fact vocabulary: every name ledger stores, with its unit and how a boot summarises it.

This is the one module that spells fact names, failure kinds, figures, phases, outcomes and
runtime series.  It mirrors ``docs/facts.md`` (the project's contract); the few names marked
``extension`` are figures vLLM prints that facts.md does not list yet.  Everything else (rules,
schema, export, diff, docs) refers to these names instead of repeating the strings.  Each
namespace is a ``StrEnum`` whose values are the stored strings, so a member equals its text
(``FactName.kv_cache_tokens == "kv_cache_tokens"``) and stored data never changes with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar


class FactName(StrEnum):
    """Every fact a boot may carry (a grammar pack may add its own, as plain strings)."""

    available_kv_cache_bytes = "available_kv_cache_bytes"
    kv_cache_reserved_bytes = "kv_cache_reserved_bytes"
    kv_cache_tokens = "kv_cache_tokens"
    max_concurrency = "max_concurrency"
    max_concurrency_tokens = "max_concurrency_tokens"
    gpu_blocks = "gpu_blocks"
    cpu_blocks = "cpu_blocks"
    model_weights_bytes = "model_weights_bytes"
    model_load_seconds = "model_load_seconds"
    graph_capture_seconds = "graph_capture_seconds"
    graph_capture_bytes = "graph_capture_bytes"
    torch_compile_seconds = "torch_compile_seconds"
    init_engine_seconds = "init_engine_seconds"
    total_gpu_memory_bytes = "total_gpu_memory_bytes"
    max_model_len = "max_model_len"
    requested_memory_bytes = "requested_memory_bytes"
    non_torch_memory_bytes = "non_torch_memory_bytes"
    activation_peak_bytes = "activation_peak_bytes"
    memory_profiling_seconds = "memory_profiling_seconds"
    initial_free_memory_bytes = "initial_free_memory_bytes"
    estimated_cuda_graph_bytes = "estimated_cuda_graph_bytes"
    consumed_memory_bytes = "consumed_memory_bytes"
    kv_cache_requested_limit_bytes = "kv_cache_requested_limit_bytes"
    kv_cache_gpu_limit_bytes = "kv_cache_gpu_limit_bytes"
    load_peak_memory_bytes = "load_peak_memory_bytes"
    load_end_memory_bytes = "load_end_memory_bytes"
    cuda_graph_pool_bytes = "cuda_graph_pool_bytes"
    cuda_graph_pool_estimated_bytes = "cuda_graph_pool_estimated_bytes"
    cuda_graph_memory_bytes = "cuda_graph_memory_bytes"


@dataclass(frozen=True)
class FactSpec:
    name: FactName
    unit: str
    # How several values of one fact in one boot (one per rank, or repeated lines) reduce to the
    # boot's figure: the engine sizes the KV pool by the smallest rank, so capacities take "min";
    # costs (weights, times) are bounded by the largest rank, so they take "max".
    summary: str
    description: str
    extension: bool = False
    # may be read below zero, as printed (facts.md: a negative available KV cache memory is the
    # evidence of the failure that follows); any other name printed negative is not read
    signed: bool = False


_FACTS = [
    FactSpec(FactName.available_kv_cache_bytes, "bytes", "min", "KV budget the profiler left (per rank)",
             signed=True),
    FactSpec(FactName.kv_cache_reserved_bytes, "bytes", "min", "KV budget fixed by --kv-cache-memory-bytes"),
    FactSpec(FactName.kv_cache_tokens, "tokens", "min", "GPU KV cache size in tokens"),
    FactSpec(FactName.max_concurrency, "x", "min", "maximum concurrency at max_concurrency_tokens"),
    FactSpec(FactName.max_concurrency_tokens, "tokens", "last", "the request length the concurrency is for"),
    FactSpec(FactName.gpu_blocks, "blocks", "min", "KV blocks on the GPU"),
    FactSpec(FactName.cpu_blocks, "blocks", "min", "KV swap blocks on the CPU (V0)"),
    FactSpec(FactName.model_weights_bytes, "bytes", "max", "memory taken by the model weights"),
    FactSpec(FactName.model_load_seconds, "s", "max", "time to load the weights"),
    FactSpec(FactName.graph_capture_seconds, "s", "max", "CUDA graph capture time"),
    FactSpec(FactName.graph_capture_bytes, "bytes", "max", "memory taken by CUDA graphs"),
    FactSpec(FactName.torch_compile_seconds, "s", "max", "torch.compile time in total"),
    FactSpec(FactName.init_engine_seconds, "s", "max", "profile + KV cache + warm-up time"),
    FactSpec(FactName.total_gpu_memory_bytes, "bytes", "min",
             "the device's total memory (V0 profiler; V1 'Free memory on device (F/T GiB)')"),
    FactSpec(FactName.max_model_len, "tokens", "last", "the model length the engine serves"),
    # extensions: printed by vLLM, useful for budgets, not (yet) in facts.md
    FactSpec(FactName.requested_memory_bytes, "bytes", "min",
             "total_gpu_memory x gpu_memory_utilization (V0 profiler)", extension=True),
    FactSpec(FactName.non_torch_memory_bytes, "bytes", "max", "non-torch memory (V0 profiler)", extension=True),
    FactSpec(FactName.activation_peak_bytes, "bytes", "max",
             "PyTorch activation peak (V0 profiler)", extension=True),
    FactSpec(FactName.memory_profiling_seconds, "s", "max", "memory profiling time (V0)", extension=True),
    FactSpec(FactName.initial_free_memory_bytes, "bytes", "min",
             "free device memory at start-up (the init snapshot)", extension=True),
    FactSpec(FactName.estimated_cuda_graph_bytes, "bytes", "max",
             "CUDA graph memory the profiler estimated ('Estimated CUDA graph memory: X GiB total', 0.18+)",
             extension=True),
    FactSpec(FactName.consumed_memory_bytes, "bytes", "max",
             "weights + non-torch memory after warm-up ('Actual usage is C GiB for consumed memory')",
             extension=True),
    FactSpec(FactName.kv_cache_requested_limit_bytes, "bytes", "min",
             "the --kv-cache-memory that fits the requested memory (vLLM's suggestion, exact bytes)",
             extension=True),
    FactSpec(FactName.kv_cache_gpu_limit_bytes, "bytes", "min",
             "the --kv-cache-memory that fills the device (vLLM's suggestion, exact bytes)", extension=True),
    FactSpec(FactName.load_peak_memory_bytes, "bytes", "max",
             "peak device memory allocated while the weights loaded (per rank)", extension=True),
    FactSpec(FactName.load_end_memory_bytes, "bytes", "max",
             "device memory allocated when weight loading ended (per rank)", extension=True),
    FactSpec(FactName.cuda_graph_pool_bytes, "bytes", "max",
             "the CUDA graph pool's memory after capture ('CUDA graph pool memory: X GiB (actual)')", extension=True),
    FactSpec(FactName.cuda_graph_pool_estimated_bytes, "bytes", "max",
             "the CUDA graph pool's estimate beside it ('…, Y GiB (estimated)')", extension=True),
    FactSpec(FactName.cuda_graph_memory_bytes, "bytes", "max",
             "CUDA graph memory in the post-warm-up suggestion ('… G GiB for CUDAGraph memory')", extension=True),
]

FACTS: dict[str, FactSpec] = {f.name: f for f in _FACTS}
assert set(FACTS) == set(FactName), "every FactName has its FactSpec"

_T = TypeVar("_T")


def _value_of(item: Any) -> Any:
    return item.value


def _line_of(item: Any) -> int:
    return int(item.line)


def summarize(name: str, items: Sequence[_T], value: Callable[[_T], Any] = _value_of,
              line: Callable[[_T], int] = _line_of) -> _T | None:
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

class FailureKind(StrEnum):
    oom = "oom"
    kv_too_small = "kv_too_small"
    no_kv_memory = "no_kv_memory"
    config_error = "config_error"
    engine_init_failed = "engine_init_failed"
    worker_died = "worker_died"
    engine_dead = "engine_dead"
    cuda_error = "cuda_error"
    startup_memory = "startup_memory"
    comm_error = "comm_error"
    timeout = "timeout"
    killed = "killed"
    exception = "exception"


FAILURE_KINDS = tuple(FailureKind)
# kinds that say the engine ended, not why: where a boot has another kind too, that one tells why
# (an OOM, a KV pool too small, a config error behind "EngineCore failed to start")
CONSEQUENCES = frozenset({FailureKind.engine_init_failed, FailureKind.worker_died, FailureKind.engine_dead})


def telling_kind(kinds: list[str]) -> str | None:
    """Of a boot's failure kinds in line order, the one that tells why: an OOM where there is one,
    else the first that is not a consequence, else the first."""
    if not kinds:
        return None
    if FailureKind.oom in kinds:
        return FailureKind.oom
    return next((k for k in kinds if k not in CONSEQUENCES), kinds[0])


class FailureFigure(StrEnum):
    """Figures a failure may carry (units in ``FAILURE_FIGURES``)."""

    tried_to_allocate_bytes = "tried_to_allocate_bytes"
    gpu_index = "gpu_index"
    total_capacity_bytes = "total_capacity_bytes"
    free_bytes = "free_bytes"
    in_use_bytes = "in_use_bytes"
    allocated_by_pytorch_bytes = "allocated_by_pytorch_bytes"
    reserved_unallocated_bytes = "reserved_unallocated_bytes"
    max_model_len = "max_model_len"
    kv_cache_tokens = "kv_cache_tokens"
    needed_bytes = "needed_bytes"
    available_bytes = "available_bytes"
    estimated_max_model_len = "estimated_max_model_len"
    gpu_memory_utilization = "gpu_memory_utilization"
    requested_bytes = "requested_bytes"
    signal = "signal"
    exception = "exception"
    message = "message"


#: figures a failure may carry; memory in bytes, lengths in tokens
FAILURE_FIGURES: dict[str, str] = {
    FailureFigure.tried_to_allocate_bytes: "bytes",
    FailureFigure.gpu_index: "index",
    FailureFigure.total_capacity_bytes: "bytes",
    FailureFigure.free_bytes: "bytes",
    FailureFigure.in_use_bytes: "bytes",
    FailureFigure.allocated_by_pytorch_bytes: "bytes",
    FailureFigure.reserved_unallocated_bytes: "bytes",
    FailureFigure.max_model_len: "tokens",
    FailureFigure.kv_cache_tokens: "tokens",
    FailureFigure.needed_bytes: "bytes",
    FailureFigure.available_bytes: "bytes",
    FailureFigure.estimated_max_model_len: "tokens",
    FailureFigure.gpu_memory_utilization: "fraction",
    FailureFigure.requested_bytes: "bytes",
    FailureFigure.signal: "signal",
    FailureFigure.exception: "text",
    FailureFigure.message: "text",
}


class Phase(StrEnum):
    """The start-up step a failure happened in."""

    load = "load"
    profile = "profile"
    kv_alloc = "kv_alloc"
    graph_capture = "graph_capture"
    runtime = "runtime"
    unknown = "unknown"


PHASES = tuple(Phase)


class Outcome(StrEnum):
    ready = "ready"
    failed = "failed"
    crashed = "crashed"
    incomplete = "incomplete"


OUTCOMES = tuple(Outcome)


class Ended(StrEnum):
    """How a boot ended, beside its outcome (facts.md, "How a boot ended")."""

    stopped = "stopped"  # a stop that was asked for, with no failure before it
    crashed = "crashed"  # a failure the server did not ask for, after ready
    failed = "failed"  # a failure before ready
    running = "running"  # the log ends with the engine serving


ENDINGS = tuple(Ended)


class Verdict(StrEnum):
    """What a reconciliation view says of a boot (the views of migration 0002 write these
    words; ``ledger check`` and ``ledger show`` print them)."""

    ok = "ok"
    off = "off"  # KV reconciliation: measured tokens outside the tolerance of the prediction
    broken = "broken"  # capacity contract: fewer tokens than max_num_seqs x max_model_len
    over = "over"  # a ceiling: the figures exceed the card ceiling or the host cap
    insufficient = "insufficient"  # not enough figures to say
    reference = "reference"  # KV reconciliation: the group's reference, predicted from itself (no test)
    unsupported = "unsupported"  # the KV formula: a geometry the allocator does not model (the reason says which)
    slower = "slower"  # check --against: decode dropped beyond the bound against the control
    # survival (how the boot ended; ledger.verdicts.survival): the outcome's words where it failed
    failed = "failed"  # survival: a failure before ready, the boot never came up
    crashed = "crashed"  # survival: ready, then a failure (a boot is no proof of runtime survivability)
    running = "running"  # survival: ready and no failure, still running where its log ends (no test passed)


FAILING_VERDICTS = frozenset({Verdict.off, Verdict.broken, Verdict.over, Verdict.slower, Verdict.failed,
                              Verdict.crashed})

# -- shape ------------------------------------------------------------------------------------


class ShapeSource(StrEnum):
    """Where a shape value was read, in order of precedence."""

    args = "args"
    engine_config = "engine_config"
    log = "log"
    default = "default"


SHAPE_SOURCES = tuple(ShapeSource)

#: vLLM's documented defaults, used only when a complete non-default args dump shows the key
#: was left alone (a missing key in a cut-short dump or an excerpt tells nothing).
SHAPE_DEFAULTS: dict[str, Any] = {
    "tensor_parallel_size": 1,
    "pipeline_parallel_size": 1,
    "data_parallel_size": 1,
    "kv_cache_dtype": "auto",
    "gpu_memory_utilization": 0.9,
    "enforce_eager": False,
    "quantization": None,
}

# -- runtime series ---------------------------------------------------------------------------

class RuntimeSeries(StrEnum):
    """The figures of runtime samples (one column each in the ledger)."""

    prompt_throughput_tps = "prompt_throughput_tps"
    generation_throughput_tps = "generation_throughput_tps"
    running_reqs = "running_reqs"
    waiting_reqs = "waiting_reqs"
    swapped_reqs = "swapped_reqs"
    pending_reqs = "pending_reqs"
    gpu_kv_cache_usage_pct = "gpu_kv_cache_usage_pct"
    cpu_kv_cache_usage_pct = "cpu_kv_cache_usage_pct"
    prefix_cache_hit_rate_pct = "prefix_cache_hit_rate_pct"
    spec_mean_acceptance_length = "spec_mean_acceptance_length"
    spec_accepted_tokens = "spec_accepted_tokens"
    spec_drafted_tokens = "spec_drafted_tokens"
    spec_draft_acceptance_rate_pct = "spec_draft_acceptance_rate_pct"
    spec_per_position_acceptance = "spec_per_position_acceptance"


_RS = RuntimeSeries
ENGINE_STATS_SERIES: tuple[str, ...] = (
    _RS.prompt_throughput_tps, _RS.generation_throughput_tps, _RS.running_reqs, _RS.waiting_reqs,
    _RS.swapped_reqs, _RS.pending_reqs, _RS.gpu_kv_cache_usage_pct, _RS.cpu_kv_cache_usage_pct,
    _RS.prefix_cache_hit_rate_pct,
)
SPEC_DECODE_SERIES: tuple[str, ...] = (
    _RS.spec_mean_acceptance_length, _RS.spec_accepted_tokens, _RS.spec_drafted_tokens,
    _RS.spec_draft_acceptance_rate_pct, _RS.spec_per_position_acceptance,
)
RUNTIME_SERIES = ENGINE_STATS_SERIES + SPEC_DECODE_SERIES
assert set(RUNTIME_SERIES) == set(RuntimeSeries), "every series belongs to one kind"


class RuntimeKind(StrEnum):
    engine_stats = "engine_stats"
    spec_decode = "spec_decode"


RUNTIME_KINDS = tuple(RuntimeKind)
# a sample's figures, in this order (``RuntimeSample.figures``)
RUNTIME_KIND_SERIES: dict[str, tuple[str, ...]] = {
    RuntimeKind.engine_stats: ENGINE_STATS_SERIES, RuntimeKind.spec_decode: SPEC_DECODE_SERIES,
}


def is_snake_case_name(name: str) -> bool:
    """True for names fit to be a fact: lower snake_case starting with a letter."""
    return re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*", name) is not None
