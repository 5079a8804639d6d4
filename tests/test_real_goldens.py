"""Every real fixture parses to its golden expectations: every figure, failure and shape key
the file prints, with value and line number, and nothing the file does not print."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from conftest import REAL
from golden import load, observed

LOGS = sorted(REAL.glob("*.log"))
SCALE = {"GiB": 2**30, "GB": 2**30, "MiB": 2**20, "MB": 2**20, "KiB": 2**10, "bytes": 1}


def test_every_real_fixture_has_a_golden():
    assert len(LOGS) == 107
    missing = [p.name for p in LOGS if not p.with_name(p.stem + ".golden.json").exists()]
    assert missing == []


@functools.cache
def _case(log: Path) -> tuple[Path, dict, dict, list[str]]:
    return log, load(log), observed(log), log.read_text(encoding="utf-8", errors="replace").splitlines()


@pytest.fixture(params=LOGS, ids=lambda p: p.name[:3])
def case(request):
    """The log, its golden, what the parser reads of it and its lines: read once per process,
    not once for each of the eight tests that compare them (the tests only read the case)."""
    return _case(request.param)


def test_boot_regions_and_outcomes(case):
    _, golden, got, _ = case
    assert [(b["lines"], b["outcome"]) for b in got["boots"]] == [(b["lines"], b["outcome"]) for b in golden["boots"]]


def test_engine_identity(case):
    _, golden, got, _ = case
    assert [(b["engine"], b["image_digests"], b["started"]) for b in got["boots"]] == \
           [(b["engine"], b["image_digests"], b["started"]) for b in golden["boots"]]


def test_facts(case):
    _, golden, got, _ = case
    for g, o in zip(golden["boots"], got["boots"], strict=True):
        assert o["facts"] == g["facts"]


def test_failures(case):
    _, golden, got, _ = case
    for g, o in zip(golden["boots"], got["boots"], strict=True):
        assert o["failures"] == g["failures"]


def test_shape(case):
    _, golden, got, _ = case
    for g, o in zip(golden["boots"], got["boots"], strict=True):
        assert o["shape"] == g["shape"]


def test_runtime_series(case):
    _, golden, got, _ = case
    for g, o in zip(golden["boots"], got["boots"], strict=True):
        assert o["runtime"] == g["runtime"]


def test_golden_figures_stand_in_their_lines(case):
    """A check independent of the parser: each golden figure's printed number is on its line,
    and byte values are that number times the unit."""
    _, golden, _, lines = case
    for boot in golden["boots"]:
        for f in boot["facts"]:
            number, _, unit = f["printed"].partition(" ")
            number = number.rstrip("x%")
            assert number in lines[f["line"] - 1], (f, lines[f["line"] - 1])
            if unit in SCALE and f["name"].endswith("_bytes"):
                assert f["value"] == round(float(number.replace(",", "")) * SCALE[unit])
            if unit == "tokens" or unit == "blocks":
                assert f["value"] == int(number.replace(",", ""))


def test_damaged_lines_yield_no_guess(case):
    _, golden, got, _ = case
    for entry in golden.get("unreadable", []):
        line = entry["line"]
        for boot in got["boots"]:
            for name in entry["absent"]:
                if name == "failure":
                    assert all(f["line"] != line for f in boot["failures"])
                    continue
                assert not any(f["name"] == name and f["line"] == line for f in boot["facts"])
                assert not any(name in f["figures"] and f["line"] == line for f in boot["failures"])
                assert not (name in boot["shape"] and boot["shape"][name]["line"] == line)
