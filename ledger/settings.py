"""What a deploy's settings are (``ledger deploy set``): their names and kinds, and their stored
text read back as the numbers they are.  One place, for the writes (``ledger.deploys``) and the
reads (``ledger.queries``, the web view's JSON)."""

from __future__ import annotations

import re

SETTINGS = {
    "card_ceiling_bytes": "bytes",  # weights + KV pool must fit under it (per GPU)
    "host_cap_bytes": "bytes",  # pinned host memory must fit under it
    "kv_reference_boot": "boot",  # predict this deploy's KV tokens from that boot's cost per token
    "model": "text",  # the model a deploy boots, for logs that print none (the formula's geometry)
    # the formula's shape, for logs that print none: what the log prints always comes first
    "tensor_parallel_size": "count",
    "speculative_method": "method",  # the drafter (dflash, mtp, eagle3 …; ngram and none have no KV layers)
}
# the settings the formula reads: changing one predicts the deploy's boots again
FORMULA_SETTINGS = ("model", "tensor_parallel_size", "speculative_method")


def typed_settings(stored: dict[str, str]) -> dict[str, int | str]:
    """Settings as the numbers they are (the table keeps text: a setting of a newer ledger that
    this one does not know stays as stored)."""
    return {k: int(v) if SETTINGS.get(k) in ("bytes", "boot", "count") and _WHOLE.fullmatch(v.strip()) else v
            for k, v in sorted(stored.items())}


_WHOLE = re.compile(r"-?[0-9]{1,18}")  # a number int() reads (not "²", not 5,000 digits)
