"""vLLM's KV-cache arithmetic, release by release, as a pure function (no database).

From a model's geometry, the parallel sizes, the block size, the per-GPU budget and
``max_model_len`` it returns the block count, the "GPU KV cache size" tokens and the
"Maximum concurrency" figure exactly as the given engine release prints them
(``docs/vllm-log-lines.md`` §3):

* page per layer = block_size × kv_heads_per_rank × (head_k + head_v) × dtype_bytes
  (MLA: one latent head, no separate V); kv_heads_per_rank = max(1, heads // tp);
* blocks = budget // (layers_on_rank × page) for a uniform model; hybrid models share one pool
  of pages padded to the attention page, in groups of layers;
* tokens: blocks × block_size up to 0.20.0 (hybrid: blocks // groups × block_size from 0.10);
  from 0.20.1 ``int(concurrency × max_model_len)`` — float arithmetic that comes out one token
  low for some lengths, reproduced here with the same float operations;
* concurrency: blocks × block_size / L before 0.10, blocks / blocks-per-request after.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LATEST = "0.33.0"
_DTYPE_BYTES = {
    "float32": 4, "fp32": 4, "float": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1, "int8": 1,
}


class AllocatorError(ValueError):
    """Geometry or options that do not describe a KV cache."""


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def release(version: str) -> tuple[int, int, int]:
    """'0.20.1rc1.dev16+g7a1eb8ac2' -> (0, 20, 1); pre-releases count as their release."""
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", version.strip())
    if not m:
        raise AllocatorError(f"not a vLLM version: {version!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def dtype_bytes(kv_cache_dtype: str, model_dtype: str = "bfloat16") -> float:
    """Bytes per element of the KV cache: --kv-cache-dtype, or the model dtype for 'auto'."""
    name = (model_dtype if kv_cache_dtype in ("auto", "", None) else kv_cache_dtype).lower()
    name = name.removeprefix("torch.")
    if name not in _DTYPE_BYTES:
        raise AllocatorError(f"unknown KV cache dtype {name!r}")
    return _DTYPE_BYTES[name]


@dataclass(frozen=True)
class Geometry:
    attn_layers: int
    num_kv_heads: int
    head_size: int
    head_size_v: int | None = None  # None: same as head_size
    mla: bool = False  # one latent head (kv_lora_rank + rope dim), no V
    mamba_layers: int = 0
    mamba_page_bytes: int = 0  # one mamba layer's state, before padding
    model_dtype: str = "bfloat16"


@dataclass(frozen=True)
class Allocation:
    num_blocks: int
    block_size: int
    bytes_per_block: int  # what one block costs across this rank's layers
    tokens: int  # as "GPU KV cache size: N tokens" prints it
    concurrency: float  # as "Maximum concurrency ...: X.XXx" computes it (print with :.2f)
    attn_groups: int = 1
    mamba_groups: int = 0


def from_hf_config(config: dict[str, Any] | str | Path) -> Geometry:
    """Geometry from a Hugging Face config.json (text_config for multimodal models)."""
    if isinstance(config, dict):
        data = config
    else:
        try:
            data = json.loads(Path(config).read_text())
        except FileNotFoundError:
            raise AllocatorError(f"{config}: no such config.json") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise AllocatorError(f"{config}: not a readable config.json ({exc})") from None
        if not isinstance(data, dict):
            raise AllocatorError(f"{config}: not a config.json (no JSON object)")
    cfg = data.get("text_config") or data
    try:
        layers = int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
    except (KeyError, TypeError, ValueError):
        raise AllocatorError("config.json lacks num_hidden_layers / num_attention_heads") from None
    model_dtype = str(cfg.get("torch_dtype") or data.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
    if cfg.get("kv_lora_rank"):  # DeepSeek-style MLA: one latent head, no separate V
        return Geometry(layers, 1, int(cfg["kv_lora_rank"]) + int(cfg.get("qk_rope_head_dim", 0)), 0, True,
                        model_dtype=model_dtype)
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    head = int(cfg.get("head_dim") or cfg["hidden_size"] // heads)
    kinds = cfg.get("layer_types")
    attn, mamba = layers, 0
    if isinstance(kinds, list) and kinds:
        attn = sum(1 for k in kinds if "attention" in k and "linear" not in k)
        mamba = len(kinds) - attn
    return Geometry(attn, kv_heads, head, None, False, mamba, 0, model_dtype)


def allocate(
    geometry: Geometry,
    budget_bytes: int,
    max_model_len: int,
    *,
    kv_cache_dtype: str = "auto",
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    block_size: int | None = None,
    engine_version: str = LATEST,
    v0: bool = False,
    num_gpu_blocks_override: int | None = None,
    decode_context_parallel_size: int = 1,
    spec_blocks: int = 0,
    mamba_page_bytes: int | None = None,
) -> Allocation:
    g = geometry
    if budget_bytes < 0 or max_model_len <= 0:
        raise AllocatorError("the budget must be >= 0 and max_model_len > 0")
    rel = release(engine_version)
    dbytes = dtype_bytes(kv_cache_dtype, g.model_dtype)
    tp, pp, dcp = tensor_parallel_size, pipeline_parallel_size, decode_context_parallel_size
    heads = 1 if g.mla else max(1, g.num_kv_heads // tp)
    head_v = 0 if g.mla else (g.head_size if g.head_size_v is None else g.head_size_v)
    per_token_layer = heads * (g.head_size + head_v) * dbytes  # bytes per token per layer
    attn_layers = cdiv(g.attn_layers, pp)  # the fullest stage has the fewest blocks
    mamba_layers = cdiv(g.mamba_layers, pp) if g.mamba_layers else 0
    mamba_page = mamba_page_bytes if mamba_page_bytes is not None else g.mamba_page_bytes
    hybrid = mamba_layers > 0
    if hybrid and not mamba_page:
        raise AllocatorError("a hybrid (mamba + attention) model needs the mamba page size in bytes")

    if hybrid:
        # attention block raised so its page is >= the mamba page (16-token alignment unless told)
        bs = block_size or 16 * cdiv(mamba_page, int(16 * per_token_layer))
        page = int(bs * per_token_layer)
        if page < mamba_page:
            raise AllocatorError(f"block size {bs} gives an attention page ({page} B) below the mamba page")
        small, big = sorted((attn_layers, mamba_layers))
        group = big if rel >= (0, 20, 0) and big < 1.5 * small else small
        attn_groups, mamba_groups = cdiv(attn_layers, group), cdiv(mamba_layers, group)
        bytes_per_block = page * group
    else:
        bs = block_size or 16
        page = int(bs * per_token_layer)
        attn_groups, mamba_groups = 1, 0
        bytes_per_block = page * attn_layers
    if bytes_per_block <= 0:
        raise AllocatorError("the geometry gives a zero-byte block")
    nb = num_gpu_blocks_override if num_gpu_blocks_override is not None else int(budget_bytes // bytes_per_block)

    L = max_model_len
    L_cp = cdiv(L, dcp) if dcp > 1 else L
    per_request = attn_groups * cdiv(L_cp, bs) + mamba_groups * (1 + spec_blocks)
    if v0 or rel < (0, 10, 0):
        tokens = nb * bs
        conc = nb * bs / L
    else:
        conc = nb / per_request
        if rel >= (0, 20, 1):
            tokens = int(nb / per_request * L)  # float, then int(): one token low at times
        elif hybrid:
            tokens = nb // (attn_groups + mamba_groups) * bs
        else:
            tokens = nb * bs * (dcp if rel >= (0, 11, 0) else 1)
    return Allocation(nb, bs, bytes_per_block, tokens, conc, attn_groups, mamba_groups)


def budget_for_tokens(geometry: Geometry, tokens: int, max_model_len: int, **kw: Any) -> tuple[int, Allocation]:
    """The smallest budget whose allocation reports at least ``tokens`` tokens."""
    one = allocate(geometry, 0, max_model_len, num_gpu_blocks_override=1, **kw)
    per_block = one.bytes_per_block
    blocks = max(0, cdiv(tokens, one.block_size) - 1)
    while True:
        a = allocate(geometry, blocks * per_block, max_model_len, **kw)
        if a.tokens >= tokens:
            return blocks * per_block, a
        blocks += 1
