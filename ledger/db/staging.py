"""Runtime samples on their way into the ledger: a few thousand in memory and the rest in a
private temporary SQLite database (``Staging``), until their boot's transaction copies them in
(``writes.store_boot``).  A weeks-long boot costs no more memory than a short one, and a killed
ingest leaves nothing behind (SQLite removes its temporary file)."""

from __future__ import annotations

import collections
import datetime as dt
import itertools
import math
import operator
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

from ledger import parsers
from ledger.parsers.vocabulary import RUNTIME_KIND_SERIES, RUNTIME_KINDS

from .columns import COLUMNS
from .writer import Writer, to_json

# Python 3.11's sqlite3 binds a None through its adapter lookup (a registry miss, then two failed
# attribute lookups on the protocol and on None): ~0.2-0.5 us a value, and a staged row holds
# several (the figures a sample does not print).  An adapter of None to None is found at once,
# and binds the same NULL: an 8-column row with 4 Nones 3.2-4.3 -> 2.3 us (measured with
# executemany, 200,000 rows).  The adapter is a built-in (an empty dict's ``get``: None for
# None), not a lambda: no Python frame per value (the 192,054 staged rows of the 504 MB gen log
# bind 877,000 Nones: 6 % of the staging's instructions).  Registered for the process: it
# changes no value anywhere.
_NONE_TO_NONE = cast("Callable[[None], None]", {}.get)
sqlite3.register_adapter(type(None), _NONE_TO_NONE)

# runtime_sample_row: where a sample is (and whose) and how it is stored, then its figures —
# the numbers in figure_1, figure_2, … in its kind's series order, and spec decode's per-position
# list (JSON)
SAMPLE_PLACE = ("boot_id", "kind", "line", "logged_at_num", "logged_at_text", "engine", "hundredths")
STORED_SERIES = [c for c in COLUMNS["runtime_sample_row"] if c not in SAMPLE_PLACE]
PER_POSITION = "spec_per_position_acceptance"
STORED_FIGURES = [c for c in STORED_SERIES if c != PER_POSITION]
# per kind, the series stored in figure_1, figure_2, …
FIGURE_SERIES = {kind: [s for s in series if s != PER_POSITION] for kind, series in RUNTIME_KIND_SERIES.items()}
# the number a sample's kind is stored as (the ``runtime_sample`` view names it again)
KIND_CODES = {"engine_stats": 0, "spec_decode": 1}


class Staging:
    """Where the runtime samples of an ingest wait for their boot's transaction: a private
    temporary SQLite database (SQLite's own temporary file, gone when its connection closes,
    even if the process is killed), so memory stays flat and the rows are bound while the log
    is still being read.  For a SQLite ledger it is attached to the writer's connection, and a
    boot's samples go in with one INSERT … SELECT; for another database they are read back in
    batches."""

    def __init__(self, writer: Writer | None):
        self.writer = writer
        self.raw: sqlite3.Connection | None = None
        self.schema = ""
        self.attached = False  # to the writer's own connection (a SQLite ledger)
        self._tables = 0

    def new_table(self, columns: list[str]) -> str:
        if self.raw is None:
            if self.writer is not None and self.writer.is_sqlite:
                self.raw = self.writer.conn
                self.raw.execute("ATTACH DATABASE '' AS staging")  # '': a private temporary database
                self.schema, self.attached = "staging.", True
            else:
                self.raw = sqlite3.connect("", isolation_level=None)
            # nothing here is ever rolled back or needed after a crash: no journal (dropping the
            # tables wrote every page to one again) and no syncs
            for pragma in ("journal_mode = OFF", "synchronous = OFF"):
                self.raw.execute(f"PRAGMA {self.schema}{pragma}")
        self._tables += 1
        name = f"{self.schema}samples_{self._tables}"
        self.raw.execute(f"CREATE TABLE {name} ({', '.join(columns)})")
        return name

    def connection(self) -> sqlite3.Connection:
        """The staging database's connection (the writer's own, for an attached one); open once
        ``new_table`` made the first table."""
        if self.raw is None:
            raise RuntimeError("no staging table yet")
        return self.raw

    def close(self) -> None:
        if self.raw is None:
            return
        if self.attached:
            try:
                self.raw.execute("DETACH DATABASE staging")
            except sqlite3.OperationalError:
                # still in use by a statement an interrupt (Ctrl-C) cut short: it goes with the
                # connection, and the interrupt, not this, is what the user hears of
                pass
        else:
            self.raw.close()
        self.raw, self.attached = None, False


