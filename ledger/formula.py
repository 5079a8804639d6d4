"""The formula from the model itself: a boot's KV tokens predicted from its model's geometry.

Pure (no database, no network): where a model's ``config.json`` is found on this machine (the
local Hugging Face cache, read-only, or the model path the log printed), the figures of it the
prediction needs (``model_figures``), and the prediction for one boot's printed budget and shape
(``predict``) through ``ledger.allocator`` — blocks, tokens and concurrency as the engine
release prints them.  ``ledger.db.formula`` stores them in the boot's transaction; the
``kv_formula`` view (migration 0009) sets them against the measured tokens.

What ``allocator.py`` does not model is ``unsupported`` with the reason (sliding-window layers,
mamba states other than Qwen3-Next's gated delta net, sparse-attention indexers, encoder-decoder
cross attention, a speculative drafter's own KV layers); a missing input is ``insufficient``,
never a default dressed up as a figure — the defaults vLLM itself takes (TP 1, block size 16,
KV dtype ``auto``) are taken and named in ``assumed``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .allocator import LATEST, AllocatorError, Geometry, allocate, dtype_bytes, release

CONFIG_MAX_BYTES = 4 * 2**20  # a model's config.json is a few KiB; a log cannot make the ingest read more
TOLERANCE = 0.001  # the mission's 0.1 %: an exact budget through the exact allocator

# the release whose arithmetic stands for "a V1 release before 0.20.1" and "0.20.1 or later"
# when the log does not print its version (``predict`` takes both and widens the tolerance)
_V1_BEFORE, _V1_AFTER = "0.11.0", LATEST


class ConfigError(ValueError):
    """A file that is not a readable model config.json."""


# -- where a config.json is ---------------------------------------------------------------------


def hub_cache(env: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    vars_: Mapping[str, str] = os.environ if env is None else env
    if vars_.get("HF_HUB_CACHE"):
        return Path(vars_["HF_HUB_CACHE"]).expanduser()
    if vars_.get("HF_HOME"):
        return Path(vars_["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


_HUB_PATH = re.compile(r"models--(?P<org>[^/]+?)--(?P<name>[^/]+)(?:/snapshots/[^/]+)?/?$")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def repo_id_of_path(path: str) -> str | None:
    """``…/models--ORG--NAME/snapshots/HASH`` -> ``ORG/NAME`` (a model path inside a hub cache)."""
    m = _HUB_PATH.search(path.rstrip("/"))
    return f"{m.group('org')}/{m.group('name')}" if m else None


def is_local_path(model: str) -> bool:
    return model.startswith(("/", "~", "./", "../")) or bool(re.match(r"^[A-Za-z]:[\\/]", model))


def names_for(model: str) -> list[str]:
    """The names a printed model may be recorded under: as printed (without a trailing slash),
    and ``ORG/NAME`` for a path inside a hub cache."""
    names = [model.rstrip("/") or model]
    repo = repo_id_of_path(model)
    if repo and repo not in names:
        names.append(repo)
    return names


def find_config(model: str, env: Mapping[str, str] | None = None) -> tuple[Path | None, list[str]]:
    """``_find_config``, where a name no file system takes (a NUL byte, too long) is not found."""
    try:
        return _find_config(model, env)
    except (OSError, ValueError):
        return None, []


def _find_config(model: str, env: Mapping[str, str] | None = None) -> tuple[Path | None, list[str]]:
    """The config.json for a printed model name on this machine, read-only: in the model path
    itself when it is a local path (a folder holding config.json), else in the hub cache
    (``models--ORG--NAME/snapshots/*/config.json``: the snapshot ``refs/main`` names, else the
    newest).  Also the places looked in, for the reason when nothing is found."""
    looked: list[str] = []
    if is_local_path(model):
        folder = Path(model).expanduser()
        looked.append(str(folder / "config.json"))
        if (folder / "config.json").is_file():
            return folder / "config.json", looked
    repo = model if _REPO_ID.match(model) else repo_id_of_path(model)
    if repo is None:
        return None, looked
    org, name = repo.split("/", 1)
    root = hub_cache(env) / f"models--{org}--{name}"
    looked.append(str(root / "snapshots" / "*" / "config.json"))
    snapshots = root / "snapshots"
    if not snapshots.is_dir():
        return None, looked
    main = root / "refs" / "main"
    if main.is_file():
        pinned = snapshots / main.read_text(errors="replace").strip() / "config.json"
        if pinned.is_file():
            return pinned, looked
    found = [p for p in snapshots.glob("*/config.json") if p.is_file()]
    if not found:
        return None, looked
    return max(found, key=lambda p: (p.stat().st_mtime, str(p))), looked


def read_config(path: str | Path) -> tuple[dict[str, Any], str]:
    """A config.json (or a folder holding one) as a dict, and its sha256."""
    p = Path(path).expanduser()
    try:
        if p.is_dir():
            p = p / "config.json"
        if p.exists() and not p.is_file():
            raise ConfigError(f"{p}: not a regular file")
        if p.exists() and p.stat().st_size > CONFIG_MAX_BYTES:
            raise ConfigError(f"{p}: over {CONFIG_MAX_BYTES // 2**20} MiB: not a model config.json")
        raw = p.read_bytes()
    except ConfigError:
        raise
    except FileNotFoundError:
        raise ConfigError(f"{path}: no config.json there") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{p}: not a JSON config ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: not a config.json (no JSON object)")
    return data, hashlib.sha256(raw).hexdigest()


# -- what of a config the prediction needs -------------------------------------------------------


_MAMBA_KEYS = ("mamba_d_state", "ssm_state_size", "mamba_expand", "mamba_n_heads", "hybrid_override_pattern",
               "attn_layer_period", "layers_block_type", "mamba_d_conv")
_GDN_KEYS = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
             "linear_conv_kernel_dim")


