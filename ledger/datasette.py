"""Datasette metadata for a ledger file: what every table, view and column holds, in which
unit, and the canned queries people ask of it.

Datasette is what these users already run on a SQLite file; without metadata it shows a bare
schema and the compact ``runtime_sample_row`` beside the view that decodes it.  ``ledger
datasette`` prints this object as JSON (``datasette ledger.db -m metadata.json``).  Fact and
runtime-series columns take their words and units from the vocabulary (``ledger.parsers
.vocabulary``), so a new fact is described where it is defined; everything else is described
here, and a test holds this map to the schema (every table, view and column described).
"""

from __future__ import annotations

from typing import Any

from .parsers.vocabulary import FACTS

# Datasette units are Pint's names: only the two the ledger stores as plain numbers
_PINT_UNITS = {"bytes": "byte", "s": "second"}

# what a hidden table is for: Datasette lists it under "hidden tables" only
_HIDDEN = {
    "alembic_version": "Alembic's schema revision of this ledger.",
    "runtime_sample_row": "Runtime samples as stored (compact: kind as a number, figures as hundredths "
                          "in figure_1..9). Read them through the runtime_sample view.",
    "boot_runtime": "Per-boot sample counts, kept in the boot's transaction (runtime_sample holds the samples).",
    "watch": "Each `ledger watch` that reads a source into the ledger: what, where (host and pid), since when, "
             "the boot it is reading; a watch whose row is over a minute old without stopping was killed.",
    "watch_alert": "Each alert `ledger watch` decided, stored with the boot it is about: pending until stdout "
                   "and every sink had it (a restarted watch sends what is pending), then delivered.",
    "kv_reference_candidate": "Ready boots with a KV budget and a token count, per comparable group: "
                              "what kv_reference picks a group's earliest boot from.",
}

_TABLES: dict[str, str] = {
    "deploy": "What was booted: the deploy repo's commit and the container image digest (or a label).",
    "deploy_setting": "What a person recorded about a deploy with `ledger deploy set` "
                      "(card_ceiling_bytes, host_cap_bytes, kv_reference_boot, model, tensor_parallel_size, "
                      "speculative_method).",
    "boot": "One start-up of the engine, read from one region of one log file.",
    "boot_origin": "What a container's or a unit's runtime said about a boot (`ledger ingest --container/--unit`): "
                   "container id and name, image digest, created and started times, restart count, run, OCI labels.",
    "shape": "A boot's configuration as printed (engine args, config dump): one key per row.",
    "fact": "A figure a boot printed, with its evidence: line number, raw line, printed precision.",
    "failure": "A failure a boot printed: kind, phase, the stating line and its figures (JSON).",
    "runtime_sample": "Runtime samples: one engine-stats interval or spec-decode report per row, every figure as printed.",
    "boot_figures": "One row per boot: its shape keys and headline figures side by side.",
    "boot_kv": "boot_figures with the KV budget the boot's arithmetic uses and its comparable group.",
    "kv_cost_per_token": "Bytes per KV token where a boot prints both the KV budget and the token count.",
    "kv_reference": "The boot each boot's KV prediction comes from (pinned, else its group's earliest ready boot).",
    "kv_reconciliation": "Each boot's KV tokens predicted from its reference's bytes per token, "
                         "against the tokens it measured.",
    "model_geometry": "A model's KV geometry from its config.json (`ledger model add`, or found at ingest in the "
                      "model path or the local Hugging Face cache), under the name the logs print.",
    "kv_formula_prediction": "Each boot's KV tokens predicted from its model's geometry by the engine release's "
                             "allocator arithmetic, stored in the boot's transaction (read through kv_formula).",
    "kv_formula": "Each boot's KV tokens predicted from its model's own geometry against the tokens it measured: "
                  "ok, off, insufficient or unsupported with the reason.",
    "capacity_contract": "Does the KV pool back max_num_seqs x max_model_len? The margin in tokens and bytes.",
    "budget_ceilings": "The VRAM pair (KV pool + weights) against the card ceiling, the pinned host memory "
                       "against the host cap.",
}

