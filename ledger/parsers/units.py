"""The one unit converter: printed figures ("9.74 GiB", "1,350,182", "1.06x") to stored numbers.

Memory becomes integer bytes with a precision of half a unit of the last printed digit
(``9.74 GiB`` -> ``round(9.74 * 2**30)`` bytes, precision ``0.005 * 2**30``).  vLLM's and
SGLang's "GB" divide by 2**30, and torch's sizes are binary, so GB/MB/KB are read as GiB/MiB/KiB.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

BYTE_UNITS = {
    "bytes": 1,
    "B": 1,
    "KiB": 2**10,
    "KB": 2**10,
    "MiB": 2**20,
    "MB": 2**20,
    "GiB": 2**30,
    "Gib": 2**30,  # vLLM 0.6.4 prints "memory_usage_post_profile=...Gib"
    "GB": 2**30,
    "TiB": 2**40,
    "TB": 2**40,
}
SECOND_UNITS = {"s": 1.0, "secs": 1.0, "seconds": 1.0, "ms": 0.001}
PLAIN_UNITS = {"%": "%", "x": "x", "tokens": "tokens", "blocks": "blocks", "slots": "slots", "t/s": "t/s"}

#: every unit a grammar pack may name
PACK_UNITS = ("GiB", "MiB", "KiB", "GB", "MB", "bytes", "s", "ms", "%", "x", "tokens", "blocks", "slots", "t/s")

# a digit before the exponent (``e3``, ``.e3``, ``-e3`` are no numbers: float() refuses them, issue
# 38), ASCII digits only (``²`` is a digit to str.isdigit(), not to int(); ``٣`` is one to both,
# and no log prints it)
_NUMBER = re.compile(r"^[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d*))?|\.(\d+))(?:[eE][+-]?\d+)?$", re.ASCII)
SIZE_RE = re.compile(r"(?P<num>\d+(?:\.\d+)?)\s?(?P<unit>bytes|[KMGT]i?B|B)\b")


class UnitError(ValueError):
    """A printed figure that is not a number in a known unit."""


@dataclass(frozen=True)
class Quantity:
    value: float | int
    unit: str  # the stored unit: "bytes", "s", "tokens", "x", "%", ... or "" for a bare number
    precision: float | None  # half a unit of the last printed digit, in the stored unit
    printed: str = ""  # the figure as the log printed it, unit included: "9.74 GiB"


def _decimals(text: str) -> int:
    m = _NUMBER.match(text)
    if not m:
        raise UnitError(f"not a number: {text!r}")
    if "e" in text.lower():
        return 0
    return len(m.group(1) or m.group(2) or "")


# the largest figure stored: 2**53, below which every whole number is exact in the double a
# figure is stored as, so that the views' sums of figures fit the 64-bit integers they are cast
# to (0010; PostgreSQL refuses a cast beyond them for every read of the view). No vLLM figure
# comes near it (8 PiB, 9e15 tokens); a hostile or damaged line can print 400 digits (float()
# of those is inf, int() a bignum no database column holds)
MAX_FIGURE = 2**53


def in_range(num: float | int, text: str = "") -> float | int:
    """``num`` if a database column can hold it: finite and within ``MAX_FIGURE``; else a
    UnitError (the figure is not read)."""
    if isinstance(num, float):
        if not math.isfinite(num) or abs(num) > MAX_FIGURE:
            raise UnitError(f"out of range: {text[:40]!r}")
    elif abs(num) > MAX_FIGURE:
        raise UnitError(f"out of range: {text[:40]!r}")
    return num


def parse_number(text: str) -> float | int:
    """'1,350,182' -> 1350182, '2.5' -> 2.5, '7.3e9' -> 7300000000.0; a figure out of range
    (``in_range``) is a UnitError."""
    if len(text) <= 18 and text.isdigit() and text.isascii():  # the common case, fast (18 digits always fit)
        return int(text)
    if text.count(".") == 1 and len(text) > 1 and text.replace(".", "", 1).isdigit() and text.isascii():
        return in_range(float(text), text)
    t = text.strip()
    if not _NUMBER.match(t):
        raise UnitError(f"not a number: {text[:40]!r}")
    t = t.replace(",", "")
    if re.fullmatch(r"[+-]?[0-9]+", t):
        if len(t) > 25:  # int() of thousands of digits is slow (and Python refuses past 4300)
            raise UnitError(f"out of range: {text[:40]!r}")
        return in_range(int(t), text)
    return in_range(float(t), text)


def half_last_digit(text: str) -> float:
    """Half a unit of the last printed digit: '9.74' -> 0.005, '44928' -> 0.5."""
    return 0.5 * 10.0 ** (-_decimals(text.strip().replace(",", "")))


def quantity(text: str, unit: str | None) -> Quantity:
    """Convert a printed number in ``unit`` to its stored form (bytes, seconds, plain)."""
    num = parse_number(text)
    half = half_last_digit(text)
    printed = text.strip() + ("" if not unit else unit if unit in ("x", "%") else " " + unit)
    if unit is None or unit == "":
        return Quantity(num, "", None if isinstance(num, int) else half, printed)
    if unit in BYTE_UNITS:
        scale = BYTE_UNITS[unit]
        scaled = in_range(float(num) * scale if isinstance(num, float) else num * scale, text)
        return Quantity(int(round(scaled)), "bytes", None if scale == 1 else half * scale, printed)
    if unit in SECOND_UNITS:
        seconds = SECOND_UNITS[unit]
        return Quantity(in_range(float(num) * seconds, text), "s", half * seconds, printed)
    if unit in PLAIN_UNITS:
        if isinstance(num, int):
            return Quantity(num, PLAIN_UNITS[unit], None, printed)
        return Quantity(num, PLAIN_UNITS[unit], half, printed)
    raise UnitError(f"unknown unit {unit!r}")


def size(text: str) -> Quantity:
    """'50.00 MiB' / '9.74GiB' / '1024 bytes' -> bytes with precision."""
    m = SIZE_RE.fullmatch(text.strip())
    if not m:
        raise UnitError(f"not a memory size: {text!r}")
    q = quantity(m.group("num"), m.group("unit"))
    return Quantity(q.value, q.unit, q.precision, text.strip())


_HUMAN = re.compile(r"^\s*([0-9][0-9,]*(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([kKmMgGtT]i?[bB]?)?\s*$")
_HUMAN_SCALE = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


def human_bytes(text: str) -> int:
    """A byte count as people type it: '7.3e9', '6,100,000,000', '7.3G' (10**9), '8GiB' (2**30)."""
    m = _HUMAN.match(text)
    if not m:
        raise UnitError(f"not a byte count: {text!r}")
    num = float(m.group(1).replace(",", ""))
    suffix = m.group(2) or ""
    if suffix:
        letter = suffix[0].lower()
        if "i" in suffix.lower():
            num *= BYTE_UNITS[letter.upper() + "iB"]
        else:
            num *= _HUMAN_SCALE[letter]
    try:
        return int(round(in_range(num, text)))
    except UnitError:
        raise UnitError(f"not a byte count (out of range): {text[:40]!r}") from None


def format_bytes(n: float | int | None) -> str:
    """Bytes for people: 10458152305 -> '9.74 GiB'."""
    if n is None:
        return ""
    n = float(n)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"