# the largest figure of a geometry taken: no model comes near (hundreds of layers, a few hundred
# heads, head sizes in the hundreds); past it a config is refused, as NaN, Infinity, text, a
# boolean or a fraction are (issue 38: they raised through the ingest, or were taken as figures)
GEOMETRY_MAX = 2**20


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _whole(cfg: dict[str, Any], key: str, least: int = 1) -> int:
    """``cfg[key]`` as a whole number from ``least`` to ``GEOMETRY_MAX`` (a JSON integer, or a
    number with nothing after the point); else a ConfigError that names the key and the value."""
    if key not in cfg or cfg[key] is None:
        raise ConfigError(f"config.json has no {key}")
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or (isinstance(value, float) and not (math.isfinite(value) and value.is_integer())):
        raise ConfigError(f"config.json has {key} = {_shown(value)}: not a whole number")
    if not least <= value <= GEOMETRY_MAX:
        raise ConfigError(f"config.json has {key} = {_shown(value)}: not from {least} to {GEOMETRY_MAX:,}")
    return int(value)


def _optional(cfg: dict[str, Any], key: str, least: int = 1) -> int | None:
    """``_whole`` of a key a config may leave out (absent or null: None)."""
    return None if cfg.get(key) is None else _whole(cfg, key, least)


def _name(cfg: dict[str, Any], key: str) -> str | None:
    """A text figure (a dtype, a model type): a string, or absent; else a ConfigError."""
    value = cfg.get(key)
    if value is None or isinstance(value, str) and 0 < len(value) <= 200:
        return value
    raise ConfigError(f"config.json has {key} = {_shown(value)}: not a name")