# columns that mean the same wherever they stand
_COMMON: dict[str, str] = {
    "id": "Row id.",
    "boot_id": "The boot (boot.id).",
    "deploy_id": "The deploy (deploy.id).",
    "line": "1-based line number in the source log: the evidence.",
    "text": "The raw log line the row was read from.",
    "pack": "The grammar pack whose rule read it (null: the built-in vLLM grammar).",
    "rank": "The worker's rank in its innermost parallel group (null: engine-wide).",
    "process": "The process prefix as printed (EngineCore_DP0, Worker_TP1, ...).",
    "outcome": "How the start-up ended: ready, failed, crashed (after ready) or incomplete.",
    "started_at": "When the boot started (ISO 8601, as printed; see boot.year_inferred).",
    "engine_version": "The vLLM release the boot printed (null: not printed).",
    "model": "The model the boot served, as printed.",
    "kv_cache_dtype": "--kv-cache-dtype as printed (auto: the model's dtype).",
    "tensor_parallel_size": "--tensor-parallel-size.",
    "block_size": "KV cache block size in tokens.",
    "max_num_seqs": "--max-num-seqs: the sequences served at once.",
    "kv_cache_memory_bytes": "--kv-cache-memory-bytes as configured (bytes; null: not set).",
    "kv_cache_reserved_precision": "Half a unit of the last printed digit of kv_cache_reserved_bytes (bytes).",
    "available_kv_cache_precision": "Half a unit of the last printed digit of available_kv_cache_bytes (bytes).",
    "weights_slab_bytes": "A fork's weights slab (grammar pack fact; bytes).",
    "card_ceiling_bytes": "The measured card ceiling for the VRAM pair (bytes; `ledger deploy set`).",
    "pinned_ledger_bytes": "A fork's pinned host memory ledger (grammar pack fact; bytes).",
    "pinned_host_pool_bytes": "A fork's pinned host pool (grammar pack fact; bytes).",
    "prefix_host_tier_bytes": "A fork's prefix host tier (grammar pack fact; bytes).",
    "pinned_cap_bytes": "A fork's cap on pinned host memory (grammar pack fact; bytes).",
    "kv_budget_bytes": "The KV budget the arithmetic uses: --kv-cache-memory-bytes unless a printed pool "
                       "contradicts it, else the printed reserved or available KV memory (bytes).",
    "kv_budget_source": "Which figure kv_budget_bytes is.",
    "kv_argument_ignored": "1 when --kv-cache-memory-bytes was asked and a printed pool shows the engine "
                           "used another (vLLM's CPU build): the printed pool is then the budget.",
    "kv_budget_precision_bytes": "kv_budget_bytes' uncertainty: 0 when exact, else half a printed digit (bytes).",
    "group_key": "The comparable group: model, KV dtype, TP, block size, release.",
    "verdict": "ok, off, broken or over; insufficient when a figure it needs was not printed.",
}


_FORMULA = {
    "model": "The model the boot served (as printed, or the deploy's model setting).",
    "geometry": "The model_geometry row the prediction used.",
    "budget_bytes": "The KV budget the prediction is for (bytes).",
    "budget_source": "Which figure the budget is.",
    "budget_precision_bytes": "The budget's printed precision (bytes; 0: exact).",
    "status": "predicted, insufficient or unsupported.",
    "reason": "Why a prediction is insufficient or unsupported.",
    "pipeline_parallel_size": "--pipeline-parallel-size.",
    "max_model_len": "--max-model-len (tokens).",
    "v0": "1 for the V0 engine's arithmetic.",
    "predicted_blocks": "KV blocks the allocator gives the budget.",
    "predicted_tokens": "KV cache tokens the allocator gives the budget.",
    "predicted_tokens_low": "predicted_tokens at the low end of the budget's precision.",
    "predicted_tokens_high": "predicted_tokens at the high end of the budget's precision.",
    "predicted_concurrency": "Concurrency at max_model_len the allocator gives (x).",
    "measured_tokens": "The KV cache tokens the boot printed.",
    "measured_concurrency": "The concurrency the boot printed (x).",
    "relative_error": "(measured - predicted) / predicted.",
    "tolerance": "0.1 %, widened by the tokens the budget's printed precision allows.",
    "tolerance_note": "How the tolerance was made.",
    "assumed": "vLLM defaults assumed where the log printed no value (JSON).",
}

