"""The formula from the model itself (issue 27): a boot's KV tokens predicted from its model's
geometry (``ledger model add``, the local Hugging Face cache, the model path), stored per boot,
and the ``kv_formula`` view's verdict in check, show, history and the web view."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import formula_table
import pytest
from conftest import REAL, ROOT, ledger_on, template_copy
from dbutil import dict_rows

from ledger import formula as f

MODELS = ROOT / "fixtures" / "models"
REC = ROOT / "fixtures" / "reconcile"
GLM = "zai-org/GLM-4.1V-9B-Thinking"
GLM_209 = REAL / "209_v1-0.11-boot-tail-kv-graph-capture-init-engine.log"
LLAMA_026 = REAL / "026_v0-0.8.1-kserve-huggingfaceserver-interleaved.log"
QWEN_008 = REAL / "008_v1-nightly-dual4090-dflash-kvpool-specdecode-runtime.log"
QWEN_27B = "~/.cache/huggingface/qwen3.6-27b-autoround-int4"


def formula_row(db: str, label: str) -> dict:
    (row,) = dict_rows(db, "SELECT f.* FROM kv_formula f JOIN deploy d ON d.id = f.deploy_id "
                           f"WHERE d.label = '{label}'")
    return row


def _glm(db: str) -> None:
    ledger_on(db, "ingest", "--label", "glm-v", str(GLM_209))
    ledger_on(db, "deploy", "set", "glm-v", f"model={GLM}")


@pytest.fixture
def glm(filled):
    """Fixture 209 (a GLM-V boot that prints no model) named by its deploy, with the GLM config."""
    return filled("formula-glm", _glm)


# -- the geometry read from a config.json ------------------------------------------------------


def test_a_uniform_config_gives_its_layers_kv_heads_and_head_size():
    data, _ = f.read_config(MODELS / "glm-4.1v-9b-thinking")
    g = f.model_figures(data)
    assert (g["layout"], g["attn_layers"], g["num_kv_heads"], g["head_size"]) == ("uniform", 40, 2, 128)


def test_a_qwen3_next_config_is_hybrid_with_its_gated_delta_net_layers():
    g = f.model_figures(f.read_config(MODELS / "qwen3.6-35b-a3b" / "config.json")[0])
    assert (g["layout"], g["attn_layers"], g["mamba_layers"]) == ("hybrid-gdn", 10, 30)


def test_the_gated_delta_net_page_at_tp2_gives_the_544_token_block():
    # conv (2·16·128 + 32·128) / 2 × 3 + temporal 16 × 128 × 128, bf16; 16 × cdiv(548,864, 16 × 1,024) = 544
    g = f.model_figures(f.read_config(MODELS / "qwen3.6-35b-a3b")[0])
    assert f.gdn_page_bytes(g, tp=2, dtype_bytes=2) == 548_864


def test_sliding_window_layers_are_unsupported_with_the_reason():
    g = f.model_figures(f.read_config(MODELS / "gpt-oss-20b")[0])
    assert g["layout"] == "unsupported" and "sliding-window" in g["unsupported"]


def test_an_mla_config_is_one_latent_head():
    g = f.model_figures({"num_hidden_layers": 61, "num_attention_heads": 128, "kv_lora_rank": 512,
                         "qk_rope_head_dim": 64, "hidden_size": 7168})
    assert (g["layout"], g["num_kv_heads"], g["head_size"]) == ("mla", 1, 576)


def test_a_mamba_architecture_other_than_qwen3_next_is_unsupported():
    g = f.model_figures({"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096,
                         "attn_layer_period": 8, "mamba_d_state": 16})
    assert g["layout"] == "unsupported" and "mamba state" in g["unsupported"]


# -- the prediction ------------------------------------------------------------------------------


def test_an_exact_budget_is_predicted_exactly_with_the_bare_tolerance():
    figures = f.model_figures({"num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 8,
                               "head_dim": 128, "hidden_size": 5120})
    inputs = f.BootInputs(model="Qwen/Qwen3-14B", engine_version="0.11.0", tensor_parallel_size=1,
                          max_model_len=32768, budget_bytes=2666 * 2_621_440 + 5, budget_source="kv_cache_memory_bytes",
                          budget_precision_bytes=0, v1_tokens_printed=True, args_printed=True)
    p = f.predict(inputs, "Qwen/Qwen3-14B", figures)
    assert (p.status, p.predicted_blocks, p.predicted_tokens) == ("predicted", 2666, 42_656)
    assert p.predicted_tokens_low == p.predicted_tokens_high == 42_656


def test_a_speculative_drafter_is_unsupported():
    figures = f.model_figures(f.read_config(MODELS / "glm-4.1v-9b-thinking")[0])
    inputs = f.BootInputs(model=GLM, engine_version="0.11.0", tensor_parallel_size=1, max_model_len=4096,
                          budget_bytes=1e9, speculative="SpeculativeConfig(method='eagle', num_spec_tokens=3)")
    p = f.predict(inputs, GLM, figures)
    assert p.status == "unsupported" and "eagle" in p.reason


def test_workers_that_printed_the_budget_leave_tp_unknown():
    figures = f.model_figures(f.read_config(MODELS / "glm-4.1v-9b-thinking")[0])
    inputs = f.BootInputs(model=GLM, engine_version="0.11.0", max_model_len=4096, budget_bytes=1e9,
                          budget_processes=[("Worker_TP0", 0), ("Worker_TP1", 1)])
    p = f.predict(inputs, GLM, figures)
    assert p.status == "insufficient" and "tensor_parallel_size" in p.reason


# -- on the real fixtures -------------------------------------------------------------------------


def test_fixture_209_lands_within_its_tolerance(glm, cli):
    assert cli("model", "add", str(MODELS / "glm-4.1v-9b-thinking"), "--as", GLM).exit_code == 0
    r = formula_row(glm, "glm-v")
    assert r["verdict"] == "ok" and r["measured_tokens"] == 425_424
    assert abs(r["relative_error"]) <= r["tolerance"] < 0.0015  # 0.1 % and the 0.01 GiB of "16.23 GiB"


def test_one_kv_head_too_many_is_off(glm, cli):
    wrong = MODELS / "wrong" / "glm-4.1v-9b-one-kv-head-too-many"
    assert cli("model", "add", str(wrong), "--as", GLM).exit_code == 0
    r = formula_row(glm, "glm-v")
    assert r["verdict"] == "off" and r["relative_error"] > 0.4  # 2/3 of the tokens predicted


def test_check_fails_on_an_off_formula(glm, cli):
    cli("model", "add", str(MODELS / "wrong" / "glm-4.1v-9b-one-kv-head-too-many"), "--as", GLM)
    r = cli("check", "glm-v")
    assert r.exit_code == 1 and "kv formula         off" in r.output


def test_model_add_re_predicts_the_boots_of_that_model(glm, cli):
    assert formula_row(glm, "glm-v")["verdict"] == "insufficient"
    out = cli("model", "add", str(MODELS / "glm-4.1v-9b-thinking"), "--as", GLM, "--format", "json").output
    assert json.loads(out)["verdicts"] == {"ok": 1}


def test_a_log_without_a_model_is_insufficient_and_says_so(db, cli):
    cli("ingest", "--label", "glm-v", str(GLM_209))
    r = formula_row(db, "glm-v")
    assert r["verdict"] == "insufficient" and "prints no model name" in r["reason"]


def test_unsetting_the_deploy_model_takes_the_prediction_back(glm, cli):
    cli("model", "add", str(MODELS / "glm-4.1v-9b-thinking"), "--as", GLM)
    assert cli("deploy", "unset", "glm-v", "model").exit_code == 0
    assert formula_row(glm, "glm-v")["predicted_tokens"] is None


def test_the_group_s_first_boot_is_checked_by_the_formula_not_by_itself(db, cli):
    cli("ingest", "--label", "bf16", str(REC / "bf16-3x241664-ready.log"))
    cli("model", "add", str(MODELS / "qwen3.6-35b-a3b"), "--as", "/models/Qwen3.6-35B-A3B")
    out = cli("check", "bf16").output
    # the reconciliation says honestly that the boot is its group's reference (no test passed:
    # issue 25); the formula is its check
    assert "from itself" not in out and "kv reconciliation  ok" not in out
    assert "kv reconciliation  reference" in out
    assert "kv formula         unsupported  speculative decoding (mtp)" in out and "group's first boot" in out


def test_a_later_boot_keeps_its_reconciliation_and_gets_the_formula(db, cli):
    for name in ("fp8-4x262144-ready", "fp8-5x262144-runtime-oom"):
        cli("ingest", "--label", name, str(REC / f"{name}.log"))
    out = cli("check", "fp8-5x262144-runtime-oom").output
    assert "kv reconciliation  ok" in out and "kv formula" in out


def test_show_and_history_carry_the_formula_verdict(glm, cli):
    cli("model", "add", str(MODELS / "glm-4.1v-9b-thinking"), "--as", GLM)
    assert "kv formula         ok" in cli("show", "glm-v").output
    (row,) = json.loads(cli("history", "--format", "json").output)
    assert row["formula_check"] == "ok" and row["verdict"] == "ok"


def test_rm_takes_the_prediction_with_the_boot(glm, cli):
    bid = dict_rows(glm, "SELECT id FROM boot")[0]["id"]
    assert cli("rm", str(bid), "--yes").exit_code == 0
    assert dict_rows(glm, "SELECT * FROM kv_formula_prediction") == []


# -- where geometry comes from ----------------------------------------------------------------------


def _fake_hub(root: Path, repo: str, config: Path, snapshot: str = "0123abcd") -> Path:
    org, name = repo.split("/")
    folder = root / f"models--{org}--{name}" / "snapshots" / snapshot
    folder.mkdir(parents=True)
    shutil.copy(config, folder / "config.json")
    return folder / "config.json"


def test_the_ingest_finds_a_model_in_the_hf_home_cache(db, cli, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    path = _fake_hub(tmp_path / "hf" / "hub", "meta-llama/Llama-3.2-1B-Instruct",
                     MODELS / "llama-3.2-1b-instruct" / "config.json")
    cli("ingest", "--label", "llama", str(LLAMA_026))
    (m,) = json.loads(cli("model", "list", "--format", "json").output)
    assert m["name"] == "meta-llama/Llama-3.2-1B-Instruct" and m["source"] == f"hf cache {path}"
    assert m["num_kv_heads"] == 8 and m["boots"] == 1
    assert formula_row(db, "llama")["reason"] == "the log prints no KV budget"  # geometry known, no budget


def test_hf_hub_cache_comes_before_hf_home(tmp_path):
    hub = _fake_hub(tmp_path / "hub", "org/m", MODELS / "gpt-oss-20b" / "config.json")
    _fake_hub(tmp_path / "home" / "hub", "org/m", MODELS / "glm-4.1v-9b-thinking" / "config.json")
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HOME": str(tmp_path / "home")}
    assert f.find_config("org/m", env)[0] == hub


def test_refs_main_names_the_snapshot(tmp_path):
    _fake_hub(tmp_path, "org/m", MODELS / "gpt-oss-20b" / "config.json", "old")
    new = _fake_hub(tmp_path, "org/m", MODELS / "glm-4.1v-9b-thinking" / "config.json", "new")
    (tmp_path / "models--org--m" / "refs").mkdir()
    (tmp_path / "models--org--m" / "refs" / "main").write_text("new")
    assert f.find_config("org/m", {"HF_HUB_CACHE": str(tmp_path)})[0] == new


def test_a_model_not_on_this_machine_is_insufficient_never_fetched(db, cli):
    cli("ingest", "--label", "llama", str(LLAMA_026))
    r = formula_row(db, "llama")
    assert r["verdict"] == "insufficient" and r["reason"].startswith("no geometry for model 'meta-llama/")
    assert dict_rows(db, "SELECT * FROM model_geometry") == []


def test_the_ingest_reads_the_model_path_the_log_prints(db, cli, tmp_path):
    model_dir = tmp_path / "models" / "Qwen3.6-35B-A3B"
    model_dir.mkdir(parents=True)
    shutil.copy(MODELS / "qwen3.6-35b-a3b" / "config.json", model_dir / "config.json")
    # the reconcile boot as it would print from this machine's model folder (the same lines otherwise)
    log = tmp_path / "boot.log"
    log.write_text((REC / "bf16-3x241664-ready.log").read_text().replace("/models/Qwen3.6-35B-A3B", str(model_dir)))
    cli("ingest", "--label", "local", str(log))
    (m,) = json.loads(cli("model", "list", "--format", "json").output)
    assert m["name"] == str(model_dir) and m["source"] == f"model path {model_dir / 'config.json'}"
    assert m["layout"] == "hybrid-gdn"


def test_a_hub_cache_path_is_known_by_its_repo_id(db, cli):
    assert f.names_for("/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4-Flash-0731/snapshots/78")[1] \
        == "deepseek-ai/DeepSeek-V4-Flash-0731"


def test_model_add_names_a_hub_snapshot_by_its_repo_id(db, cli, tmp_path):
    path = _fake_hub(tmp_path, "openai/gpt-oss-20b", MODELS / "gpt-oss-20b" / "config.json")
    assert cli("db", "upgrade").exit_code == 0  # model add writes to a ledger that exists (db upgrade makes one)
    obj = json.loads(cli("model", "add", str(path.parent), "--format", "json").output)
    assert obj["name"] == "openai/gpt-oss-20b" and obj["layout"] == "unsupported"


def test_model_add_refuses_a_file_that_is_not_a_config(db, cli, tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    cli("db", "upgrade")
    r = cli("model", "add", str(bad), "--as", "x")
    assert r.exit_code == 2 and r.output.startswith("Error: ") and len(r.output.splitlines()) == 1
    assert dict_rows(db, "SELECT * FROM model_geometry") == []


def test_model_list_on_an_empty_ledger_says_so(db, cli):
    cli("db", "upgrade")
    assert "no model geometry recorded" in cli("model", "list").output


def test_check_on_a_group_s_first_boot_prints_the_formula_verdict_not_ok_from_itself(glm, cli):
    cli("model", "add", str(MODELS / "glm-4.1v-9b-thinking"), "--as", GLM)
    out = cli("check", "glm-v").output
    assert "kv formula         ok           predicted 425,456 tokens" in out and "measured 425,424" in out
    assert "from itself" not in out


# -- what the log does not print, stated by the deploy ----------------------------------------------


@pytest.fixture
def qwen_008(db, cli):
    """Fixture 008 (a TP=2 boot with a DFlash drafter, by its header; the log prints neither)
    named by its deploy, with the Qwen3.6-27B config."""
    cli("ingest", "--label", "dual4090", str(QWEN_008))
    cli("model", "add", str(MODELS / "qwen3.6-27b"), "--as", QWEN_27B)
    assert cli("deploy", "set", "dual4090", f"model={QWEN_27B}").exit_code == 0
    return db


def test_a_deploy_s_tensor_parallel_size_stands_for_the_one_the_log_does_not_print():
    figures = f.model_figures(f.read_config(MODELS / "glm-4.1v-9b-thinking")[0])
    inputs = f.BootInputs(model=GLM, engine_version="0.11.0", max_model_len=4096, budget_bytes=1e9,
                          v1_tokens_printed=True, budget_processes=[("Worker_TP0", 0), ("Worker_TP1", 1)],
                          stated_tensor_parallel_size=2)
    p = f.predict(inputs, GLM, figures)
    assert (p.status, p.tensor_parallel_size) == ("predicted", 2)
    assert "tensor_parallel_size not printed: the deploy's setting (2)" in p.assumed


def test_a_log_that_prints_specdecoding_metrics_but_no_method_is_insufficient(qwen_008, cli):
    cli("deploy", "set", "dual4090", "tensor_parallel_size=2")
    r = formula_row(qwen_008, "dual4090")
    assert r["verdict"] == "insufficient" and r["reason"].startswith("the log prints SpecDecoding metrics")


def test_the_specdecoding_metrics_go_along_with_a_copy(qwen_008, cli, tmp_path):
    dst = str(tmp_path / "copy.db")
    assert cli("copy", qwen_008, dst).exit_code == 0
    (row,) = dict_rows(dst, "SELECT reason FROM kv_formula")
    assert row["reason"].startswith("the log prints SpecDecoding metrics")


def test_a_deploy_s_speculative_method_makes_the_boot_unsupported(qwen_008, cli):
    cli("deploy", "set", "dual4090", "tensor_parallel_size=2", "speculative_method=DFlash")
    r = formula_row(qwen_008, "dual4090")
    assert r["verdict"] == "unsupported" and r["reason"].startswith("speculative decoding (dflash)")


def test_unsetting_the_speculative_method_takes_it_back(qwen_008, cli):
    cli("deploy", "set", "dual4090", "speculative_method=dflash")
    cli("deploy", "unset", "dual4090", "speculative_method")
    assert formula_row(qwen_008, "dual4090")["verdict"] == "insufficient"


def test_a_speculative_method_of_none_means_no_drafter(qwen_008, cli):
    cli("deploy", "set", "dual4090", "speculative_method=none")
    assert "speculative" not in formula_row(qwen_008, "dual4090")["reason"]


def test_what_the_log_says_comes_before_the_deploy_s_tensor_parallel_size(glm, cli):
    cli("model", "add", str(MODELS / "glm-4.1v-9b-thinking"), "--as", GLM)
    cli("deploy", "set", "glm-v", "tensor_parallel_size=4")  # the engine core printed the budget: one process
    r = formula_row(glm, "glm-v")
    assert (r["verdict"], r["tensor_parallel_size"]) == ("ok", 1)
    assert "the deploy's tensor_parallel_size setting (4) not taken" in r["assumed"]


def test_a_printed_args_dump_comes_before_the_deploy_s_speculative_method():
    figures = f.model_figures(f.read_config(MODELS / "glm-4.1v-9b-thinking")[0])
    inputs = f.BootInputs(model=GLM, engine_version="0.11.0", tensor_parallel_size=1, max_model_len=4096,
                          budget_bytes=1e9, args_printed=True, v1_tokens_printed=True,
                          stated_speculative_method="eagle3")
    p = f.predict(inputs, GLM, figures)
    assert p.status == "predicted" and any("eagle3) not taken" in a for a in p.assumed)


@pytest.mark.parametrize("setting", ["tensor_parallel_size=0", "tensor_parallel_size=two",
                                     "tensor_parallel_size=99999", "speculative_method=a b",
                                     "speculative_method=ｄflash"])
def test_deploy_set_refuses_a_shape_setting_that_is_not_one(glm, cli, setting):
    r = cli("deploy", "set", "glm-v", setting)
    assert r.exit_code == 2 and r.output.startswith("Error: ")


# the line fixture 008 prints (vLLM 0.20), at the watch tests' clock
SPEC_LINE = ("(APIServer pid=1) INFO 10-01 09:00:15 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
             "2.91, Accepted throughput: 63.19 tokens/s, Drafted throughput: 165.49 tokens/s, Accepted: 632 tokens, "
             "Drafted: 1655 tokens, Per-position acceptance rate: 0.770, 0.523, 0.329, 0.181, 0.106, Avg Draft "
             "acceptance rate: 38.2%\n")


def test_a_watched_boot_learns_from_its_specdecoding_metrics_that_it_speculates(db, cli, tmp_path):
    from watchlog import T0, Watch, append, boot, served, wait_until

    cli("ingest", "--label", "watched", str(GLM_209))  # the deploy, so that its model is set before the watch
    cli("deploy", "set", "watched", f"model={GLM}")
    cli("model", "add", str(MODELS / "glm-4.1v-9b-thinking"), "--as", GLM)
    log = tmp_path / "vllm.log"  # a start-up whose args lines are not in the log (as in fixture 008)
    log.write_text("".join(line for line in boot(T0).splitlines(keepends=True)
                           if "non-default args" not in line and "Initializing a V1" not in line))

    def reason() -> str:
        got = dict_rows(db, "SELECT reason, predicted_tokens FROM kv_formula WHERE boot_id = 2")
        return (got[0]["reason"] or f"predicted {got[0]['predicted_tokens']}") if got else ""

    # samples committed every 0.2 s (not 5 s): the batch that carries the SpecDecoding line comes sooner
    w = Watch(db, str(log), "--label", "watched", "--format", "jsonl", "--commit-every", "200ms")
    try:
        assert wait_until(lambda: reason().startswith("predicted"), what="the ready boot's prediction")
        append(log, served(T0, 1) + SPEC_LINE + served(T0 + dt.timedelta(seconds=10), 2))
        assert wait_until(lambda: reason().startswith("the log prints SpecDecoding metrics"), what="the re-prediction")
    finally:
        assert w.stop() == 0


# -- the README's table ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def table_db(tmp_path_factory):
    """The ledger of the docs' formula tables: every fixture, the configs, the deploy settings;
    built once per run (``conftest._template``), a copy for this module."""
    def build(path: str) -> None:
        built = formula_table.build(Path(path).parent)
        assert not Path(f"{built}-wal").exists(), f"{built}-wal is left after the build"
        Path(built).rename(path)

    return template_copy("formula-table", build, tmp_path_factory)


def test_readme_formula_table(table_db):
    table = formula_table.render(table_db)
    guide = (ROOT / "docs" / "guide.md").read_text()
    assert table in guide, "the guide's formula table is stale: python tests/formula_table.py"


def test_readme_compact_formula_table(table_db):
    table = formula_table.render_readme(table_db)
    readme = (ROOT / "README.md").read_text()
    assert table in readme, "the README's formula table is stale: python tests/formula_table.py --readme"


def test_every_fixture_with_a_config_and_a_budget_is_ok_off_or_unsupported(table_db):
    # the "done when": none of them is left insufficient; 209 is the one ok
    rows = [r for r in formula_table.rows(table_db)
            if r["geometry"] is not None and r["budget_bytes"] is not None]
    assert {r["label"] for r in rows} >= {"fx-008", "fx-209"}
    assert all(r["verdict"] in ("ok", "off", "unsupported") for r in rows), rows
    assert [r["label"] for r in rows if r["verdict"] == "ok"] == ["fx-209"]


def test_every_verdict_in_the_table_that_is_not_ok_has_a_reason(table_db):
    for r in formula_table.rows(table_db):
        assert r["verdict"] == "ok" or r["reason"], r


def test_copy_brings_the_geometry_and_the_deploy_model_along(db, cli, tmp_path):
    src = str(tmp_path / "host.db")
    cli("ingest", "--db", src, "--label", "glm-v", str(GLM_209))
    cli("deploy", "set", "--db", src, "glm-v", f"model={GLM}")
    cli("model", "add", "--db", src, str(MODELS / "glm-4.1v-9b-thinking"), "--as", GLM)
    assert cli("copy", src, db).exit_code == 0
    assert formula_row(db, "glm-v")["verdict"] == "ok"


def test_a_boot_that_prints_a_hub_cache_path_is_predicted_from_the_repo_id(db, cli, tmp_path):
    cli("ingest", "--label", "dsv4", str(REAL / "030_v1-0.25.0-dp8-ep-banner-version-deepseek-v4.log"))
    config = tmp_path / "config.json"  # an MLA model with a sparse-attention indexer (figures for the test only)
    config.write_text(json.dumps({"num_hidden_layers": 43, "num_attention_heads": 64, "hidden_size": 4096,
                                  "kv_lora_rank": 512, "qk_rope_head_dim": 64, "index_topk": 512}))
    obj = json.loads(cli("model", "add", str(config), "--as", "deepseek-ai/DeepSeek-V4-Flash-0731",
                         "--format", "json").output)
    assert len(obj["boots"]) == 1 and obj["verdicts"] == {"unsupported": 1}
    assert "indexer" in formula_row(db, "dsv4")["reason"]


def test_a_geometry_found_at_ingest_predicts_the_model_s_earlier_boots_too(db, cli, tmp_path, monkeypatch):
    cli("ingest", "--label", "llama", str(LLAMA_026))
    assert formula_row(db, "llama")["reason"].startswith("no geometry")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    _fake_hub(tmp_path / "hub", "meta-llama/Llama-3.2-1B-Instruct", MODELS / "llama-3.2-1b-instruct" / "config.json")
    log = tmp_path / "again.log"  # the same boot read again from a longer copy: a second boot of the model
    log.write_text(LLAMA_026.read_text() + LLAMA_026.read_text().split("# ---\n", 1)[1])
    cli("ingest", "--label", "llama", str(log))
    reasons = {r["reason"] for r in dict_rows(db, "SELECT reason FROM kv_formula")}
    assert reasons == {"the log prints no KV budget"}


def test_a_model_path_that_is_no_config_is_not_read(tmp_path):
    (tmp_path / "config.json").mkdir()
    with pytest.raises(f.ConfigError, match="not a regular file"):
        f.read_config(tmp_path)
    assert f.find_config("/a\x00b")[0] is None


def test_the_web_view_carries_the_formula_verdict(glm, cli):
    pytest.importorskip("pandas")
    from ledger import queries
    from ledger.db.connect import open_read_only

    cli("model", "add", str(MODELS / "glm-4.1v-9b-thinking"), "--as", GLM)
    ledger = open_read_only(glm)
    try:
        (row,) = queries.deploy_overview(ledger)
        checks = {c["what"]: c["verdict"] for c in queries.show(ledger, "glm-v")["checks"]}
    finally:
        ledger.dispose()
    assert row["verdicts"]["formula"] == "ok" and checks["kv formula"] == "ok"


def test_deploy_set_refuses_an_empty_model_name(glm, cli):
    r = cli("deploy", "set", "glm-v", "model= ")
    assert r.exit_code == 2 and "expected a model name" in r.output


def test_the_prediction_an_ingest_stores_is_the_one_its_stored_rows_give(db, cli, monkeypatch, tmp_path):
    """The ingest hands the prediction what it holds of each boot (``writes.known_of``) instead
    of reading it back: for every fixture, with the models' geometry and the deploys' settings
    known when it is read, the prediction stored is the one the boot's stored rows give
    (``record_kv_formula`` reading them, as ``ledger model add`` predicts a boot again)."""
    from ledger.db.connect import open_writer
    from ledger.db.formula import record_kv_formula
    from ledger.db.writes import delete_boots

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setenv("HF_HOME", "")
    fixtures = formula_table._fixtures()
    for key, path in fixtures:
        assert cli("ingest", "--label", f"fx-{key}", str(path)).exit_code == 0
    for name, folder in formula_table.PRINTED.items():
        assert cli("model", "add", str(MODELS / folder), "--as", name).exit_code == 0
    # 008 without its drafter: its SpecDecoding samples decide its prediction
    assert cli("deploy", "set", "fx-008", f"model={QWEN_27B}", "tensor_parallel_size=2").exit_code == 0
    assert cli("deploy", "set", "fx-209", f"model={GLM}").exit_code == 0
    with open_writer(db) as writer:  # the boots go, their deploys and settings stay: read again
        delete_boots(writer, [r["id"] for r in dict_rows(db, "SELECT id FROM boot")])
    for key, path in fixtures:
        assert cli("ingest", "--label", f"fx-{key}", str(path)).exit_code == 0
    stored = dict_rows(db, "SELECT * FROM kv_formula_prediction ORDER BY boot_id")
    assert {r["status"] for r in stored} == {"predicted", "unsupported", "insufficient"}
    assert any((r["reason"] or "").startswith("the log prints SpecDecoding metrics") for r in stored)
    with open_writer(db) as writer, writer.transaction() as cur:
        for row in stored:
            record_kv_formula(writer, cur, row["boot_id"])
    assert dict_rows(db, "SELECT * FROM kv_formula_prediction ORDER BY boot_id") == stored
