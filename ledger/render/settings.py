"""A deploy's settings in words: byte figures the way vLLM prints memory (GiB/MiB, with the
exact bytes beside them, since a ceiling is typed to the byte), a reference boot by its id."""

from __future__ import annotations

from typing import Any

BYTES_SETTINGS = ("card_ceiling_bytes", "host_cap_bytes")


def setting_text(key: str, value: Any) -> str:
    """``card_ceiling_bytes=28.44 GiB (30,534,533,120)``; ``kv_reference_boot=12``."""
    if key in BYTES_SETTINGS and isinstance(value, int):
        from ledger.parsers.units import format_bytes

        return f"{key}={format_bytes(value)} ({value:,})"
    return f"{key}={value}"


def settings_text(settings: dict[str, Any], empty: str = "") -> str:
    return ", ".join(setting_text(k, v) for k, v in sorted(settings.items())) or empty