def model_figures(data: dict[str, Any]) -> dict[str, Any]:
    """The figures of a config.json the prediction reads (``text_config`` for a multimodal
    model), with ``layout`` (``uniform``, ``mla``, ``hybrid-gdn``) or ``unsupported`` (why
    ``allocator.py`` cannot model it).  A config without layers or heads, or with a figure that
    is no whole number in range, is refused (a ConfigError naming the key)."""
    text_config = data.get("text_config")
    cfg: dict[str, Any] = text_config if isinstance(text_config, dict) else data
    archs = data.get("architectures")
    # a name only (what is stored and shown, not a figure): anything else is left out
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) and len(archs[0]) <= 200 else None
    kind = [t for t in (data.get("model_type"), cfg.get("model_type")) if isinstance(t, str) and len(t) <= 200]
    out: dict[str, Any] = {"architecture": arch or (kind[0] if kind else None)}
    layers = _whole(cfg, "num_hidden_layers")
    heads = _whole(cfg, "num_attention_heads")
    dtype = None
    for where, key in ((cfg, "torch_dtype"), (data, "torch_dtype"), (cfg, "dtype"), (data, "dtype")):
        dtype = dtype or _name(where, key)
    out.update(layers=layers, model_dtype=dtype or "bfloat16")
    layer_types = cfg.get("layer_types")
    if layer_types is not None and not (isinstance(layer_types, list) and all(isinstance(k, str) for k in layer_types)):
        raise ConfigError(f"config.json has layer_types = {_shown(layer_types)}: not a list of names")
    kinds: list[str] = layer_types or []
    unsupported = None
    if data.get("is_encoder_decoder") or cfg.get("is_encoder_decoder"):
        unsupported = "an encoder-decoder model (cross-attention KV) is not modelled by allocator.py"
    elif cfg.get("index_topk") or cfg.get("index_n_heads"):
        unsupported = "a sparse-attention indexer cache (DeepSeek V3.2/V4 style) is not modelled by allocator.py"
    elif any("sliding" in k for k in kinds) or (cfg.get("sliding_window") and cfg.get("use_sliding_window") is not False):
        unsupported = ("sliding-window layers (counted at their window by the hybrid KV manager) are not modelled "
                       "by allocator.py")
    elif any(k in cfg for k in _MAMBA_KEYS) or any("mamba" in k for k in kinds):
        unsupported = ("this architecture's mamba state shape is not modelled by allocator.py (only Qwen3-Next's "
                       "gated delta net is)")
    if unsupported:
        out.update(layout="unsupported", unsupported=unsupported)
        return out
    if cfg.get("kv_lora_rank") not in (None, 0):  # DeepSeek-style MLA: one latent head, no separate V
        out.update(layout="mla", attn_layers=layers, num_kv_heads=1,
                   head_size=_whole(cfg, "kv_lora_rank") + (_optional(cfg, "qk_rope_head_dim", 0) or 0))
        return out
    kv_heads = _optional(cfg, "num_key_value_heads") or heads
    if kv_heads > heads:
        raise ConfigError(f"config.json has num_key_value_heads = {kv_heads}: more than its "
                          f"num_attention_heads ({heads})")
    head = _optional(cfg, "head_dim")
    if head is None:
        hidden = _whole(cfg, "hidden_size")
        if hidden < heads:
            raise ConfigError(f"config.json has hidden_size = {hidden}: below its num_attention_heads ({heads}), "
                              "no head size")
        head = hidden // heads
    out.update(num_kv_heads=kv_heads, head_size=head)
    linear = [k for k in kinds if "linear" in k]
    if linear:
        missing = [k for k in _GDN_KEYS if cfg.get(k) is None]
        if missing:
            out.update(layout="unsupported", unsupported=f"linear-attention layers without {', '.join(missing)}: "
                       "their state page is not known")
            return out
        out.update(layout="hybrid-gdn", attn_layers=len(kinds) - len(linear), mamba_layers=len(linear),
                   **{k: _whole(cfg, k) for k in _GDN_KEYS})
        return out
    out.update(layout="uniform", attn_layers=layers)
    return out


