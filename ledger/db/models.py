"""The ledger's tables as SQLAlchemy 2 typed declarative models: the schema, spelled once.

Alembic (``ledger/migrations/``) creates and changes a ledger's tables to match these classes (a test
compares the migrated schema to them; ``alembic revision --autogenerate`` drafts the next
migration from them); ``python -m ledger.db.schema`` derives from them the column lists the
writes use and a new SQLite file's schema.  Column names follow the fact vocabulary.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    column,
    table,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from ledger.parsers.vocabulary import RUNTIME_SERIES


class Base(DeclarativeBase):
    pass


class Deploy(Base):
    """What was booted: the deploy repo's commit and the container image digest."""

    __tablename__ = "deploy"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # "commit=<sha>;image=<digest>" or "label=<label>" or "" — unique, so one row per deploy
    identity: Mapped[str] = mapped_column(String(300), unique=True)
    commit_sha: Mapped[str | None] = mapped_column(String(64))
    image_digest: Mapped[str | None] = mapped_column(String(80))
    label: Mapped[str | None] = mapped_column(String(200))
    dirty: Mapped[bool | None] = mapped_column(Boolean)
    created_at: Mapped[str] = mapped_column(String(32))
    boots: Mapped[list[Boot]] = relationship(back_populates="deploy")