_COLUMNS: dict[str, dict[str, str]] = {
    "alembic_version": {"version_num": "The schema revision."},
    "deploy": {
        "identity": "commit=<sha>;image=<digest>, or label=<label>, or empty: unique per deploy.",
        "commit_sha": "The deploy repo's commit.",
        "image_digest": "The container image digest (sha256:...).",
        "label": "A person's name for the deploy.",
        "dirty": "Whether the deploy repo's work tree had changes (--repo).",
        "created_at": "When the deploy was first seen (ISO 8601, UTC).",
    },
    "deploy_setting": {
        "key": "card_ceiling_bytes, host_cap_bytes, kv_reference_boot, model, tensor_parallel_size or "
               "speculative_method.",
        "value": "The value set (bytes or a boot id).",
        "set_at": "When it was set (ISO 8601, UTC).",
    },
    "boot": {
        "source_path": "The log it was read from (a path, <stdin>, or a named source).",
        "source_sha256": "sha256 of the whole input (null: a stream cut short).",
        "boot_index": "0-based index of the boot within its source.",
        "first_line": "First line of the boot in the source.",
        "last_line": "Last line of the boot in the source.",
        "engine_name": "The engine (vllm, or a fork's name from a grammar pack).",
        "engine_commit": "The engine's commit, where printed.",
        "image_digest_in_log": "An image digest the log printed itself.",
        "year_inferred": "1 when the log's clock printed no year and it was inferred.",
        "ready_line": "The line where the server said it was ready.",
        "ready_at": "When the server became ready (ISO 8601).",
        "ended_at": "The boot's last timestamp (ISO 8601).",
        "ended": "How the boot ended: stopped (a stop that was asked for, no failure before it), crashed, "
                 "failed, running (serving at the end of its log); null: the log ends before it was up.",
        "stop_line": "The first line of a requested stop (SIGTERM, Ctrl-C), where there was one.",
        "access_lines": "HTTP access-log lines counted in the boot.",
        "request_lines": "Request lines (Received request, Added request) counted in the boot.",
        "ingested_at": "When `ledger ingest` stored it (ISO 8601, UTC).",
        "content_sha256": "The boot's identity: sha256 over every line it was read from.",
    },
    "boot_origin": {
        "key": "container_id, container_name, image_digest, restart_count, run, oci_revision, unit, ...",
        "value": "The value the runtime reported.",
    },
    "shape": {
        "key": "The configuration key (max_model_len, kv_cache_dtype, ...).",
        "value": "The value as a number, where it is one.",
        "value_text": "The value as printed.",
        "source": "Where it was printed: args, engine config, fact line, ...",
    },
    "fact": {
        "name": "The fact's name (docs/facts.md).",
        "value": "The figure in its unit (bytes, seconds, tokens, blocks, x).",
        "unit": "bytes, s, tokens, blocks or x.",
        "precision": "Half a unit of the last printed digit, in the fact's unit (0: exact).",
    },
    "failure": {
        "kind": "oom, worker_died, engine_init_failed, config_error, ... (docs/facts.md).",
        "phase": "Where it happened: model_load, profiling, graph_capture, runtime, ...",
        "figures": "The figures the failure printed (JSON: tried_to_allocate_bytes, ...).",
        "logged_at": "When it was logged (ISO 8601, as printed).",
    },
    "runtime_sample": {
        "kind": "engine_stats (a stats interval) or spec_decode (a speculative-decoding report).",
        "logged_at": "When the sample was logged (ISO 8601, as printed).",
        "engine": "The engine core that logged it (data-parallel engines log their own).",
        "prompt_throughput_tps": "Average prompt throughput over the interval (tokens/s).",
        "generation_throughput_tps": "Average generation (decode) throughput over the interval (tokens/s).",
        "running_reqs": "Requests running.",
        "waiting_reqs": "Requests waiting.",
        "swapped_reqs": "Requests swapped out (V0).",
        "pending_reqs": "Requests pending (V0).",
        "gpu_kv_cache_usage_pct": "GPU KV cache usage (%).",
        "cpu_kv_cache_usage_pct": "CPU KV cache usage (%, V0).",
        "prefix_cache_hit_rate_pct": "Prefix cache hit rate (%).",
        "spec_mean_acceptance_length": "Speculative decoding: mean acceptance length (tokens per step).",
        "spec_accepted_tokens": "Speculative decoding: accepted tokens in the report.",
        "spec_drafted_tokens": "Speculative decoding: drafted tokens in the report.",
        "spec_draft_acceptance_rate_pct": "Speculative decoding: draft acceptance rate (%).",
        "spec_per_position_acceptance": "Speculative decoding: acceptance rate per draft position, as printed.",
    },
    "runtime_sample_row": {
        "kind": "0: engine_stats, 1: spec_decode.",
        "logged_at_num": "Seconds since 1970 of the printed time (no zone: as printed).",
        "logged_at_text": "The printed time where it is not a plain one.",
        "engine": "The engine core that logged it.",
        "hundredths": "Bit mask: which figure_N hold integral hundredths.",
        **{f"figure_{i}": f"The kind's figure {i} (see runtime_sample)." for i in range(1, 10)},
        "spec_per_position_acceptance": "Per-position acceptance, as printed.",
    },
    "boot_runtime": {
        "engine_stats": "Engine-stats samples the boot holds.",
        "spec_decode": "Spec-decode samples the boot holds.",
        "last_sample_id": "The id of the boot's last sample.",
    },
    "kv_reference_candidate": {"sort_at": "What the group's earliest boot is chosen by."},
    "watch_alert": {
        "source": "The source the watch read (a file, stdin, container:NAME, unit:NAME).",
        "key": "What the alert is about, once per source: a restarted watch tells nothing twice.",
        "kind": "boot_failed, crashed, restart_loop, boot_verdict, kv_usage, decode_drop, hung, source_down, recovered.",
        "boot_id": "The boot it is about (null: the source).",
        "logged_at": "The log's time of what it is about (the log's clock).",
        "raised_at": "When the watch raised it (ISO 8601, UTC).",
        "state": "pending (not yet had by every sink) or delivered.",
        "delivered_at": "When every sink had it (ISO 8601, UTC).",
        "body": "The alert as JSON (the --format jsonl object).",
    },
    "watch": {
        "source": "What the watch reads (a file, stdin, container:NAME, unit:NAME).",
        "host": "The host it runs on.",
        "pid": "Its process id.",
        "started_at": "When it started (ISO 8601, UTC).",
        "seen_at": "Its last batch or heartbeat (ISO 8601, UTC; at least every ten seconds).",
        "live_boot_id": "The boot it is reading now (null: none).",
        "deploy_id": "The deploy its boots go to.",
        "stopped_at": "When it stopped (null: running, or killed if seen_at is old).",
    },
    "kv_cost_per_token": {
        "kv_cache_tokens": "KV cache tokens the boot printed.",
        "bytes_per_token": "kv_budget_bytes / kv_cache_tokens (bytes per token per rank).",
        "bytes_per_token_uncertainty": "bytes_per_token's uncertainty from the budget's precision (bytes).",
        "uncertainty_from": "exact, or printed precision.",
    },
    "kv_reference": {
        "ref_boot_id": "The boot whose bytes per token predict this boot's tokens.",
        "ref_chosen_by": "pinned (kv_reference_boot), or the earliest ready boot of the group.",
    },
    "kv_reconciliation": {
        "ref_boot_id": "The reference boot.",
        "ref_chosen_by": "pinned, or the earliest ready boot of the group.",
        "ref_bytes_per_token": "The reference's measured bytes per token.",
        "measured_tokens": "The KV cache tokens this boot printed.",
        "predicted_tokens": "kv_budget_bytes / ref_bytes_per_token, to the nearest whole token (tokens).",
        "relative_error": "(measured - predicted) / predicted.",
        "tolerance": "The relative error allowed: 0.1 %, widened by the printed precision.",
        "tolerance_note": "How the tolerance was made.",
    },
    "kv_formula": _FORMULA,
    "kv_formula_prediction": _FORMULA,
    "model_geometry": {
        "name": "The model's name as the logs print it (model='...').",
        "layout": "uniform, mla or hybrid: how the allocator sizes its KV.",
        "architecture": "The config's architectures[0].",
        "layers": "num_hidden_layers.",
        "attn_layers": "Layers with a KV cache of their own (full attention).",
        "num_kv_heads": "num_key_value_heads.",
        "head_size": "head_dim (or hidden_size / num_attention_heads).",
        "mamba_layers": "Linear-attention (mamba) layers of a hybrid model.",
        "model_dtype": "torch_dtype of the config.",
        "unsupported": "Why the allocator does not model this geometry (null: it does).",
        "figures": "Every figure read from the config (JSON).",
        "source": "Where the config came from (a path, or the Hugging Face cache).",
        "config_sha256": "sha256 of the config.json read.",
        "added_at": "When it was recorded (ISO 8601, UTC).",
    },
    "capacity_contract": {
        "kv_cache_tokens": "KV cache tokens the boot printed.",
        "max_model_len": "--max-model-len (tokens).",
        "contract_tokens": "max_num_seqs x max_model_len (tokens).",
        "margin_tokens": "kv_cache_tokens - contract_tokens.",
        "margin_bytes": "margin_tokens at the boot's bytes per token, to the nearest whole byte (bytes).",
        "verdict": "ok when the pool backs the contract, broken when it does not, insufficient without figures.",
    },
    "budget_ceilings": {
        "kv_pool_bytes": "The KV budget (bytes).",
        "weights_bytes": "The weights slab, else the model weights (bytes).",
        "weights_source": "Which figure weights_bytes is.",
        "vram_bytes": "kv_pool_bytes + weights_bytes (bytes).",
        "card_ceiling_source": "Where the card ceiling came from.",
        "host_pinned_bytes": "Pinned host memory: the fork's ledger, else pool + prefix tier (bytes).",
        "host_cap_bytes": "The host cap (`ledger deploy set host_cap_bytes=`, else the fork's; bytes).",
        "vram_margin_bytes": "card_ceiling_bytes - vram_bytes (bytes).",
        "vram_verdict": "ok within the ceiling, over past it, insufficient without it.",
        "host_margin_bytes": "host_cap_bytes - host_pinned_bytes (bytes).",
        "host_verdict": "ok within the cap, over past it, insufficient without it.",
    },
}