class SampleSpool:
    """Runtime samples of one boot on their way to the database: a few thousand in memory, the
    rest in one table of the ingest's ``Staging``, so a weeks-long boot costs no more memory
    than a short one.  Every row is ``stored_row``'s, of one width for both kinds (the columns a
    kind does not print are NULL), and a staged row's rowid is its order among the boot's
    samples: the rows go in as they are (none built again with its number), and the boot's
    transaction copies them in one scan of one table (two kinds' tables merged by their order
    cost that copy 18 % more instructions: 2,267 M against 1,861 M for 192,054 samples)."""

    LIMIT = 5000

    def __init__(self, staging: Staging | None = None) -> None:
        self.rows: list[tuple] = []  # the rows held in memory, in the order the samples came in
        self.held = 0  # rows in memory
        self.seq = 0  # samples so far: the last one's order among the boot's samples
        self.staging = staging
        self.table: str | None = None  # the staging table, once rows were moved there
        self.flushed: dict[str, int] = dict.fromkeys(RUNTIME_KINDS, 0)  # rows moved to the staging table, by kind

    def _staging(self) -> Staging:
        if self.staging is None:
            raise RuntimeError("this spool has no Staging: its rows stay in memory")
        return self.staging

    def add(self, samples: Sequence[parsers.RuntimeSample | tuple[Any, ...]]) -> None:
        """Take a boot's next samples, each a RuntimeSample or already its ``stored_row``."""
        make = _ROWS
        # a stored_row (a plain tuple) was worked out as the log was read
        self.rows += [s if type(s) is tuple else make[s[0]](s) for s in samples]
        self.seq += len(samples)
        self.held += len(samples)
        if self.held >= self.LIMIT and self.staging is not None:
            self.flush()

    def flush(self) -> None:
        """Move the rows held in memory into the staging table."""
        if not self.rows:
            return
        staging = self._staging()
        if self.table is None:
            self.table = staging.new_table(list(_SPOOL_COLUMNS))
        cur = staging.connection().cursor()
        cur.execute("BEGIN")  # touches the staging database only: the ledger is not locked
        rows = self.rows
        whole = len(rows) - len(rows) % _ROWS_PER_INSERT
        if whole:
            # _ROWS_PER_INSERT rows a statement, their values bound as one flat list
            values = list(itertools.chain.from_iterable(rows[:whole] if whole < len(rows) else rows))
            step = _ROWS_PER_INSERT * len(_SPOOL_COLUMNS)
            insert = f"INSERT INTO {self.table} VALUES {', '.join([_ROW_VALUES] * _ROWS_PER_INSERT)}"
            for at in range(0, len(values), step):
                cur.execute(insert, values[at : at + step])
        if whole < len(rows):
            cur.executemany(f"INSERT INTO {self.table} VALUES {_ROW_VALUES}", rows[whole:])
        cur.execute("COMMIT")
        cur.close()
        for kind, n in self._kinds(self.rows).items():
            self.flushed[kind] += n
        self.rows = []
        self.held = 0

    @staticmethod
    def _kinds(rows: list[tuple]) -> dict[str, int]:
        by_code = collections.Counter(map(_KIND_CODE, rows))
        return {kind: by_code.get(code, 0) for kind, code in KIND_CODES.items()}

    def counts(self) -> dict[str, int]:
        """The samples of each kind held so far (in memory and staged)."""
        held = self._kinds(self.rows)
        return {kind: self.flushed[kind] + held[kind] for kind in RUNTIME_KINDS}

    def batches(self) -> Iterator[list[tuple[Any, ...]]]:
        """Every row as (kind, line, stamp, engine, hundredths, *STORED_FIGURES, per-position),
        in the order the samples came in, a list at a time; each call reads from the start (a
        retried transaction)."""
        staged: Any = ()
        if self.table is not None:
            staged = self._staging().connection().execute(
                f"SELECT {', '.join(_SPOOL_COLUMNS)} FROM {self.table} ORDER BY rowid")
        batch: list[tuple] = []
        for row in itertools.chain(staged, self.rows):
            batch.append(row)
            if len(batch) >= self.LIMIT:
                yield batch
                batch = []
        if batch:
            yield batch

    def close(self) -> None:
        if self.staging is not None and self.staging.raw is not None and self.table is not None:
            self.staging.raw.execute(f"DROP TABLE {self.table}")
        self.table = None
        self.rows = []
        self.flushed = dict.fromkeys(RUNTIME_KINDS, 0)


