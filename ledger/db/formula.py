"""The formula's writes, through a ``Writer``: a boot's ``kv_formula_prediction`` row (in the
transaction that writes the boot, or that brings its model's geometry), and ``model_geometry``
rows (``ledger model add``, or a config.json found read-only on this machine at ingest).

The arithmetic is ``ledger.formula`` (pure); this module reads the boot's printed inputs back
with SQL in the caller's transaction, so the prediction sees exactly what the views see.  The
writer storing a boot hands over what it holds of it already (``Known``: its shape values, the
facts the prediction looks at, its runtime samples' count), so only what the views derive and the
deploy's settings are read back.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from ledger import formula as f
from ledger.settings import FORMULA_SETTINGS

from .writer import Writer

GEOMETRY_COLUMNS = ("name", "layout", "architecture", "layers", "attn_layers", "num_kv_heads", "head_size",
                    "mamba_layers", "model_dtype", "unsupported", "figures", "source", "config_sha256", "added_at")
SHAPE_KEYS = ("pipeline_parallel_size", "dtype", "decode_context_parallel_size", "num_gpu_blocks_override",
               "speculative_config", "device_config")


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


# the prediction's shape columns are 32-bit integers (0009): a hostile args line's
# max_model_len of 10**18 is no shape an engine runs, and on PostgreSQL it failed the boot's
# whole transaction ("out of range for type integer")
_LARGEST_SHAPE = 2**31 - 1


def _int(value: Any) -> int | None:
    """A shape value as the prediction takes it, or None (not read) for what is not a whole
    number a 32-bit column holds."""
    try:
        number = int(float(value)) if value is not None else None
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number is None or abs(number) <= _LARGEST_SHAPE else None


BUDGET_FACTS = ("available_kv_cache_bytes", "kv_cache_reserved_bytes")  # whose processes tell the TP


@dataclass
class Known:
    """What the writer of a boot holds of it in memory, as ``boot_inputs`` would read it back:
    the boot's ``SHAPE_KEYS`` shape values (as ``shape.value_text``), the least
    ``max_concurrency_tokens`` fact, the process and rank of each ``BUDGET_FACTS`` fact, whether
    an args dump or the engine config line was read, and its ``spec_decode`` samples."""

    shape: dict[str, str | None] = field(default_factory=dict)
    concurrency_tokens: float | None = None
    budget_processes: list[tuple[str | None, int | None]] = field(default_factory=list)
    args_printed: bool = False
    spec_decode_samples: int = 0


def boot_inputs(writer: Writer, cur: Any, boot_id: int, known: Known | None = None) -> tuple[f.BootInputs, list[str]]:
    """What the boot printed that the prediction takes, and what was taken from elsewhere: the
    deploy's ``model``, ``tensor_parallel_size`` and ``speculative_method`` settings, for a log
    that prints none.  ``known``: what the boot's writer holds of it, not read again."""
    q = writer.mark
    cur.execute("SELECT model, engine_version, kv_cache_dtype, tensor_parallel_size, block_size, max_model_len, "
                f"kv_budget_bytes, kv_budget_source, kv_budget_precision_bytes, kv_cache_tokens, deploy_id "
                f"FROM boot_kv WHERE boot_id = {q}", (boot_id,))
    row = cur.fetchone()
    if row is None:
        return f.BootInputs(), []
    model, version, kv_dtype, tp, bs, L, budget, source, prec, tokens, deploy = row
    if known is None:
        known = _read_known(writer, cur, boot_id)
    shape = known.shape
    notes = []
    if not L:  # "Maximum concurrency for N tokens per request" prints the length it divides by
        L = known.concurrency_tokens
    # what the log does not print, a deploy setting may state (``ledger deploy set``); the log comes first
    cur.execute(f"SELECT \"key\", value FROM deploy_setting WHERE deploy_id = {q} AND \"key\" IN "
                f"({', '.join([q] * len(FORMULA_SETTINGS))})", (deploy, *FORMULA_SETTINGS))
    stated = dict(cur.fetchall())
    if not model and stated.get("model"):
        model = stated["model"]
        notes.append("model not printed: the deploy's model setting")
    inputs = f.BootInputs(
        model=model, engine_version=version, kv_cache_dtype=kv_dtype, dtype=shape.get("dtype"),
        tensor_parallel_size=_int(tp), pipeline_parallel_size=_int(shape.get("pipeline_parallel_size")),
        decode_context_parallel_size=_int(shape.get("decode_context_parallel_size")), block_size=_int(bs),
        device=shape.get("device_config"),
        max_model_len=_int(L), budget_bytes=budget, budget_source=source, budget_precision_bytes=prec,
        num_gpu_blocks_override=_int(shape.get("num_gpu_blocks_override")),
        speculative=shape.get("speculative_config"), v1_tokens_printed=tokens is not None,
        args_printed=known.args_printed, budget_processes=known.budget_processes,
        stated_tensor_parallel_size=_int(stated.get("tensor_parallel_size")),
        stated_speculative_method=stated.get("speculative_method"),
        spec_decode_samples=known.spec_decode_samples)
    return inputs, notes