QUERIES: dict[str, dict[str, str]] = {
    "broken_contracts": {
        "title": "Broken capacity contracts",
        "description": "Boots whose KV pool does not back max_num_seqs x max_model_len.",
        "sql": "SELECT c.boot_id, d.label, b.started_at, c.kv_cache_tokens, c.max_num_seqs, c.max_model_len,\n"
               "       c.contract_tokens, c.margin_tokens\n"
               "FROM capacity_contract c JOIN boot b ON b.id = c.boot_id JOIN deploy d ON d.id = c.deploy_id\n"
               "WHERE c.verdict = 'broken' ORDER BY b.started_at DESC",
    },
    "ooms_by_phase": {
        "title": "OOMs by phase",
        "description": "Every out-of-memory failure, counted by the phase it struck in.",
        "sql": "SELECT phase, COUNT(*) AS ooms, COUNT(DISTINCT boot_id) AS boots\n"
               "FROM failure WHERE kind = 'oom' GROUP BY phase ORDER BY ooms DESC",
    },
    "kv_tokens_per_deploy": {
        "title": "KV tokens per deploy over time",
        "description": "Each ready boot's KV cache tokens and concurrency, by deploy, oldest first.",
        "sql": "SELECT d.label, d.commit_sha, d.image_digest, b.id AS boot_id, b.started_at,\n"
               "       k.kv_cache_tokens, k.max_model_len, k.max_num_seqs\n"
               "FROM boot_figures k JOIN boot b ON b.id = k.boot_id JOIN deploy d ON d.id = b.deploy_id\n"
               "WHERE b.outcome = 'ready' AND k.kv_cache_tokens IS NOT NULL ORDER BY d.id, b.started_at",
    },
    "off_predictions": {
        "title": "KV predictions off by more than their tolerance",
        "description": "Boots whose measured KV tokens disagree with their reference's bytes per token.",
        "sql": "SELECT boot_id, ref_boot_id, measured_tokens, predicted_tokens, relative_error, tolerance\n"
               "FROM kv_reconciliation WHERE verdict = 'off'",
    },
}