# a spooled row, of either kind: what runtime_sample_row stores of a sample but boot_id, id and
# the time — its kind's code, then the figures already in figure_1, figure_2, … (integral
# hundredths where that is exact), so the boot's transaction only adds the time — with vLLM's
# stamp (no year: that is known when the boot ends) as ``stamp_code`` spools it
_SPOOL_COLUMNS = ("kind", "line", "stamp", "engine", "hundredths", *STORED_SERIES)
_ROW_VALUES = f"({', '.join(['?'] * len(_SPOOL_COLUMNS))})"
# Rows staged a statement: many rows in one INSERT … VALUES (…), (…) cost 16 % fewer instructions
# than executemany's statement per row (callgrind, the 504 MB gen log's 192,054 rows: the same
# from 50 to 250 rows a statement).  999 // 15 = 66: within SQLite's bound on a statement's
# parameters before 3.32 (999; 32,766 since)
_ROWS_PER_INSERT = 999 // len(_SPOOL_COLUMNS)
_KIND_CODE = operator.itemgetter(0)


def in_hundredths(value: float) -> bool:
    """Whether ``value`` comes back exactly as its integral hundredths divided by 100."""
    return math.isfinite(value) and round(value * 100) / 100.0 == value


# A spooled stamp: vLLM's "MM-DD HH:MM:SS" (no year: that is known when the boot ends) as the
# seconds from 2000-01-01 00:00:00 to that moment of 2000, a leap year, when it is one (canonical:
# what SQLite's datetime() gives back as it is), so that the boot's transaction only adds its
# year's start (and, in a common year, takes a day off after February: writes._sample_sql); any
# other stamp as its text, which the transaction converts as before.  In SQL per row the date
# functions cost ~2 us a sample; here, one conversion per distinct stamp (a served log repeats
# each second's stamp), a dict lookup per sample.
LEAP_YEAR_START = dt.datetime(2000, 1, 1)
FEBRUARY_29 = 59 * 86400  # 2000-02-29 00:00:00, in seconds from 2000-01-01
MARCH_1 = 60 * 86400
_STAMPS: dict[str | None, int | str | None] = {None: None}
_STAMPS_HELD = 200_000  # distinct stamps remembered (a served day has 86,400)


def stamp_code(stamp: str | None) -> int | str | None:
    """The spooled form of a sample's stamp (see ``LEAP_YEAR_START``)."""
    code = _STAMPS.get(stamp, _STAMPS)
    if code is not _STAMPS:
        return code  # type: ignore[return-value]
    assert stamp is not None
    code = stamp
    text = "2000-" + stamp
    try:  # ISO 8601 held to the one printed form, as writes._seconds reads it (no strptime loaded)
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        when = None
    if when is not None and when.tzinfo is None and when.strftime("%Y-%m-%d %H:%M:%S") == text:
        code = (when - LEAP_YEAR_START) // dt.timedelta(seconds=1)
    if len(_STAMPS) >= _STAMPS_HELD:
        _STAMPS.clear()
        _STAMPS[None] = None
    _STAMPS[stamp] = code
    return code


def stamp_text(code: int | str | None) -> str | None:
    """The stamp a spooled stamp stands for: ``stamp_code``'s inverse."""
    if not isinstance(code, int):
        return code
    return (LEAP_YEAR_START + dt.timedelta(seconds=code)).strftime("%m-%d %H:%M:%S")


