"""The unit converter: printed figures to bytes, seconds and counts, with precision."""

import pytest

from ledger.parsers import units


def test_gib_to_bytes_with_half_a_last_digit_of_precision():
    q = units.quantity("9.74", "GiB")
    assert q.value == round(9.74 * 2**30)
    assert q.precision == pytest.approx(0.005 * 2**30)
    assert q.unit == "bytes"


def test_vllm_gb_is_gib():
    assert units.quantity("15.4136", "GB").value == round(15.4136 * 2**30)


def test_format_gib_without_padding_zeros_has_coarser_precision():
    assert units.quantity("13.5", "GiB").precision == pytest.approx(0.05 * 2**30)
    assert units.quantity("0", "GiB").precision == pytest.approx(0.5 * 2**30)


def test_thousands_separators():
    assert units.quantity("1,350,182", "tokens").value == 1350182
    assert units.quantity("1,350,182", "tokens").precision is None


def test_torch_sizes_carry_their_unit():
    assert units.size("50.00 MiB").value == 50 * 2**20
    assert units.size("448.00 KiB").value == 448 * 2**10
    assert units.size("0 bytes").value == 0


def test_seconds_and_ratios():
    assert units.quantity("4", "secs").precision == 0.5
    assert units.quantity("1.06", "x").value == 1.06
    assert units.quantity("38.2", "%").value == 38.2


@pytest.mark.parametrize("text,expected", [
    ("7.3e9", 7_300_000_000), ("6,100,000,000", 6_100_000_000), ("7.3G", 7_300_000_000),
    ("8GiB", 8 * 2**30), ("25.6k", 25_600),
])
def test_human_byte_counts(text, expected):
    assert units.human_bytes(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "9.74 parsecs"])
def test_garbage_is_refused(bad):
    with pytest.raises(units.UnitError):
        units.size(bad)


def test_unknown_unit_is_refused():
    with pytest.raises(units.UnitError):
        units.quantity("1", "furlongs")


def test_importing_one_parser_module_loads_no_other():
    import subprocess
    import sys

    code = "import sys, ledger.parsers.units; print(sorted(m for m in sys.modules if m.startswith('ledger')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['ledger', 'ledger.parsers', 'ledger.parsers.units']"