def _read_known(writer: Writer, cur: Any, boot_id: int) -> Known:
    """``Known`` of a stored boot, read back (a boot predicted again, or one ``ledger copy`` wrote)."""
    q = writer.mark
    cur.execute(f'SELECT "key", value_text FROM shape WHERE boot_id = {q} AND "key" IN '
                f"({', '.join([q] * len(SHAPE_KEYS))})", (boot_id, *SHAPE_KEYS))
    shape = dict(cur.fetchall())
    cur.execute(f"SELECT MIN(value) FROM fact WHERE boot_id = {q} AND name = 'max_concurrency_tokens'", (boot_id,))
    concurrency = cur.fetchone()[0]
    cur.execute(f"SELECT process, rank FROM fact WHERE boot_id = {q} AND name IN "
                f"({', '.join([q] * len(BUDGET_FACTS))})", (boot_id, *BUDGET_FACTS))
    processes = [(p, r) for p, r in cur.fetchall()]
    cur.execute(f"SELECT COUNT(*) FROM shape WHERE boot_id = {q} AND source IN ('args', 'engine_config')", (boot_id,))
    args_printed = cur.fetchone()[0] > 0
    cur.execute(f"SELECT spec_decode FROM boot_runtime WHERE boot_id = {q}", (boot_id,))
    runtime = cur.fetchone()
    return Known(shape, concurrency, processes, args_printed, (runtime[0] or 0) if runtime else 0)


def geometry_for(writer: Writer, cur: Any, model: str) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """The recorded geometry of a printed model (its name, figures), else one found read-only on
    this machine (then recorded, so ``ledger model list`` shows where it came from); a reason
    when a config was found but cannot be read."""
    names = f.names_for(model)
    q = writer.mark
    cur.execute(f"SELECT name, figures FROM model_geometry WHERE name IN ({', '.join([q] * len(names))})", names)
    found = dict(cur.fetchall())
    for name in names:
        if name in found:
            return name, json.loads(found[name]), None
    path, _ = f.find_config(model)
    if path is None:
        return None, None, None
    try:
        data, sha = f.read_config(path)
        figures = f.model_figures(data)
    except f.ConfigError as exc:
        return None, None, f"the config.json found for {model!r} cannot be used: {exc}"
    where = "model path" if f.is_local_path(model) and not str(path).startswith(str(f.hub_cache())) else "hf cache"
    name = names[0]
    put_geometry(writer, cur, name, figures, f"{where} {path}", sha)
    # the boots of this model stored before it was found on this machine are predicted now too
    repredict(writer, cur, boots_of_model(writer, cur, name))
    return name, figures, None