class DeploySetting(Base):
    """Something the user records about a deploy: card_ceiling_bytes, host_cap_bytes,
    kv_reference_boot (``ledger deploy set``)."""

    __tablename__ = "deploy_setting"
    __table_args__ = (UniqueConstraint("deploy_id", "key", name="uq_deploy_setting"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    deploy_id: Mapped[int] = mapped_column(ForeignKey("deploy.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(80))
    value: Mapped[str] = mapped_column(Text)
    set_at: Mapped[str] = mapped_column(String(32))


class Boot(Base):
    """One start-up of the engine, read from one region of one log file."""

    __tablename__ = "boot"
    __table_args__ = (
        UniqueConstraint("content_sha256", name="uq_boot_content"),
        # newest first (history, a deploy's latest boot): walked, not sorted
        Index("ix_boot_started", "started_at", "id"),
        Index("ix_boot_deploy_started", "deploy_id", "started_at", "id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    deploy_id: Mapped[int] = mapped_column(ForeignKey("deploy.id"), index=True)
    # identity: a digest of every line the boot was read from (see parsers.boots)
    content_sha256: Mapped[str] = mapped_column(String(64))
    source_path: Mapped[str] = mapped_column(Text)
    source_sha256: Mapped[str | None] = mapped_column(String(64), index=True)  # null: stream cut short
    boot_index: Mapped[int] = mapped_column(Integer)
    first_line: Mapped[int] = mapped_column(Integer)
    last_line: Mapped[int] = mapped_column(Integer)
    engine_name: Mapped[str] = mapped_column(String(40))
    engine_version: Mapped[str | None] = mapped_column(String(80))
    engine_commit: Mapped[str | None] = mapped_column(String(40))
    image_digest_in_log: Mapped[str | None] = mapped_column(String(80))
    outcome: Mapped[str] = mapped_column(String(16), index=True)
    ended: Mapped[str | None] = mapped_column(String(16))  # stopped | crashed | failed | running (facts.md)
    stop_line: Mapped[int | None] = mapped_column(Integer)  # the first line of a requested stop
    started_at: Mapped[str | None] = mapped_column(String(32))
    year_inferred: Mapped[bool] = mapped_column(Boolean, default=False)
    ready_line: Mapped[int | None] = mapped_column(Integer)
    ready_at: Mapped[str | None] = mapped_column(String(32))
    ended_at: Mapped[str | None] = mapped_column(String(32))
    access_lines: Mapped[int] = mapped_column(Integer, default=0)
    request_lines: Mapped[int] = mapped_column(Integer, default=0)
    ingested_at: Mapped[str] = mapped_column(String(32))
    deploy: Mapped[Deploy] = relationship(back_populates="boots")
    facts: Mapped[list[Fact]] = relationship(back_populates="boot", order_by="Fact.id")
    failures: Mapped[list[Failure]] = relationship(back_populates="boot", order_by="Failure.id")
    shape: Mapped[list[Shape]] = relationship(back_populates="boot", order_by="Shape.id")


class Shape(Base):
    """A knob of the deploy: vLLM's own argument name, its value (JSON), where it came from."""

    __tablename__ = "shape"
    __table_args__ = (UniqueConstraint("boot_id", "key", name="uq_shape_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    boot_id: Mapped[int] = mapped_column(ForeignKey("boot.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(120))
    value: Mapped[str] = mapped_column(Text)  # JSON
    value_text: Mapped[str | None] = mapped_column(Text)  # the value as plain text, for SQL views
    source: Mapped[str] = mapped_column(String(16))  # args | engine_config | log | default
    line: Mapped[int | None] = mapped_column(Integer)
    pack: Mapped[str | None] = mapped_column(String(80))
    boot: Mapped[Boot] = relationship(back_populates="shape")


class Fact(Base):
    """One figure the log printed, with its evidence.  Never updated in place."""

    __tablename__ = "fact"
    __table_args__ = (Index("ix_fact_boot_name", "boot_id", "name"),)  # a boot's figure by name: one lookup
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    boot_id: Mapped[int] = mapped_column(ForeignKey("boot.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(120), index=True)
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(16))
    precision: Mapped[float | None] = mapped_column(Float)
    rank: Mapped[int | None] = mapped_column(Integer)
    process: Mapped[str | None] = mapped_column(String(80))
    line: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    pack: Mapped[str | None] = mapped_column(String(80))
    boot: Mapped[Boot] = relationship(back_populates="facts")


class Failure(Base):
    """A failure the log printed: kind, start-up phase, figures (JSON), evidence."""

    __tablename__ = "failure"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    boot_id: Mapped[int] = mapped_column(ForeignKey("boot.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(40), index=True)
    phase: Mapped[str] = mapped_column(String(16))
    line: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    rank: Mapped[int | None] = mapped_column(Integer)
    process: Mapped[str | None] = mapped_column(String(80))
    figures: Mapped[str] = mapped_column(Text)  # JSON {figure: value}
    pack: Mapped[str | None] = mapped_column(String(80))
    logged_at: Mapped[str | None] = mapped_column(String(32))
    boot: Mapped[Boot] = relationship(back_populates="failures")


class BootOrigin(Base):
    """Where a boot was read from when that was a container or a systemd unit, as its runtime
    reported it (``ledger ingest --container`` / ``--unit``; ``ledger.origins``): the container's
    id and name, its image id and digest, created and started times, restart count, the run of
    the container the boot is, the OCI labels of its image (``oci_revision``, ``oci_version``,
    ``oci_source``), the unit and its invocation.  Facts of the boot's deploy, kept with the
    boot so that they go where it goes (``ledger deploy move``)."""

    __tablename__ = "boot_origin"
    __table_args__ = (UniqueConstraint("boot_id", "key", name="uq_boot_origin_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    boot_id: Mapped[int] = mapped_column(ForeignKey("boot.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(80))
    value: Mapped[str] = mapped_column(Text)


class KvReferenceCandidate(Base):
    """A boot a group's KV predictions may be taken from: ready, with a KV budget and a token
    count, in a group (``boot_kv.group_key``).  Written in the boot's own transaction (the
    Writer, ``writes.insert_boot``) so that ``kv_reference`` finds a group's earliest ready
    boot by an index lookup instead of ranking every boot of the ledger; a boot's rows go with
    it (``ledger rm``), and the next earliest is then the reference."""

    __tablename__ = "kv_reference_candidate"
    __table_args__ = (Index("ix_kv_reference_candidate_group", "group_key", "sort_at", "boot_id"),)
    boot_id: Mapped[int] = mapped_column(ForeignKey("boot.id", ondelete="CASCADE"), primary_key=True,
                                         autoincrement=False)
    group_key: Mapped[str] = mapped_column(Text)
    # the window's order: started_at, a boot without one last
    sort_at: Mapped[str] = mapped_column(String(32))


class ModelGeometry(Base):
    """A model's geometry, under the name the logs print (``model='…'``): recorded by ``ledger
    model add``, or found read-only on this machine at ingest (the Hugging Face cache, the model
    path the log printed).  ``figures`` is what ``ledger.formula.predict`` reads (JSON);
    ``unsupported`` says why ``allocator.py`` cannot model it."""

    __tablename__ = "model_geometry"
    name: Mapped[str] = mapped_column(String(400), primary_key=True)
    layout: Mapped[str] = mapped_column(String(20))  # uniform | mla | hybrid-gdn | unsupported
    architecture: Mapped[str | None] = mapped_column(String(120))
    layers: Mapped[int] = mapped_column(Integer)
    attn_layers: Mapped[int | None] = mapped_column(Integer)
    num_kv_heads: Mapped[int | None] = mapped_column(Integer)
    head_size: Mapped[int | None] = mapped_column(Integer)
    mamba_layers: Mapped[int | None] = mapped_column(Integer)
    model_dtype: Mapped[str | None] = mapped_column(String(40))
    unsupported: Mapped[str | None] = mapped_column(Text)
    figures: Mapped[str] = mapped_column(Text)  # JSON
    source: Mapped[str] = mapped_column(Text)  # "model add PATH", "hf cache PATH", "model path PATH"
    config_sha256: Mapped[str | None] = mapped_column(String(64))
    added_at: Mapped[str] = mapped_column(String(32))


class KvFormulaPrediction(Base):
    """A boot's KV tokens predicted from its model's geometry by ``allocator.py`` for the boot's
    own budget and shape: written in the boot's transaction (``writes.insert_boot``), again for
    a model's boots when ``ledger model add`` brings its geometry, and for a deploy's boots when
    ``ledger deploy set D model=…`` names it.  ``status``: predicted | insufficient | unsupported,
    ``reason`` why not predicted; the ``kv_formula`` view sets it against the measured tokens."""

    __tablename__ = "kv_formula_prediction"
    boot_id: Mapped[int] = mapped_column(ForeignKey("boot.id", ondelete="CASCADE"), primary_key=True,
                                         autoincrement=False)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    model: Mapped[str | None] = mapped_column(Text)
    geometry: Mapped[str | None] = mapped_column(String(400))
    budget_bytes: Mapped[float | None] = mapped_column(Float)
    budget_source: Mapped[str | None] = mapped_column(String(40))
    budget_precision_bytes: Mapped[float | None] = mapped_column(Float)
    tensor_parallel_size: Mapped[int | None] = mapped_column(Integer)
    pipeline_parallel_size: Mapped[int | None] = mapped_column(Integer)
    block_size: Mapped[int | None] = mapped_column(Integer)
    kv_cache_dtype: Mapped[str | None] = mapped_column(String(40))
    max_model_len: Mapped[int | None] = mapped_column(Integer)
    engine_version: Mapped[str | None] = mapped_column(String(80))
    v0: Mapped[bool | None] = mapped_column(Boolean)
    predicted_blocks: Mapped[int | None] = mapped_column(BigInteger)
    predicted_tokens: Mapped[int | None] = mapped_column(BigInteger)
    predicted_tokens_low: Mapped[int | None] = mapped_column(BigInteger)
    predicted_tokens_high: Mapped[int | None] = mapped_column(BigInteger)
    predicted_concurrency: Mapped[float | None] = mapped_column(Float)
    assumed: Mapped[str | None] = mapped_column(Text)  # the vLLM defaults taken for what was not printed


class RuntimeSampleRow(Base):
    """One stats interval (engine_stats) or one speculative-decoding report (spec_decode), stored
    compactly; users read it through the ``runtime_sample`` view, which gives back every figure
    as the log printed it.

    * Clustered by boot (SQLite: ``WITHOUT ROWID``, the key ``(boot_id, id)``): a boot's samples
      are one range, and no separate index on ``boot_id``.
    * ``kind`` is a number (``staging.KIND_CODES``); the time (``YYYY-MM-DD HH:MM:SS``, no zone) as
      seconds since 1970-01-01 00:00:00 (``logged_at_num``), or the text itself where it is no
      real date and time
      (``logged_at_text``).
    * The figures are in ``figure_1``, ``figure_2``, … in the kind's series order (a stats
      interval's and a spec-decode report's share the columns); spec decode's per-position list
      is JSON in a column of its own.
    * ``hundredths`` = 1: every figure of the row is stored as an integral number of hundredths
      (SQLite keeps an integral REAL as a 1-4 byte integer), checked exact when written; 0: the
      figures as they are.
    """

    __tablename__ = "runtime_sample_row"
    __table_args__ = {"sqlite_with_rowid": False}
    boot_id: Mapped[int] = mapped_column(ForeignKey("boot.id", ondelete="CASCADE"), primary_key=True,
                                         autoincrement=False)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    kind: Mapped[int] = mapped_column(SmallInteger)
    line: Mapped[int] = mapped_column(Integer)
    logged_at_num: Mapped[int | None] = mapped_column(BigInteger)
    logged_at_text: Mapped[str | None] = mapped_column(String(32))
    engine: Mapped[int | None] = mapped_column(Integer)
    hundredths: Mapped[int] = mapped_column(SmallInteger)
    # the sample's numbers in its kind's series order (parsers.vocabulary.RUNTIME_KIND_SERIES)
    figure_1: Mapped[float | None] = mapped_column(Float)
    figure_2: Mapped[float | None] = mapped_column(Float)
    figure_3: Mapped[float | None] = mapped_column(Float)
    figure_4: Mapped[float | None] = mapped_column(Float)
    figure_5: Mapped[float | None] = mapped_column(Float)
    figure_6: Mapped[float | None] = mapped_column(Float)
    figure_7: Mapped[float | None] = mapped_column(Float)
    figure_8: Mapped[float | None] = mapped_column(Float)
    figure_9: Mapped[float | None] = mapped_column(Float)
    spec_per_position_acceptance: Mapped[str | None] = mapped_column(Text)  # JSON list


class BootRuntime(Base):
    """Per boot, how many samples of each kind it has and its last sample id: written with the
    samples, so ``ledger export`` counts without grouping every sample, and a new sample id is
    one index lookup past the ledger's last."""

    __tablename__ = "boot_runtime"
    boot_id: Mapped[int] = mapped_column(ForeignKey("boot.id", ondelete="CASCADE"), primary_key=True,
                                         autoincrement=False)
    engine_stats: Mapped[int] = mapped_column(Integer)
    spec_decode: Mapped[int] = mapped_column(Integer)
    last_sample_id: Mapped[int | None] = mapped_column(Integer, index=True)


# The runtime_sample view (ledger/migrations/versions/0004_*): the columns the table had, every figure
# as printed; what the queries read samples through (``RuntimeSample.c.kind == "engine_stats"``).
RUNTIME_SAMPLE_COLUMNS = ("id", "boot_id", "kind", "line", "logged_at", "engine", *RUNTIME_SERIES)
RuntimeSample = table("runtime_sample", *[column(c) for c in RUNTIME_SAMPLE_COLUMNS])


class Watch(Base):
    """A ``ledger watch`` that reads a source into the ledger: what it reads, where it runs,
    since when, and the boot it is reading while that one runs.  ``seen_at`` is touched at every
    batch and at least every ten seconds while idle, so a watch that was killed shows as gone
    (``ledger serve`` takes a watch for running while its row is under a minute old and it has
    not stopped).  The ids are plain numbers, not foreign keys: a watch's row does not keep a
    boot from ``ledger rm``."""

    __tablename__ = "watch"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(Text)
    host: Mapped[str | None] = mapped_column(String(255))
    pid: Mapped[int | None] = mapped_column(Integer)
    started_at: Mapped[str] = mapped_column(String(32))
    seen_at: Mapped[str] = mapped_column(String(32))
    live_boot_id: Mapped[int | None] = mapped_column(Integer)
    deploy_id: Mapped[int | None] = mapped_column(Integer)
    stopped_at: Mapped[str | None] = mapped_column(String(32))


class WatchAlert(Base):
    """An alert a watch raised, kept so it is delivered at least once and told once: written in
    the transaction that stores what it tells (a boot's outcome), ``pending`` until stdout and
    every sink had it (then ``delivered``), resent by the next watch of the source if it is
    still pending (a kill came between); ``backlog`` for one not told because it was in what
    the source held when the first watch of it began (docs/watch.md).  ``key`` is what the alert
    is about (its kind, boot, incident): a restarted watch that reads the source again finds it
    here and does not tell it again.  ``body`` is the alert as it was raised (JSON)."""

    __tablename__ = "watch_alert"
    __table_args__ = (UniqueConstraint("source", "key", name="uq_watch_alert_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(Text)
    key: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(32))
    boot_id: Mapped[int | None] = mapped_column(Integer)
    logged_at: Mapped[str | None] = mapped_column(String(32))
    raised_at: Mapped[str] = mapped_column(String(32))
    state: Mapped[str] = mapped_column(String(16))
    delivered_at: Mapped[str | None] = mapped_column(String(32))
    body: Mapped[str] = mapped_column(Text)
