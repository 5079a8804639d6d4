"""What a note leaves out of a commit message by default (``--no-redact`` keeps it): paths
under ``$HOME`` (as ``~``) and other users' home folders, this machine's host name and IPv4
addresses other than the unspecified and loopback ones, and anything that looks like a secret
token (Hugging Face, OpenAI-style, GitHub, Slack, AWS keys, bearer tokens, long mixed-case
random strings).  Hex digests (commits, image digests) are evidence and stay."""

from __future__ import annotations

import os
import re
from typing import Any

TOKENS = re.compile(
    r"\bhf_[A-Za-z0-9]{20,}|\bsk-[A-Za-z0-9_\-]{16,}|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}|\bAKIA[0-9A-Z]{16}\b|(?i:bearer)\s+[A-Za-z0-9._\-~+/]{16,}=*"
    # a long random-looking word: upper and lower case letters and digits, 32 characters or more
    r"|\b(?=[A-Za-z0-9_\-]*[A-Z])(?=[A-Za-z0-9_\-]*[a-z])(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{32,}\b")
HOMES = re.compile(r"(?<![\w.])(/home|/Users)/[^/\s'\"]+")
IPV4 = re.compile(r"(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d.])")
KEPT_IPS = {"0.0.0.0", "127.0.0.1"}


class Redactor:
    def __init__(self, home: str | None = None, hosts: list[str] | None = None):
        home = home if home is not None else os.path.expanduser("~")
        self.home = home.rstrip("/") if home and home not in ("/", "~") else None
        if hosts is None:
            # gethostname(2) is uname's node name (glibc, macOS): no import of socket where it is
            if hasattr(os, "uname"):
                name = os.uname().nodename
            else:
                import socket

                name = socket.gethostname()
            hosts = [name, name.split(".")[0]]
        self.hosts = sorted({h for h in hosts if len(h) >= 3 and h != "localhost"}, key=len, reverse=True)

    def text(self, s: str) -> str:
        s = TOKENS.sub("<token>", s)
        if self.home:
            s = re.sub(re.escape(self.home) + r"(?=/|\b|$)", "~", s)
        s = HOMES.sub(lambda m: f"{m.group(1)}/<user>", s)
        s = IPV4.sub(lambda m: m.group(0) if m.group(0) in KEPT_IPS or m.group(1) == "127" else "<ip>", s)
        for h in self.hosts:
            s = re.sub(r"(?<![\w-])" + re.escape(h) + r"(?![\w-])", "<host>", s)
        return s

    def __call__(self, obj: Any) -> Any:
        """``obj`` (a report's JSON-shaped object) with every string redacted."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self(v) for v in obj]
        return obj