def gdn_page_bytes(figures: dict[str, Any], tp: int, dtype_bytes: float) -> int:
    """One gated-delta-net layer's state page on one rank, as vLLM sizes it
    (``MambaStateShapeCalculator.gated_delta_net_state_shape``): conv state
    ``(conv_dim // tp) × (kernel - 1)`` with ``conv_dim = 2·k_heads·k_dim + v_heads·v_dim``, and
    temporal state ``(v_heads // tp) × k_dim × v_dim``, both in the model dtype."""
    k_heads, v_heads = figures["linear_num_key_heads"], figures["linear_num_value_heads"]
    k_dim, v_dim = figures["linear_key_head_dim"], figures["linear_value_head_dim"]
    conv_dim = 2 * k_heads * k_dim + v_heads * v_dim
    conv = conv_dim // tp * (figures["linear_conv_kernel_dim"] - 1)
    temporal = v_heads // tp * k_dim * v_dim
    return int((conv + temporal) * dtype_bytes)


# -- one boot's prediction -----------------------------------------------------------------------


@dataclass
class BootInputs:
    """What a boot printed that the prediction takes (None: not printed)."""

    model: str | None = None
    engine_version: str | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    decode_context_parallel_size: int | None = None
    block_size: int | None = None
    device: str | None = None  # the engine config's device_config ("cpu", "cuda", …), if printed
    max_model_len: int | None = None
    budget_bytes: float | None = None
    budget_source: str | None = None
    budget_precision_bytes: float | None = None
    num_gpu_blocks_override: int | None = None
    speculative: str | None = None  # the printed speculative config, if any
    v1_tokens_printed: bool = False  # "GPU KV cache size: N tokens" (V1 only)
    args_printed: bool = False  # an args dump or the engine config line: an unprinted knob is vLLM's default
    budget_processes: list[tuple[str | None, int | None]] = field(default_factory=list)  # who printed the budget
    # what the deploy's settings state (``ledger deploy set``), for what the log leaves unknown
    stated_tensor_parallel_size: int | None = None
    stated_speculative_method: str | None = None
    spec_decode_samples: int = 0  # "SpecDecoding metrics" lines read: the boot speculates


@dataclass
class Prediction:
    """A row of ``kv_formula_prediction`` but its boot id."""

    status: str  # predicted | insufficient | unsupported
    reason: str | None = None
    model: str | None = None
    geometry: str | None = None  # the model_geometry name used
    budget_bytes: float | None = None
    budget_source: str | None = None
    budget_precision_bytes: float | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    block_size: int | None = None
    kv_cache_dtype: str | None = None
    max_model_len: int | None = None
    engine_version: str | None = None
    v0: bool | None = None
    predicted_blocks: int | None = None
    predicted_tokens: int | None = None
    predicted_tokens_low: int | None = None
    predicted_tokens_high: int | None = None
    predicted_concurrency: float | None = None
    assumed: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["assumed"] = "; ".join(self.assumed) or None
        return d


def _speculative_drafter(spec: str | None) -> str | None:
    """The drafter a printed speculative config names, unless it is one with no KV layers (ngram)."""
    if not spec or spec.strip() in ("None", "null", "{}"):
        return None
    m = re.search(r"method['\"]?\s*[=:]\s*['\"]?([\w-]+)", spec)
    method = m.group(1) if m else "a draft model"
    # "none": a deploy's speculative_method setting that says the boots run without speculation
    return None if method in ("ngram", "suffix", "none") else method


