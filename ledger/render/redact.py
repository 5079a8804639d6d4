"""The one redaction of everything meant to be pasted (``note``, ``diff`` in every format,
``show``, ``export``, serve's diff and boot pages; ``--no-redact`` keeps it all).  The ledger
stores the raw evidence; this is applied at output only.

What is left out:

* secrets by their name — the value of a key, option or variable whose name ends in ``api_key``,
  ``token``, ``password``, ``secret``, ``credential`` … in an args dump (``'api_key': ['X']``,
  ``api_key='X'``, ``"hf_token": "X"``), on a command line (``--api-key X``, ``--hf-token=X``),
  in the environment (``HF_TOKEN=X``) or a URL's query (``?token=X&password=Y&auth=Z``), and in a
  report object (the value of such a key, or of a shape row whose ``key`` is one) — as
  ``<secret>``; a flag's ``True``/``False``/``None`` stays;
* a URL's userinfo (``http://user:password@host``) and an ``Authorization:`` header's
  credentials (``Bearer X``, ``Basic X``), as ``<secret>``;
* tokens by their look, whatever they are called (Hugging Face ``hf_``, OpenAI-style ``sk-``,
  GitHub ``ghp_``/``github_pat_``, Slack, AWS keys, bearer tokens, long mixed-case random
  strings), as ``<token>``;
* home folders: ``$HOME`` as ``~``, another ``/home/NAME``, ``/Users/NAME`` or
  ``C:\\Users\\NAME`` as ``<user>``;
* addresses: IPv4 other than the unspecified and loopback ones (private 10/8, 172.16/12,
  192.168/16 and the rest), IPv6 unique-local (fc00::/7, fd00::/8 among them) and link-local
  (fe80::/10) ones, as ``<ip>``; and this machine's host name, as ``<host>``.

Hex digests (commits, image digests), model names, versions and figures are evidence and stay.
"""

from __future__ import annotations

import os
import re
from typing import Any

SECRET = "<secret>"

# a name that holds a secret: it ends in one of these words (``hf_token``, ``VLLM_API_KEY``,
# ``api-key``, ``allow_credentials``); ``tokenizer``, ``max_num_batched_tokens`` and
# ``bytes_per_token`` do not
_SECRET_ENDS = tuple(w.replace("_", sep) for w in ("api_key", "api_keys", "apikey", "access_key", "secret_key",
                                                    "private_key", "token", "password", "passwd", "passphrase",
                                                    "secret", "credential", "credentials") for sep in "_-")
_NOT_SECRET_ENDS = ("per_token", "per-token")
# a value as an args dump, a command line or a query string writes it
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_LIST = r"\[[^\]]*\]"
_BARE = r"[^\s,;&#)}\]'\"]+"
_VALUE = rf"(?P<v>{_QUOTED}|{_LIST}|{_BARE})"
# each rule finds a name and its value; the name is then asked whether it holds a secret (one
# pass over the line, each word looked at once)
_WORD = r"(?P<n>[A-Za-z0-9_.\-]+)"
# 'api_key': X / "api_key": X (a dict or JSON dump)
_IN_DICT = re.compile(rf"(?P<k>(?P<q>['\"]){_WORD}(?P=q)\s*:\s*){_VALUE}")
# api_key=X (Namespace dumps, the environment, a query string)
_ASSIGNED = re.compile(rf"(?P<k>(?<![A-Za-z0-9_.\-]){_WORD}\s*=\s*){_VALUE}")
# --api-key X / --api-key=X (a command line); a value never starts with '-'
_FLAG = re.compile(rf"(?P<k>(?<![\w\-])--{_WORD}(?:=|\s+))(?P<v>{_QUOTED}|(?!-){_BARE})")
# query parameters that carry a secret under a short name (?auth=, ?key=, ?sig=)
_QUERY = re.compile(r"(?P<k>[?&;](?i:auth|key|sig|signature|x-amz-signature|x-amz-credential|code)=)(?P<v>[^&#\s'\"]*)")
_HEADER = re.compile(r"(?P<k>(?i:\b(?:proxy-)?authorization|\bx-api-key)\s*[:=]\s*(?:(?i:bearer|basic|token|digest)\s+)?)"
                     r"(?P<v>[^\s,;'\"\]]+)")
