"""One redaction for everything meant to be pasted (issue 38, finding 10): ``note``, ``diff`` in
every format, ``show``, ``export`` and serve's diff and boot pages leave out keys, tokens,
passwords (in args dumps, URL userinfo and query strings, bearer headers), home paths and
private addresses by default; ``--no-redact`` keeps them; the stored ledger keeps the raw
evidence (``ledger/render/redact.py`` is the one place that decides)."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from ledger.render.redact import SECRET, Redactor

REC = ROOT / "fixtures" / "reconcile"

# what the hostile boot's args dump carries that must never be pasted
SECRETS = ["s3cretKey", "hunter2", "hf_abcdefghijklmnopqrstuvwxyz12", "sk-proj-abcdefghijklmnopqrstu",
           "/home/alice", "/Users/bob", "192.168.1.20", "10.1.2.3", "172.16.5.4", "fd00::12", "abc123", "pw9",
           "zz9top", "Bearer", "dXNlcjpwYXNz"]
HOSTILE_ARGS = ("'host': '192.168.1.20', 'api_key': ['s3cretKey'], 'hf_token': 'hf_abcdefghijklmnopqrstuvwxyz12', "
                "'download_dir': '/home/alice/models', 'served_model_name': ['/Users/bob/m'], "
                "'otlp_traces_endpoint': 'http://bob:hunter2@10.1.2.3:4317/?token=abc123&password=pw9&api_key=zz9top', "
                "'allowed_origins': ['http://172.16.5.4', 'http://[fd00::12]:8000'], "
                "'middleware': ['Authorization: Basic dXNlcjpwYXNz', 'sk-proj-abcdefghijklmnopqrstu']")


@pytest.fixture
def hostile(db, cli, tmp_path):
    """The bf16 seed boot (its args dump carrying the secrets) against the fp8 one."""
    log = tmp_path / "hostile.log"
    log.write_text((REC / "bf16-3x241664-ready.log").read_text().replace("'host': '0.0.0.0'", HOSTILE_ARGS))
    assert cli("ingest", str(REC / "fp8-4x262144-ready.log"), "--label", "fp8").exit_code == 0
    assert cli("ingest", str(log), "--label", "bf16").exit_code == 0
    return db


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _out(cli, *args: str) -> str:
    r = cli(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


# -- the redactor ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "shown"), [
    ("vllm serve m --api-key s3cretKey --port 8000", f"vllm serve m --api-key {SECRET} --port 8000"),
    ("vllm serve m --api-key=s3cretKey", f"vllm serve m --api-key={SECRET}"),
    ("vllm serve m --hf-token 'abc def'", f"vllm serve m --hf-token '{SECRET}'"),
    ("{'api_key': ['s3cretKey', 'other'], 'port': 8000}", f"{{'api_key': ['{SECRET}'], 'port': 8000}}"),
    ("{'api_key': 's3cretKey'}", f"{{'api_key': '{SECRET}'}}"),
    ('{"api_key": "s3cretKey"}', f'{{"api_key": "{SECRET}"}}'),
    ("Namespace(api_key='s3cretKey', hf_token=None, allow_credentials=False)",
     f"Namespace(api_key='{SECRET}', hf_token=None, allow_credentials=False)"),
    ("{'hf_token': True, 'max_num_batched_tokens': 2048, 'tokenizer': 'x'}",
     "{'hf_token': True, 'max_num_batched_tokens': 2048, 'tokenizer': 'x'}"),
    ("HF_TOKEN=abc VLLM_API_KEY=def vllm serve", f"HF_TOKEN={SECRET} VLLM_API_KEY={SECRET} vllm serve"),
    ("http://bob:hunter2@example.org:4317/v1", f"http://{SECRET}@example.org:4317/v1"),
    ("https://example.org/hook?token=abc123&password=pw9&api_key=zz&auth=q&x=1",
     f"https://example.org/hook?token={SECRET}&password={SECRET}&api_key={SECRET}&auth={SECRET}&x=1"),
    ("Authorization: Bearer abc.def", f"Authorization: Bearer {SECRET}"),
    ("authorization: Basic dXNlcjpwYXNz", f"authorization: Basic {SECRET}"),
    ("with hf_abcdefghijklmnopqrstuvwx12 and sk-proj-abcdefghijklmnopqrstu", "with <token> and <token>"),
    ("on 10.1.2.3, 172.16.5.4, 172.31.0.1 and 192.168.1.20", "on <ip>, <ip>, <ip> and <ip>"),
    ("http://[fd00::12]:8000 and fd12:3456:789a::1 and fe80::1%eth0", "http://[<ip>]:8000 and <ip> and <ip>"),
    ("/Users/bob/models and C:\\Users\\bob\\x", "/Users/<user>/models and C:\\Users\\<user>\\x"),
])
def test_the_redactor_leaves_out_each_kind_of_secret(raw, shown):
    assert Redactor(home="/root", hosts=[]).text(raw) == shown


@pytest.mark.parametrize("kept", [
    "0.0.0.0 127.0.0.1 ::1 [::1]:8000", "sha256:" + "da402966" * 8, "/models/Qwen3.6-35B-A3B f532e03",
    "vLLM 0.20.2rc1.dev9+g01d4d1ad3", "max_num_batched_tokens=2048 num_speculative_tokens=4", "2025.10.300.1",
    "GPU KV cache size: 798,280 tokens", "http://0.0.0.0:7773", "feed:beef", "'hf_token': None",
])
def test_the_redactor_keeps_evidence(kept):
    assert Redactor(home="/root", hosts=[]).text(kept) == kept


def test_a_secret_key_hides_its_values_in_report_objects():
    r = Redactor(home="/root", hosts=[])
    assert r({"api_key": ["x", "y"], "hf_token": True, "port": 8000}) == \
        {"api_key": [SECRET, SECRET], "hf_token": True, "port": 8000}
    assert r({"shape": [{"key": "api_key", "a": None, "b": ["s3cret"]}, {"key": "port", "a": 1, "b": 2}]}) == \
        {"shape": [{"key": "api_key", "a": None, "b": [SECRET]}, {"key": "port", "a": 1, "b": 2}]}


# -- every output meant to be pasted ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "markdown", "trailers", "json"])
def test_note_pastes_no_secret(hostile, cli, fmt):
    assert _leaks(_out(cli, "note", "bf16", "--against", "fp8", "--all", "--format", fmt)) == []


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json", "jsonl"])
def test_diff_pastes_no_secret_in_any_format(hostile, cli, fmt):
    assert _leaks(_out(cli, "diff", "fp8", "bf16", "--all", "--format", fmt)) == []
    kept = _out(cli, "diff", "fp8", "bf16", "--all", "--format", fmt, "--no-redact")
    assert "s3cretKey" in kept and "hunter2" in kept


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json", "jsonl"])
def test_show_pastes_no_secret(hostile, cli, fmt):
    assert _leaks(_out(cli, "show", "bf16", "--format", fmt)) == []
    assert "hunter2" in _out(cli, "show", "bf16", "--format", fmt, "--no-redact")


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_export_pastes_no_secret(hostile, cli, fmt):
    assert _leaks(_out(cli, "export", "--format", fmt)) == []
    assert "hunter2" in _out(cli, "export", "--format", fmt, "--no-redact")


def test_the_ledger_keeps_the_raw_evidence(hostile, cli):
    out = _out(cli, "sql", "SELECT value FROM shape WHERE key = 'api_key'", "--format", "json")
    assert "s3cretKey" in out


def test_serves_diff_and_boot_pages_paste_no_secret(hostile, cli):
    from starlette.testclient import TestClient

    from ledger.db.connect import open_read_only
    from ledger.serve.app import LOOPBACK_NAMES, create_app

    bf16 = json.loads(_out(cli, "show", "bf16", "--format", "json"))["boot"]
    ledger = open_read_only(hostile)
    try:
        client = TestClient(create_app(ledger, allowed_hosts=LOOPBACK_NAMES), base_url="http://127.0.0.1")
        for path in ("/diff?a=fp8&b=bf16&all=1", "/api/diff?a=fp8&b=bf16&all=1", f"/boot/{bf16}",
                     f"/api/boot/{bf16}"):
            r = client.get(path)
            assert r.status_code == 200 and _leaks(r.text) == [], path
        kept = TestClient(create_app(ledger, allowed_hosts=LOOPBACK_NAMES, redact=False),
                          base_url="http://127.0.0.1")
        assert "hunter2" in kept.get("/api/diff?a=fp8&b=bf16&all=1").text
    finally:
        ledger.dispose()