def _tensor_parallel(inputs: BootInputs) -> tuple[int | None, str | None]:
    """The TP size: printed; else one when the engine core itself printed the worker's budget
    line (a single process, no workers); else vLLM's default 1 when the args were printed (a
    non-default args dump leaves it out); else the deploy's ``tensor_parallel_size`` setting
    (what the log leaves unknown); else not known (a reason instead)."""
    if inputs.tensor_parallel_size:
        return inputs.tensor_parallel_size, None
    stated = inputs.stated_tensor_parallel_size
    taken = f"tensor_parallel_size not printed: the deploy's setting ({stated})"
    ignored = f"; the deploy's tensor_parallel_size setting ({stated}) not taken" if stated and stated != 1 else ""
    procs = inputs.budget_processes
    workers = [p for p, rank in procs if rank is not None or (p and "Worker" in p)]
    if procs and not workers and all(p and p.startswith("EngineCore") for p, _ in procs):
        return 1, "tensor_parallel_size 1: the engine core process itself printed the KV budget (no workers)" + ignored
    if workers:
        if stated:
            return stated, taken
        return None, ("the log prints no tensor_parallel_size, and workers printed the KV budget (TP > 1; "
                      "ledger deploy set D tensor_parallel_size=N states it)")
    if inputs.args_printed:
        return 1, "tensor_parallel_size not among the printed args: vLLM's default 1" + ignored
    if stated:
        return stated, taken
    return None, "the log prints no tensor_parallel_size (no args dump or engine config line)"


