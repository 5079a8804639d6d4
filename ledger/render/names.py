"""Names shortened for people without losing what identifies them: a vLLM version to its
release (``0.20.2rc1.dev9+g01d4d1ad3`` → ``0.20.2rc1``; the full string stays in JSON, csv
and a page's title text)."""

from __future__ import annotations

import re

# PEP 440 as vLLM versions itself (vllm/version.py via setuptools-scm): the release with a
# pre-release or post tag, then a .devN and the +local part (the commit), as in
# 0.20.2rc1.dev9+g01d4d1ad3 or 0.11.1rc6.dev115+gbc926c122
_VERSION = re.compile(r"^v?(\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc)\d+)?(?:\.post\d+)?)"
                      r"(?:\.dev\d+)?(?:\+[0-9A-Za-z.]+)?$")


def release(version: str | None) -> str | None:
    """The release a version string names, or the string itself when it is no version."""
    if not version:
        return version
    found = _VERSION.match(version)
    return found.group(1) if found else version