_USERINFO = re.compile(r"(?P<k>(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://)(?P<v>[^\s/@'\"<>\[\]]+)@")
# a report's row of one name (``{"key": "api_key", "a": …, "b": …}``): the fields its values are in
_ROW_VALUES = {"a", "b", "value", "values"}
_KEPT_VALUES = {"true", "false", "none", "null", "", "''", '""', "[]", "***", "'***'", '"***"'}

TOKENS = re.compile(
    r"\bhf_[A-Za-z0-9]{20,}|\bsk-[A-Za-z0-9_\-]{16,}|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}|\bAKIA[0-9A-Z]{16}\b"
    # a long random-looking word: upper and lower case letters and digits, 32 characters or more
    r"|\b(?=[A-Za-z0-9_\-]*[A-Z])(?=[A-Za-z0-9_\-]*[a-z])(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{32,}\b")
# the words TOKENS may find something in (the shortest token it knows is 15 characters): TOKENS
# runs on these alone
_LONG_WORDS = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{15,}")
_BEARER = re.compile(r"(?i:bearer)\s+[A-Za-z0-9._\-~+/]{16,}=*")
HOMES = re.compile(r"(?<![\w.])(/home|/Users)/[^/\s'\"]+|(?<![\w])([A-Za-z]:\\Users)\\[^\\\s'\"]+")
IPV4 = re.compile(r"(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d.])")
# IPv6 unique-local (fc00::/7) and link-local (fe80::/10), with a zone (%eth0) if any
IPV6 = re.compile(r"(?i)(?<![\w:.])(?:f[cd][0-9a-f]{2}|fe[89ab][0-9a-f]):[0-9a-f:]*[0-9a-f](?:%[\w.\-]+)?(?![\w:])")
KEPT_IPS = {"0.0.0.0", "127.0.0.1"}


def _hidden(m: re.Match[str]) -> str:
    """A secret value as it was written, its content ``<secret>``: quoted stays quoted, a list
    is one item (how many there were is the secret's too).  A rule that names the value
    (``n``) hides it only under a secret's name."""
    v = m.group("v")
    if "n" in m.re.groupindex and not is_secret_name(m.group("n")):
        # not a secret's name: what its value holds may be one
        return m.group("k") + (m.re.sub(_hidden, v) if "=" in v or ":" in v else v)
    if v.lower() in _KEPT_VALUES:
        return m.group(0)
    if v[0] in "'\"":
        return f"{m.group('k')}{v[0]}{SECRET}{v[0]}"
    if v[0] == "[":
        inner = v[1:-1].strip()
        q = inner[0] if inner[:1] in ("'", '"') else ""
        return f"{m.group('k')}[{q}{SECRET}{q}]"
    return f"{m.group('k')}{SECRET}"


def _ip(m: re.Match[str]) -> str:
    octets = [int(g) for g in m.groups()]
    if max(octets) > 255 or m.group(0) in KEPT_IPS or octets[0] == 127:
        return m.group(0)
    return "<ip>"


def _ipv6(m: re.Match[str]) -> str:
    return "<ip>" if m.group(0).count(":") >= 2 else m.group(0)


