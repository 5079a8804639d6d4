"""What the read commands read through: SQL text on a plain connection, and the rows it gives as
light records (no ORM).

``Ledger.reading()`` gives a ``Reader``: on a SQLite ledger a ``sqlite3`` connection (so
``ledger history``, ``show``, ``check`` … never import SQLAlchemy: a third of a second, most of
a read command's time), on PostgreSQL a SQLAlchemy connection (its driver path).  The SQL is
written once for both: named ``:parameters`` (sqlite3 takes them as they are, SQLAlchemy's
``text`` too), ``IN`` lists spelled out by ``in_list``, no dialect-only syntax.

The records carry the ORM models' attribute names (``Boot.deploy``, ``Boot.facts`` …) with the
values as the ORM typed them (``Boolean`` columns as bool), so the readers change little.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

# how many ids one ``IN (...)`` list holds (SQLite's default limit on parameters is 32766;
# PostgreSQL plans a long list slowly)
IN_CHUNK = 500


class Reader:
    """Rows of SQL text, on a sqlite3 connection or a SQLAlchemy one."""

    def __init__(self, conn: Any, sqlalchemy: bool = False):
        self.conn, self.sqlalchemy = conn, sqlalchemy

    def _execute(self, sql: str, params: dict[str, Any] | None) -> Any:
        if self.sqlalchemy:
            from sqlalchemy import text

            return self.conn.execute(text(sql), params or {})
        return self.conn.execute(sql, params or {})

    def tuples(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._execute(sql, params)]

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Each row as a dict of its columns (by the names the statement gives them)."""
        if self.sqlalchemy:
            return [dict(r._mapping) for r in self._execute(sql, params)]
        cur = self._execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur]

    def one(self, sql: str, params: dict[str, Any] | None = None) -> tuple[Any, ...] | None:
        row = self._execute(sql, params).fetchone()
        return None if row is None else tuple(row)

    def scalar(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    def scalars(self, sql: str, params: dict[str, Any] | None = None) -> list[Any]:
        return [r[0] for r in self._execute(sql, params)]

    def batches(self, sql: str, params: dict[str, Any] | None, n: int) -> Iterator[list[tuple[Any, ...]]]:
        """The rows ``n`` at a time, as the database gives them (memory stays flat)."""
        if self.sqlalchemy:
            from sqlalchemy import text

            result = self.conn.execution_options(yield_per=n).execute(text(sql), params or {})
            for part in result.partitions():
                yield [tuple(r) for r in part]
            return
        cur = self.conn.execute(sql, params or {})
        while batch := cur.fetchmany(n):
            yield batch


def in_list(name: str, values: list[Any], params: dict[str, Any]) -> str:
    """``(:name_0, :name_1, …)`` for an ``IN``, its values put in ``params``; ``(NULL)`` for none
    (an ``IN`` that matches nothing)."""
    if not values:
        return "(NULL)"
    for i, v in enumerate(values):
        params[f"{name}_{i}"] = v
    return "(" + ", ".join(f":{name}_{i}" for i in range(len(values))) + ")"


def chunks(items: list[Any], n: int = IN_CHUNK) -> Iterator[list[Any]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


# -- records ---------------------------------------------------------------------------------------


class Record:
    __slots__: tuple[str, ...] = ()
    COLUMNS: tuple[str, ...] = ()
    # each column's slot setter, in COLUMNS' order: a row is set through them (twice the speed
    # of object.__setattr__ by name; a history of 90 boots makes some 300 records)
    _SETTERS: tuple[Callable[[Any, Any], None], ...] = ()

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        cls._SETTERS = tuple(getattr(cls, name).__set__ for name in cls.COLUMNS)

    def __init__(self, *values: Any):
        for put, value in zip(self._SETTERS, values, strict=True):
            put(self, value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={getattr(self, 'id', None)!r})"


def _bool(v: Any) -> bool | None:
    return None if v is None else bool(v)


class Deploy(Record):
    COLUMNS = ("id", "identity", "commit_sha", "image_digest", "label", "dirty", "created_at")
    __slots__ = COLUMNS
    id: int
    identity: str
    commit_sha: str | None
    image_digest: str | None
    label: str | None
    dirty: bool | None
    created_at: str

    def __init__(self, *values: Any):
        super().__init__(*values)
        self.dirty = _bool(self.dirty)


class Boot(Record):
    COLUMNS = ("id", "deploy_id", "content_sha256", "source_path", "source_sha256", "boot_index", "first_line",
               "last_line", "engine_name", "engine_version", "engine_commit", "image_digest_in_log", "outcome",
               "ended", "stop_line", "started_at", "year_inferred", "ready_line", "ready_at", "ended_at", "access_lines",
               "request_lines", "ingested_at")
    __slots__ = (*COLUMNS, "deploy", "facts", "failures", "shape")
    id: int
    deploy_id: int
    source_path: str
    source_sha256: str | None
    first_line: int
    last_line: int
    engine_name: str
    engine_version: str | None
    engine_commit: str | None
    outcome: str
    ended: str | None
    stop_line: int | None
    started_at: str | None
    year_inferred: bool
    ready_at: str | None
    ended_at: str | None
    access_lines: int
    request_lines: int
    deploy: Deploy
    facts: list[Fact]
    failures: list[Failure]
    shape: list[Shape]

    def __init__(self, *values: Any):
        super().__init__(*values)
        self.year_inferred = bool(self.year_inferred)


class Fact(Record):
    COLUMNS = ("id", "boot_id", "name", "value", "unit", "precision", "rank", "process", "line", "text", "pack")
    __slots__ = COLUMNS
    id: int
    boot_id: int
    name: str
    value: float
    unit: str
    precision: float | None
    rank: int | None
    process: str | None
    line: int
    text: str
    pack: str | None


class Failure(Record):
    COLUMNS = ("id", "boot_id", "kind", "phase", "line", "text", "rank", "process", "figures", "pack", "logged_at")
    __slots__ = COLUMNS
    id: int
    boot_id: int
    kind: str
    phase: str
    line: int
    text: str
    rank: int | None
    figures: str
    logged_at: str | None


class Shape(Record):
    COLUMNS = ("id", "boot_id", "key", "value", "value_text", "source", "line", "pack")
    __slots__ = COLUMNS
    id: int
    boot_id: int
    key: str
    value: str
    source: str
    line: int | None


def _select(record: type[Record], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(f'{prefix}"{c}"' for c in record.COLUMNS)


BOOT_COLUMNS = _select(Boot)
DEPLOY_COLUMNS = _select(Deploy)


def deploys_where(r: Reader, where: str = "1 = 1", params: dict[str, Any] | None = None) -> list[Deploy]:
    return [Deploy(*row) for row in r.tuples(f"SELECT {DEPLOY_COLUMNS} FROM deploy WHERE {where} ORDER BY id",
                                             params)]


def get_deploy(r: Reader, deploy_id: int) -> Deploy | None:
    found = deploys_where(r, "id = :id", {"id": deploy_id})
    return found[0] if found else None


def deploys_by_id(r: Reader, ids: list[int]) -> dict[int, Deploy]:
    out: dict[int, Deploy] = {}
    for chunk in chunks(sorted(set(ids))):
        params: dict[str, Any] = {}
        out.update((d.id, d) for d in deploys_where(r, f"id IN {in_list('d', chunk, params)}", params))
    return out


def with_deploys(r: Reader, boots: list[Boot]) -> list[Boot]:
    """The boots, each with its ``deploy``."""
    deploys = deploys_by_id(r, [b.deploy_id for b in boots])
    for b in boots:
        b.deploy = deploys[b.deploy_id]
    return boots


def _children(r: Reader, record: type[Record], table: str, boot_ids: list[int]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = defaultdict(list)
    for chunk in chunks(boot_ids):
        params: dict[str, Any] = {}
        for row in r.tuples(f"SELECT {_select(record)} FROM {table} WHERE boot_id IN {in_list('b', chunk, params)} "
                            "ORDER BY id", params):
            rec = record(*row)
            out[rec.boot_id].append(rec)  # type: ignore[attr-defined]
    return out


def facts_of(r: Reader, boot_ids: list[int]) -> dict[int, list[Fact]]:
    """Per boot, its facts in the order they were stored (by id)."""
    return _children(r, Fact, "fact", boot_ids)


def with_children(r: Reader, boots: list[Boot], facts: bool = True, failures: bool = True,
                  shape: bool = True) -> list[Boot]:
    """The boots with their deploy and (as asked) facts, failures and shape, each by id."""
    with_deploys(r, boots)
    ids = [b.id for b in boots]
    for wanted, attr, record, table in ((facts, "facts", Fact, "fact"), (failures, "failures", Failure, "failure"),
                                        (shape, "shape", Shape, "shape")):
        if wanted:
            found = _children(r, record, table, ids)
            for b in boots:
                setattr(b, attr, found.get(b.id, []))
    return boots


def boots_where(r: Reader, where: str, params: dict[str, Any] | None = None, order: str = "id") -> list[Boot]:
    return [Boot(*row) for row in r.tuples(f"SELECT {BOOT_COLUMNS} FROM boot WHERE {where} ORDER BY {order}",
                                           params)]


def get_boot(r: Reader, boot_id: int, **children: bool) -> Boot | None:
    """One boot with its deploy (and ``children`` as ``with_children`` takes them: none by default)."""
    found = boots_where(r, "id = :id", {"id": boot_id})
    if not found:
        return None
    if children:
        return with_children(r, found, **{"facts": False, "failures": False, "shape": False, **children})[0]
    return with_deploys(r, found)[0]


def shape_values(boot: Boot) -> dict[str, Any]:
    """A boot's shape as it was printed (each value read from its JSON)."""
    return {sh.key: json.loads(sh.value) for sh in boot.shape}
