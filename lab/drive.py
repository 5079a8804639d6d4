"""Requests to a lab server, with the standard library only (the lab is not the probe: it only
needs traffic, of a known size, to make vLLM print what serving prints).

Every request has a deadline; a load is a bounded number of requests over a bounded number of
threads, and its failures are counted, not raised (a load during which the engine dies is what
some scenarios are for).
"""

from __future__ import annotations

import json
import random
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .model import WORDS


def prompt(words: int, seed: int = 0) -> str:
    """A prompt of ``words`` tokens of the lab's word-level tokenizer (one word, one token)."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS[4:]) for _ in range(words))


def complete(url: str, text: str, max_tokens: int, timeout: float = 120, ignore_eos: bool = True) -> dict:
    """One ``/v1/completions`` request; the server's JSON reply."""
    body = json.dumps({"model": "tiny", "prompt": text, "max_tokens": max_tokens, "temperature": 0,
                       "ignore_eos": ignore_eos}).encode()
    req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return dict(json.load(r))


@dataclass
class Load:
    """What a load did: requests answered, and those that failed (with one reason)."""

    ok: int = 0
    failed: int = 0
    reason: str | None = None


def load(url: str, requests: int, concurrency: int, prompt_words: int, max_tokens: int,
         timeout: float = 300) -> Load:
    """``requests`` completions, ``concurrency`` at a time, each ``prompt_words`` + ``max_tokens``."""
    result = Load()

    def one(i: int) -> None:
        try:
            complete(url, prompt(prompt_words, seed=i), max_tokens, timeout=timeout)
            result.ok += 1
        except (OSError, urllib.error.URLError, ValueError) as e:
            result.failed += 1
            result.reason = result.reason or f"{type(e).__name__}: {e}"

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, range(requests)))
    return result


def metrics(url: str, timeout: float = 10) -> str:
    """The server's ``/metrics`` page (Prometheus text)."""
    with urllib.request.urlopen(url + "/metrics", timeout=timeout) as r:
        return str(r.read().decode("utf-8", errors="replace"))
