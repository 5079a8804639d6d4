"""Reading the deploy's shape out of vLLM's dumps, whole or cut short.

* ``non-default args: {...}`` (0.9.0+) is a Python dict repr;
* ``args: Namespace(...)`` (0.2.7-0.8.5) is an argparse Namespace repr;
* ``Initializing ... engine (vX) with config: k=v, k=v, ...`` is ``VllmConfig.__str__``.

Pastes and excerpts cut these lines anywhere, and values can be reprs that are not literals
(enums, config objects).  So the text is split into top-level items by hand, each item is read
with ``ast.literal_eval`` where it can be, kept as text where it cannot, and an item the cut
went through is dropped rather than guessed.
"""

from __future__ import annotations

import ast
from typing import Any

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}


def split_top_level(text: str, sep: str = ", ") -> tuple[list[str], bool]:
    """Split at ``sep`` outside quotes and brackets.

    Returns the items and whether the text ended cleanly (not inside a quote or bracket).
    """
    items: list[str] = []
    depth = 0
    quote: str | None = None
    start = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            items.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    items.append(text[start:])
    return items, (quote is None and depth == 0)


def _value(text: str) -> Any:
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text


def _closed(text: str, close: str) -> tuple[str, bool]:
    """Strip the dump's closing bracket; report whether it was there (else the dump was cut)."""
    body = text.rstrip()
    if body.endswith(close):
        _, clean = split_top_level(body[:-1])
        if clean:
            return body[:-1], True
    return body, False


def parse_dict_repr(text: str) -> tuple[dict[str, Any], bool]:
    """``{'model': 'x', 'tensor_parallel_size': 2, ...}`` -> (items, complete)."""
    text = text.strip()
    if not text.startswith("{"):
        return {}, False
    body, complete = _closed(text[1:], "}")
    items, clean = split_top_level(body)
    if not complete and items:
        items = items[:-1]  # the cut went through the last item
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition(": ")
        if not sep:
            continue
        k = _value(key)
        if isinstance(k, str):
            out[k] = _value(value)
    return out, complete


def parse_keyvalue_repr(text: str, close: str | None = None) -> tuple[dict[str, Any], bool]:
    """``model='x', max_seq_len=4096, ...`` (optionally closed by ``close``) -> (items, complete).

    Without a closing bracket the last item is only kept when it visibly ends (a closed
    bracket value), since a cut can land anywhere inside ``max_seq_len=1000|00``.
    """
    body = text.strip()
    if close:
        body, complete = _closed(body, close)
    else:
        complete = True
    items, clean = split_top_level(body.rstrip(", "))
    if close is None:
        last = items[-1].rstrip() if items else ""
        complete = clean and (last.endswith(("}", ")", "]")) or text.rstrip().endswith(","))
    if not complete and items:
        items = items[:-1]
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            continue
        out[key] = _value(value)
    return out, complete