def secrets_hidden(s: str) -> str:
    """``s`` with its secrets left out — values under a secret's name, URL userinfo,
    ``Authorization:`` credentials, token-like strings — and nothing else: for a message about
    the user's own URL or command (a webhook that failed), which keeps its host and path."""
    # each rule runs where the text holds what it needs (a log line holds none of most)
    if ":" in s:
        s = _IN_DICT.sub(_hidden, s)
    if "=" in s:
        s = _ASSIGNED.sub(_hidden, s)
        s = _QUERY.sub(_hidden, s)
    if "--" in s:
        s = _FLAG.sub(_hidden, s)
    lower = s.lower()
    if "authorization" in lower or "api-key" in lower:
        s = _HEADER.sub(_hidden, s)
    if "://" in s:
        s = _USERINFO.sub(lambda m: f"{m.group('k')}{SECRET}@", s)
    s = _LONG_WORDS.sub(lambda m: TOKENS.sub("<token>", m.group(0)), s)
    if "bearer" in lower:
        s = _BEARER.sub("<token>", s)
    return s


def redactor(redact: bool = True) -> Any:
    """What an output meant to be pasted is passed through: a ``Redactor``, or (``--no-redact``)
    the object itself."""
    return Redactor() if redact else (lambda obj: obj)


def is_secret_name(name: str) -> bool:
    """Whether a key, option or variable called ``name`` holds a secret (``api_key``, ``hf_token``)."""
    name = name.lower()
    return name.endswith(_SECRET_ENDS) and not name.endswith(_NOT_SECRET_ENDS)


class Redactor:
    """``text(s)`` redacts a string, ``redactor(obj)`` every string of a report's JSON-shaped
    object (and every value under a secret's name)."""

    def __init__(self, home: str | None = None, hosts: list[str] | None = None):
        home = home if home is not None else os.path.expanduser("~")
        home = home.rstrip("/") if home and home not in ("/", "~") else None
        self.home = re.compile(re.escape(home) + r"(?=/|\b|$)") if home else None
        if hosts is None:
            # gethostname(2) is uname's node name (glibc, macOS): no import of socket where it is
            if hasattr(os, "uname"):
                name = os.uname().nodename
            else:
                import socket

                name = socket.gethostname()
            hosts = [name, name.split(".")[0]]
        names = sorted({h for h in hosts if len(h) >= 3 and h != "localhost"}, key=len, reverse=True)
        self._done: dict[str, str] = {}
        self.hosts = re.compile("|".join(r"(?<![\w-])" + re.escape(h) + r"(?![\w-])" for h in names)) if names \
            else None

    def text(self, s: str) -> str:
        """``s`` redacted (the same line is often the evidence of several facts: each is worked
        out once)."""
        done = self._done.get(s)
        if done is None:
            if len(self._done) >= 4096:
                self._done.clear()
            done = self._done[s] = self._text(s)
        return done

    def _text(self, s: str) -> str:
        s = secrets_hidden(s)
        if self.home is not None:
            s = self.home.sub("~", s)
        if "home/" in s or "Users" in s:
            s = HOMES.sub(lambda m: f"{m.group(1)}/<user>" if m.group(1) else f"{m.group(2)}\\<user>", s)
        s = IPV4.sub(_ip, s)
        if ":" in s:
            s = IPV6.sub(_ipv6, s)
        if self.hosts is not None:
            s = self.hosts.sub("<host>", s)
        return s

    def __call__(self, obj: Any, secret: bool = False) -> Any:
        """``obj`` (a report's JSON-shaped object) with every string redacted; under a secret's
        name (a key such as ``api_key``, or a row whose ``key`` or ``name`` is one) every value
        but a flag's ``True``/``False``/``None`` is ``<secret>``."""
        if isinstance(obj, str):
            return SECRET if secret and obj.strip() else self.text(obj)
        if isinstance(obj, dict):
            row = any(isinstance(obj.get(k), str) and is_secret_name(obj[k]) for k in ("key", "name"))
            return {k: self(v, secret or (row and k in _ROW_VALUES) or (isinstance(k, str) and is_secret_name(k)))
                    for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self(v, secret) for v in obj]
        if secret and isinstance(obj, (int, float)) and not isinstance(obj, bool):
            return SECRET
        return obj