def _per_position_json(values: Any) -> str | None:
    """Spec decode's per-position list as to_json writes it; for a list of finite floats (every
    one a served log prints) without the encoder's calls (~3 us a record)."""
    if values is None:
        return None
    try:
        text = "[" + ", ".join(map(float.__repr__, values)) + "]"
    except TypeError:  # not all floats
        return to_json(values)
    return to_json(values) if "n" in text else text  # inf, nan: the encoder's words


def _row_function(kind: str) -> Any:
    """``sample -> spooled row`` for ``kind``, generated once with one statement per figure
    (a served log has millions of samples): the figures in the kind's series order as integral
    hundredths when every one of them is exactly that (``in_hundredths``, figure by figure),
    else as they are; the figure columns the kind does not have NULL; spec decode's
    per-position list (its last series) as JSON.  Done here, while the log is still being read,
    rather than in the boot's transaction at the end (in SQL it cost 0.2 s per 50,000 samples
    there)."""
    n = len(FIGURE_SERIES[kind])
    tail = PER_POSITION in RUNTIME_KIND_SERIES[kind]
    v = [f"v{i}" for i in range(n)]
    h = [f"h{i}" for i in range(n)]
    place = f"{KIND_CODES[kind]}, r[1], stamp_code(r[2]), r[3]"
    end = "".join(", None" for _ in range(len(STORED_FIGURES) - n)) + (", pp" if tail else ", None")
    code = [
        "def row(r):",
        "    figures = r[4]",
        f"    if len(figures) != {n + tail}:",
        "        return any_row(r)",
        f"    {', '.join(v + (['pp'] if tail else []))}, = figures",
        *(["    pp = per_position_json(pp)"] if tail else []),
        "    try:",
        # round() refuses inf and NaN, which are not whole hundredths
        *[f"        {h[i]} = None if {v[i]} is None else round({v[i]} * 100)" for i in range(n)],
        "    except (OverflowError, ValueError):",
        f"        return ({place}, 0, {', '.join(v)}{end})",
        "    if " + " and ".join(f"({h[i]} is None or {h[i]} / 100.0 == {v[i]})" for i in range(n)) + ":",
        f"        return ({place}, 1, " + ", ".join(f"None if {h[i]} is None else float({h[i]})" for i in range(n))
        + f"{end})",
        f"    return ({place}, 0, {', '.join(v)}{end})",
    ]
    names: dict[str, Any] = {"stamp_code": stamp_code, "per_position_json": _per_position_json, "any_row": _any_row}
    exec("\n".join(code), names)  # noqa: S102 - generated from the vocabulary, not from input
    return names["row"]


def _any_row(r: parsers.RuntimeSample) -> tuple:
    # the same for figures of any length (the generated functions take their kind's), the
    # figure columns past them NULL
    if r.kind == "spec_decode":
        per_position = r.figures[-1]
        figures = r.figures[:-1]
        tail: tuple[Any, ...] = (_per_position_json(per_position),)
    else:
        figures, tail = r.figures, (None,)
    place = (KIND_CODES[r.kind], r.line, stamp_code(r.timestamp), r.engine)
    pad = (None,) * (len(STORED_FIGURES) - len(figures))
    try:
        scaled = [None if v is None else round(v * 100) for v in figures]
    except (OverflowError, ValueError):
        return (*place, 0, *figures, *pad, *tail)
    if tuple([None if h is None else h / 100.0 for h in scaled]) == tuple(figures):
        return (*place, 1, *[None if h is None else float(h) for h in scaled], *pad, *tail)
    return (*place, 0, *figures, *pad, *tail)


_ROWS: dict[str, Any] = {kind: _row_function(kind) for kind in RUNTIME_KINDS}


def stored_row(r: parsers.RuntimeSample) -> tuple:
    """A sample as ``SampleSpool.add`` takes it ready-made (``parsers.items.Store``): its
    spooled row, (kind's code, line, stamp, engine, hundredths, *STORED_SERIES)."""
    return _ROWS[r.kind](r)


# A figure printed with at most this many characters reads as its exact hundredths straight from
# its text (below): its hundredths are then under 10^15 < 2^50, where ``round(value * 100)`` of
# the float the text reads as is exactly those hundredths, and they divided by 100 give that
# float back — what ``_row_function`` checks, true by arithmetic
_FLOAT_TEXT_MAX = 15  # "d…d.d": 14 digits, hundredths below 10^15
_INT_TEXT_MAX = 13  # times 100: below 10^15