def predict(inputs: BootInputs, geometry_name: str | None, figures: dict[str, Any] | None) -> Prediction:
    """The prediction for one boot: ``insufficient`` without a model, geometry, budget,
    max_model_len or a known engine (V0 or V1); ``unsupported`` for what ``allocator.py`` does
    not model; else blocks, tokens (and the range the budget's printed precision allows) and
    concurrency."""
    p = Prediction("insufficient", model=inputs.model, geometry=geometry_name, budget_bytes=inputs.budget_bytes,
                   budget_source=inputs.budget_source, budget_precision_bytes=inputs.budget_precision_bytes,
                   max_model_len=inputs.max_model_len, engine_version=inputs.engine_version)
    if not inputs.model:
        p.reason = "the log prints no model name (ledger deploy set D model=NAME names it)"
        return p
    if figures is None:
        p.reason = f"no geometry for model {inputs.model!r} (ledger model add PATH --as {inputs.model!r})"
        return p
    if figures.get("unsupported"):
        p.status, p.reason = "unsupported", figures["unsupported"]
        return p
    spec = inputs.speculative
    if inputs.stated_speculative_method and not spec and not inputs.args_printed:
        # the log prints no args (a printed args dump or engine config line would name it)
        spec = f"method={inputs.stated_speculative_method}"
        p.assumed.append(f"speculative method not printed: the deploy's setting ({inputs.stated_speculative_method})")
    elif inputs.stated_speculative_method:
        p.assumed.append(f"the deploy's speculative_method setting ({inputs.stated_speculative_method}) not taken: "
                         "the log's args say " + (f"{spec}" if spec else "none"))
    drafter = _speculative_drafter(spec)
    if drafter:
        p.status = "unsupported"
        p.reason = (f"speculative decoding ({drafter}): the drafter's own KV layers are not in the model's "
                    f"config.json, so allocator.py does not see them")
        return p
    if not spec and inputs.spec_decode_samples:
        p.reason = ("the log prints SpecDecoding metrics but not the speculative method: a drafter's KV layers "
                    "(EAGLE, MTP, DFlash …) are not in config.json, ngram has none (ledger deploy set D "
                    "speculative_method=… states it)")
        return p
    if inputs.budget_bytes is None:
        p.reason = "the log prints no KV budget"
        return p
    if not inputs.max_model_len:
        p.reason = "the log prints no max_model_len"
        return p
    tp, why_tp = _tensor_parallel(inputs)
    if tp is None:
        p.reason = why_tp
        return p
    if why_tp:
        p.assumed.append(why_tp)
    pp = inputs.pipeline_parallel_size or 1
    dcp = inputs.decode_context_parallel_size or 1
    kv_dtype = inputs.kv_cache_dtype or "auto"
    if inputs.kv_cache_dtype is None:
        p.assumed.append("kv_cache_dtype " + ("not among the printed args: vLLM's default auto" if inputs.args_printed
                                              else "not printed (no args dump): vLLM's default auto"))
    model_dtype = figures.get("model_dtype") or "bfloat16"
    if inputs.dtype and inputs.dtype not in ("auto", ""):
        model_dtype = inputs.dtype
    p.tensor_parallel_size, p.pipeline_parallel_size, p.kv_cache_dtype = tp, pp, kv_dtype
    if inputs.engine_version:
        try:
            rel = release(inputs.engine_version)
        except AllocatorError:
            p.reason = f"engine version {inputs.engine_version!r} is not a vLLM release"
            return p
        versions = [inputs.engine_version]
        v0 = rel < (0, 8, 0) and not inputs.v1_tokens_printed
    elif inputs.v1_tokens_printed:
        versions, v0 = [_V1_BEFORE, _V1_AFTER], False
        p.assumed.append("engine release not printed: the V1 arithmetic before and after 0.20.1 both taken")
    else:
        p.reason = "the log prints neither the engine release nor a V1 token count: V0 or V1 is not known"
        return p
    p.v0 = v0
    try:
        dtype_bytes(kv_dtype, model_dtype)  # an unknown KV dtype is refused here
        mbytes = dtype_bytes("auto", model_dtype)
        layout = figures.get("layout")
        mamba_page = None
        if layout == "mla":
            geo = Geometry(figures["attn_layers"], 1, figures["head_size"], 0, True, model_dtype=model_dtype)
        elif layout == "hybrid-gdn":
            mamba_page = gdn_page_bytes(figures, tp, mbytes)
            geo = Geometry(figures["attn_layers"], figures["num_kv_heads"], figures["head_size"], None, False,
                           figures["mamba_layers"], mamba_page, model_dtype)
        else:
            geo = Geometry(figures["attn_layers"], figures["num_kv_heads"], figures["head_size"],
                           model_dtype=model_dtype)
        block_size = inputs.block_size
        if block_size is None and (inputs.device or "").strip("'\"").lower() == "cpu" and layout in (None, "uniform"):
            # vllm/platforms/cpu.py: a block size not given is 128 on the CPU backend (16 for MLA)
            block_size = 128
            p.assumed.append("block_size not printed: vLLM's CPU backend default 128 (device_config=cpu)")
        elif block_size is None and layout != "hybrid-gdn":
            p.assumed.append("block_size not printed: vLLM's default 16")
        elif block_size is None:
            p.assumed.append("block_size not printed: the attention page raised to the mamba page, 16-token aligned")
        kw: dict[str, Any] = dict(kv_cache_dtype=kv_dtype, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                  block_size=block_size, v0=v0,
                                  num_gpu_blocks_override=inputs.num_gpu_blocks_override,
                                  decode_context_parallel_size=dcp, mamba_page_bytes=mamba_page)
        budget, prec, L = int(inputs.budget_bytes), int(inputs.budget_precision_bytes or 0), inputs.max_model_len
        mid = allocate(geo, budget, L, engine_version=versions[0], **kw)
        other = allocate(geo, budget, L, engine_version=versions[-1], **kw)
        spread = [allocate(geo, max(0, b), L, engine_version=v, **kw).tokens
                  for v in versions for b in (budget - prec, budget + prec)]
    except AllocatorError as exc:
        p.status, p.reason = "unsupported", str(exc)
        return p
    if abs(other.tokens - mid.tokens) > TOLERANCE * max(mid.tokens, 1):
        p.reason = (f"the log prints no engine release, and for this model the token count vLLM prints before "
                    f"0.20.1 ({mid.tokens:,}) and after ({other.tokens:,}) differ")
        return p
    p.status = "predicted"
    p.block_size = mid.block_size
    p.predicted_blocks, p.predicted_tokens, p.predicted_concurrency = mid.num_blocks, mid.tokens, mid.concurrency
    p.predicted_tokens_low, p.predicted_tokens_high = min(spread + [mid.tokens]), max(spread + [mid.tokens])
    return p