def put_geometry(writer: Writer, cur: Any, name: str, figures: dict[str, Any], source: str,
                 sha256: str | None) -> dict[str, Any] | None:
    """Record (or replace) a model's geometry, in the caller's transaction; the one it replaced
    (its figures, where it came from and when), or None."""
    q = writer.mark
    cur.execute(f"SELECT figures, source, config_sha256, added_at FROM model_geometry WHERE name = {q}", (name,))
    row = cur.fetchone()
    replaced = None if row is None else {"figures": json.loads(row[0]) if row[0] else {}, "source": row[1],
                                         "config_sha256": row[2], "added_at": row[3]}
    cur.execute(f"DELETE FROM model_geometry WHERE name = {q}", (name,))
    row = {"name": name, "layout": figures.get("layout"), "architecture": figures.get("architecture"),
           "layers": figures.get("layers"), "attn_layers": figures.get("attn_layers"),
           "num_kv_heads": figures.get("num_kv_heads"), "head_size": figures.get("head_size"),
           "mamba_layers": figures.get("mamba_layers"), "model_dtype": figures.get("model_dtype"),
           "unsupported": figures.get("unsupported"), "figures": json.dumps(figures, sort_keys=True),
           "source": source, "config_sha256": sha256, "added_at": _now()}
    cols = ", ".join(f'"{c}"' for c in GEOMETRY_COLUMNS)
    cur.execute(f"INSERT INTO model_geometry ({cols}) VALUES ({', '.join([q] * len(GEOMETRY_COLUMNS))})",
                tuple(row[c] for c in GEOMETRY_COLUMNS))
    return replaced


def record_kv_formula(writer: Writer, cur: Any, boot_id: int, known: Known | None = None) -> None:
    """The boot's prediction from its model's geometry (replacing any it had), in the caller's
    transaction: the one that writes the boot, or that changes its model's geometry.
    ``known``: what the boot's writer holds of it (``boot_inputs``)."""
    inputs, notes = boot_inputs(writer, cur, boot_id, known)
    name, figures, problem = geometry_for(writer, cur, inputs.model) if inputs.model else (None, None, None)
    p = f.predict(inputs, name, figures)
    if problem and p.status == "insufficient":
        p.reason = problem
    p.assumed = notes + p.assumed
    row = {"boot_id": boot_id, **p.row()}
    q = writer.mark
    cur.execute(f"DELETE FROM kv_formula_prediction WHERE boot_id = {q}", (boot_id,))
    cols = ", ".join(f'"{c}"' for c in row)
    cur.execute(f"INSERT INTO kv_formula_prediction ({cols}) VALUES ({', '.join([q] * len(row))})",
                tuple(row.values()))


def boots_of_model(writer: Writer, cur: Any, name: str) -> list[int]:
    """The boots whose printed model (or, printing none, whose deploy's ``model`` setting) is
    recorded under ``name``."""
    q = writer.mark
    # as printed, with a trailing slash, or a hub-cache path of that repo (names_for decides)
    hub = "%models--" + name.replace("/", "--") + "%" if "/" in name and not f.is_local_path(name) else name
    cur.execute(f"SELECT boot_id, value_text FROM shape WHERE \"key\" = 'model' AND "
                f"(value_text = {q} OR value_text = {q} OR value_text LIKE {q})", (name, name + "/", hub))
    ids = {bid for bid, value in cur.fetchall() if value and name in f.names_for(value)}
    cur.execute("SELECT b.id, s.value FROM boot b JOIN deploy_setting s ON s.deploy_id = b.deploy_id "
                "AND s.\"key\" = 'model'")
    ids |= {bid for bid, value in cur.fetchall() if value and name in f.names_for(value)}
    return sorted(ids)


def repredict(writer: Writer, cur: Any, boot_ids: list[int]) -> None:
    for bid in boot_ids:
        record_kv_formula(writer, cur, bid)


def repredict_deploy(writer: Writer, cur: Any, deploy: int) -> None:
    """Every boot of a deploy predicted again (its ``model`` setting changed)."""
    cur.execute(f"SELECT id FROM boot WHERE deploy_id = {writer.mark}", (deploy,))
    repredict(writer, cur, [r[0] for r in cur.fetchall()])