def _shape_row_function(shape: Any) -> Any:
    """``(groups, line) -> spooled row`` for a record in ``shape`` (a ``parsers.FastShape``): what
    ``stored_row`` gives of the sample its ``read_line`` makes, straight from the printed text —
    a figure with one or two decimals (or none, an int) is its hundredths by the text's digits,
    read as one float (exact: an integer under 2^53), where ``stored_row`` reads the figure,
    rounds it times 100 and checks the round trip.  The function gives None (the record's sample
    then goes through ``stored_row``) for a figure printed otherwise (more decimals, too long);
    there is no function (None) for a shape whose figures are read by converters other than
    ``float`` and ``int`` (but spec decode's per-position list, written as ``stored_row``
    writes it)."""
    from ledger.parsers.lines import PLAIN_GROUPS

    kind = shape.kind
    groups = re.compile(shape.pattern).groupindex
    at = {name: PLAIN_GROUPS + index - 1 for name, index in groups.items()}  # in the line's groups
    names: dict[str, Any] = {"stamp_code": stamp_code, "per_position_json": _per_position_json}
    body: list[str] = []
    values: list[str] = []
    for i, series in enumerate(FIGURE_SERIES[kind]):
        read = shape.figures.get(series)
        if read is None:
            values.append("None")
        elif read is float:  # its digits are its tenths or its hundredths: an integral float, exact
            body += [f"t = g[{at[series]}]",
                     f"if len(t) > {_FLOAT_TEXT_MAX}:", "    return None",
                     'if t[-2] == ".":', f'    h{i} = float(t.replace(".", "")) * 10.0',
                     'elif t[-3] == ".":', f'    h{i} = float(t.replace(".", ""))',
                     "else:", "    return None"]
            values.append(f"h{i}")
        elif read is int:
            body += [f"t = g[{at[series]}]", f"if len(t) > {_INT_TEXT_MAX}:", "    return None",
                     f"h{i} = float(t) * 100.0"]
            values.append(f"h{i}")
        else:
            return None
    per_position = "None"
    if PER_POSITION in RUNTIME_KIND_SERIES[kind] and PER_POSITION in shape.figures:
        names["read_per_position"] = shape.figures[PER_POSITION]
        body.append(f"pp = per_position_json(read_per_position(g[{at[PER_POSITION]}]))")
        per_position = "pp"
    elif set(shape.figures) - set(FIGURE_SERIES[kind]):
        return None
    values += ["None"] * (len(STORED_FIGURES) - len(FIGURE_SERIES[kind]))
    engine = f"int(g[{at['engine']}])" if "engine" in at else "None"
    code = ["def row(g, n):", "    try:", *("        " + line for line in body),
            "    except (ValueError, TypeError, IndexError):", "        return None",
            # PLAIN_SHAPE's groups: process, pid, level, timestamp, file
            f"    return ({KIND_CODES[kind]}, n, stamp_code(g[3]), {engine}, 1, {', '.join(values)}, {per_position})"]
    exec("\n".join(code), names)  # noqa: S102 - generated from the vocabulary and the built-in shapes
    return names["row"]


class StoredRows:
    """The ingest's ``parsers.items.Store``: a sample's spooled row (``stored_row``), and for a
    FastShape the same straight from its record's groups (``_shape_row_function``, made once a
    shape)."""

    def __init__(self) -> None:
        # by the shape's id (a FastShape holds a dict: it has no hash); the shape is kept with its
        # function, so no other shape can take its id
        self._shapes: dict[int, tuple[Any, Any]] = {}

    def __call__(self, sample: parsers.RuntimeSample) -> tuple:
        return _ROWS[sample.kind](sample)  # stored_row, without a call more per sample

    def for_shape(self, shape: Any) -> Any:
        made = self._shapes.get(id(shape))
        if made is None:
            made = self._shapes[id(shape)] = (shape, _shape_row_function(shape))
        return made[1]


STORED_ROWS = StoredRows()
