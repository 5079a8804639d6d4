"""A served log's records go to their stored rows straight from their printed text
(``staging.StoredRows.for_shape``); each row must be the one ``stored_row`` gives of the
record's sample — the hundredths, the flag, the per-position list — or None, so that the sample
path gives it."""

from __future__ import annotations

import pytest
from conftest import REAL, ROOT, SYNTH
from hypothesis import given
from hypothesis import strategies as st

from ledger import parsers
from ledger.db.staging import STORED_ROWS, stored_row
from ledger.parsers.rules import RuntimeRule


def _fast_rules() -> list[RuntimeRule]:
    rules = parsers.builtin_ruleset()
    found = {id(r): r for keyed in rules.anchors.values() for r in keyed
             if isinstance(r, RuntimeRule) and r.fast is not None}
    return list(found.values())


def _rule(kind: str) -> RuntimeRule:
    return next(r for r in _fast_rules() if r.fast is not None and r.fast.kind == kind)


def _row_both_ways(rule: RuntimeRule, raw: bytes, number: int = 7) -> tuple[tuple | None, tuple] | None:
    groups = rule.fast_groups(raw)
    if groups is None:
        return None
    assert rule.fast is not None
    shape_row = STORED_ROWS.for_shape(rule.fast)
    assert shape_row is not None  # every built-in shape is read this way
    return shape_row(groups, number), stored_row(rule.fast.read_line(groups, number)[2])


def test_every_fixture_record_in_a_fast_shape_gets_its_sample_s_stored_row():
    rules = _fast_rules()
    read: dict[str, int] = {}
    for path in sorted([*REAL.glob("*.log"), *(ROOT / "fixtures" / "reconcile").glob("*.log"), *SYNTH.rglob("*.log")]):
        for number, raw in enumerate(path.read_bytes().splitlines(), 1):
            for rule in rules:
                both = _row_both_ways(rule, raw, number)
                if both is None:
                    continue
                fast, slow = both
                assert fast == slow, f"{path.name}:{number}"
                assert rule.fast is not None
                read[rule.fast.kind] = read.get(rule.fast.kind, 0) + 1
    assert set(read) == {"engine_stats", "spec_decode"}  # the fixtures hold records of both shapes


STATS = ("(APIServer pid=1) INFO 09-29 12:00:10 [loggers.py:123] Engine 000: Avg prompt throughput: {a} tokens/s, "
         "Avg generation throughput: {b} tokens/s, Running: {r} reqs, Waiting: {w} reqs, GPU KV cache usage: {u}%, "
         "Prefix cache hit rate: {p}%")
SPEC = ("(APIServer pid=1) INFO 09-29 12:00:10 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: {m}, "
        "Accepted throughput: 98.3 tokens/s, Drafted throughput: 140.0 tokens/s, Accepted: {a} tokens, "
        "Drafted: {d} tokens, Per-position acceptance rate: {pp}, Avg Draft acceptance rate: {r}%")

digits = st.text("0123456789", min_size=1, max_size=18)
one_decimal = st.builds(lambda i, f: f"{i}.{f}", digits, st.text("0123456789", min_size=1, max_size=1))
decimals = st.builds(lambda i, f: f"{i}.{f}", digits, st.text("0123456789", min_size=1, max_size=18))


@given(a=one_decimal, b=one_decimal, r=digits, w=digits, u=one_decimal, p=one_decimal)
def test_a_stats_record_s_row_from_its_text_is_its_sample_s(a, b, r, w, u, p):
    both = _row_both_ways(_rule("engine_stats"), STATS.format(a=a, b=b, r=r, w=w, u=u, p=p).encode())
    assert both is not None
    fast, slow = both
    assert fast is None or fast == slow


@given(m=decimals, a=digits, d=digits, r=one_decimal,
       pp=st.lists(st.builds(lambda f: f"0.{f}", st.text("0123456789", min_size=1, max_size=4)), min_size=1, max_size=6))
def test_a_spec_decode_record_s_row_from_its_text_is_its_sample_s(m, a, d, r, pp):
    both = _row_both_ways(_rule("spec_decode"), SPEC.format(m=m, a=a, d=d, r=r, pp=", ".join(pp)).encode())
    assert both is not None
    fast, slow = both
    assert fast is None or fast == slow


@pytest.mark.parametrize(("figure", "read_from_text"), [
    ("123.4", True), ("0.0", True), ("1234567890123.4", True),  # 14 digits, 15 characters: within the bound
    ("12345678901234.5", False),  # 16 characters: past it, the sample's float decides
])
def test_a_figure_is_read_from_its_text_within_the_bound_and_from_its_sample_past_it(figure, read_from_text):
    both = _row_both_ways(_rule("engine_stats"), STATS.format(a=figure, b="1.0", r=3, w=0, u="5.5", p="0.0").encode())
    assert both is not None
    fast, slow = both
    assert (fast is not None) is read_from_text
    if fast is not None:
        assert fast == slow


def test_an_ingest_stores_the_rows_its_samples_give(tmp_path, monkeypatch):
    """The whole ingest, with the rows from the text and without (the store then has no
    shape functions): every stored sample the same."""
    import sqlite3

    from ledger.db import staging

    log = next(REAL.glob("008_*specdecode-runtime.log"))  # stats and spec-decode records
    dumps = []
    for way in ("text", "sample"):
        if way == "sample":
            monkeypatch.setattr(staging.StoredRows, "for_shape", lambda self, shape: None)
        db = tmp_path / f"{way}.db"
        from ledger.cli import main
        with pytest.raises(SystemExit) as exit_:
            main(["ingest", "--db", str(db), "--year", "2026", str(log)])
        assert exit_.value.code in (0, 1)
        dumps.append(sqlite3.connect(db).execute("SELECT * FROM runtime_sample_row ORDER BY id").fetchall())
    assert dumps[0] and dumps[0] == dumps[1]


def test_a_stats_record_with_a_figure_below_zero_keeps_its_sign_in_its_stored_row(tmp_path):
    """No fast shape reads a "-" (the record takes the general path) and no path drops it."""
    raw = STATS.format(a="-1.5", b="181.0", r=1, w=0, u="-0.6", p="68.2")
    assert _rule("engine_stats").fast_groups(raw.encode()) is None
    log = tmp_path / "stats.log"
    log.write_text(raw + "\n" + raw.replace("12:00:10", "12:00:20") + "\n")
    rows: list[tuple] = []
    parse = parsers.Parse(parsers.Source(str(log)), year=2026, store=STORED_ROWS)
    parse.run(lambda boot: None, lambda boot, samples: rows.extend(
        s if type(s) is tuple else stored_row(s) for s in samples))
    assert [(r[5], r[11]) for r in rows] == [(-150.0, -60.0)] * 2  # prompt throughput, KV usage: hundredths