def _describe(table: str, column: str) -> str | None:
    described = _COLUMNS.get(table, {}).get(column) or _COMMON.get(column)
    if described:
        return described
    spec = FACTS.get(column)
    if spec is not None:
        return f"{spec.description[:1].upper()}{spec.description[1:]} ({spec.unit})."
    return None


def _unit(column: str) -> str | None:
    spec = FACTS.get(column)
    if spec is not None:
        return _PINT_UNITS.get(spec.unit)
    if column.endswith("_bytes"):
        return "byte"
    if column.endswith("_seconds"):
        return "second"
    return None


def metadata(schema: dict[str, list[str]], database: str = "ledger") -> dict[str, Any]:
    """Datasette's metadata object for a ledger whose tables and views have these columns
    (``schema``: name -> column names); ``database`` is the name Datasette gives the file (its
    stem: ``ledger`` for ledger.db).  Raises KeyError naming what has no description."""
    tables: dict[str, Any] = {}
    missing: list[str] = []
    for name, columns in sorted(schema.items()):
        description = _HIDDEN.get(name) or _TABLES.get(name)
        if description is None:
            missing.append(name)
            continue
        entry: dict[str, Any] = {"description": description, "columns": {}}
        units: dict[str, str] = {}
        for column in columns:
            said = _describe(name, column)
            if said is None:
                missing.append(f"{name}.{column}")
                continue
            entry["columns"][column] = said
            unit = _unit(column)
            if unit:
                units[column] = unit
        if units:
            entry["units"] = units
        if name in _HIDDEN:
            entry["hidden"] = True
        tables[name] = entry
    if missing:
        raise KeyError(f"no Datasette description for {', '.join(missing)}")
    return {
        "title": "vLLM boot ledger",
        "description": "Boots of vLLM deploys with every figure's evidence; see `ledger --help`.",
        "databases": {database: {"tables": tables, "queries": QUERIES}},
    }
