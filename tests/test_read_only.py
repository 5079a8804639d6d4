"""Read commands never write, `ledger sql` cannot write on any database, and no URL is printed with
its password (issue 15, items 1, 2, 9 and 10)."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REAL, ROOT, hears_ctrl_c
from dbutil import IS_PG, postgres_only, rows, sqlite_only

F008 = next(REAL.glob("008_*.log"))
LEDGER = [sys.executable, "-m", "ledger"]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- 1. ledger sql: one statement, a session that cannot write --------------------------------------


@pytest.mark.parametrize("statement", [
    "COMMIT; DELETE FROM fact",
    "ROLLBACK; DELETE FROM fact",
    "END; DELETE FROM fact",
    "ABORT; DELETE FROM fact",
    "COMMIT; DROP SCHEMA public CASCADE",
    "COMMIT; CREATE ROLE ledger_intruder_second SUPERUSER",
    "SELECT 1;; DELETE FROM fact",
    "SELECT ';' /* ; */; DELETE FROM fact",
])
def test_sql_refuses_a_second_statement_on_every_database(db, cli, statement):
    cli("ingest", str(F008))
    before = rows(db, "SELECT count(*) FROM fact")
    r = cli("sql", statement)
    assert r.exit_code == 2 and "one statement at a time" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert rows(db, "SELECT count(*) FROM fact") == before
    if IS_PG:
        assert rows(db, "SELECT count(*) FROM pg_roles WHERE rolname = 'ledger_intruder_second'") == [(0,)]


# what a hostile trial of a04ea7c sent: sqlparse counted one statement (``#`` starts a MySQL
# comment for it, ``'\\'`` an escaped quote), PostgreSQL ran four and the facts were gone
TRIAL = [
    "VALUES (1 # 2); SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; COMMIT; DELETE FROM fact",
    "VALUES (1 # 2); SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; COMMIT; DROP SCHEMA public CASCADE",
    "SELECT '\\'; SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; COMMIT; DELETE FROM fact; -- '",
]


@pytest.mark.parametrize("statement", TRIAL)
def test_sql_the_trials_texts_change_nothing(db, cli, statement):
    cli("ingest", str(F008))
    before = rows(db, "SELECT count(*) FROM fact")
    r = cli("sql", statement)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    if IS_PG:  # SQLite stops at the '#' (not SQL there)
        assert "one statement at a time" in r.output
    assert rows(db, "SELECT count(*) FROM fact") == before
    assert cli("history").exit_code == 0  # the schema is there


@postgres_only
@pytest.mark.parametrize("statement", [
    "SELECT $$;$$; DELETE FROM fact",
    "SELECT $x$ ; $x$ ; DELETE FROM fact",
    "SELECT 1 /* ; */ ; DELETE FROM fact",
    "SELECT 1 -- ;\n; DELETE FROM fact",
    "VALUES (1); DELETE FROM fact",
    "TABLE fact; DELETE FROM fact",
    "EXPLAIN SELECT 1; DELETE FROM fact",
    "SELECT E'\\''; DELETE FROM fact; SELECT ''",
])
def test_sql_on_postgresql_the_server_refuses_a_second_statement(db, cli, statement):
    cli("ingest", str(F008))
    before = rows(db, "SELECT count(*) FROM fact")
    r = cli("sql", statement)
    assert r.exit_code == 2 and "one statement at a time" in r.output and len(r.output.strip().splitlines()) == 1
    assert rows(db, "SELECT count(*) FROM fact") == before


@pytest.mark.parametrize("statement,expected", [
    ("VALUES (7)", "7"),
    ("EXPLAIN SELECT count(*) FROM fact", "fact" if IS_PG else "OpenRead"),
    ("SELECT ';' AS x -- ; DELETE FROM fact", ";"),
    ("SELECT /* ; DELETE FROM fact; */ 'kept' AS x", "kept"),
    ("SELECT 'it''s; fine' AS x", "it's; fine"),
])
def test_sql_reads_one_statement_with_semicolons_inside(db, cli, statement, expected):
    cli("ingest", str(F008))
    r = cli("sql", statement, "--format", "csv")
    assert r.exit_code == 0 and expected in r.output, r.output


@postgres_only
@pytest.mark.parametrize("statement,expected", [
    ("TABLE deploy", "identity"),
    ("SELECT $$a;b$$ AS x", "a;b"),
    ("SELECT $q$ '; DELETE FROM fact; $q$ AS x", "'; DELETE FROM fact;"),
    ("SELECT 5 # 3 AS x", "6"),  # '#' is PostgreSQL's XOR, not a comment
    ("SELECT '100%' AS x", "100%"),
    ("SHOW transaction_read_only", "on"),
])
def test_sql_on_postgresql_reads_what_sqlparse_misread(db, cli, statement, expected):
    cli("ingest", str(F008))
    r = cli("sql", statement, "--format", "csv")
    assert r.exit_code == 0 and expected in r.output, r.output


@pytest.mark.parametrize("statement", ["ROLLBACK;", "END;", "ABORT;", "COMMIT"])
def test_sql_ending_the_transaction_alone_changes_nothing(db, cli, statement):
    cli("ingest", str(F008))
    before = rows(db, "SELECT count(*) FROM fact")
    r = cli("sql", statement)
    assert "Traceback" not in r.output
    assert rows(db, "SELECT count(*) FROM fact") == before


@postgres_only
@pytest.mark.parametrize("statement", [
    "CREATE ROLE {role} SUPERUSER",
    "DROP SCHEMA public CASCADE",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
])
def test_sql_session_on_postgresql_is_read_only(db, cli, statement):
    import uuid

    role = f"ledger_intruder_{uuid.uuid4().hex[:8]}"  # roles outlive the test's database
    cli("ingest", str(F008))
    cli("sql", statement.format(role=role))
    assert rows(db, f"SELECT count(*) FROM pg_roles WHERE rolname = '{role}'") == [(0,)]
    assert rows(db, "SELECT count(*) FROM fact")[0][0] > 0
    # the session's settings died with its connection: the ledger is still writable by a writer
    r = cli("ingest", str(next(p for p in sorted(REAL.glob("*.log")) if p != F008)), "--year", "2026")
    assert r.exit_code == 0, r.output


# -- issue 38, item 12: a superuser's URL: a read-only transaction does not bind COPY … TO PROGRAM --------


@pytest.mark.parametrize("statement", [
    "COPY fact TO STDOUT", "DO $$BEGIN NULL; END$$", "SET ROLE NONE", "RESET ROLE", "CALL nothing()",
    "DELETE FROM fact", "ANALYZE fact", "LISTEN x", "GRANT SELECT ON fact TO PUBLIC", "PREPARE p AS SELECT 1",
    "LOCK TABLE fact", "CHECKPOINT", "DISCARD ALL", "VACUUM",
])
def test_sql_runs_only_a_read_statement_on_every_database(db, cli, statement):
    """A statement is refused unless its first word is SELECT, WITH, VALUES, TABLE, EXPLAIN or SHOW
    (PRAGMA on SQLite): said before the database is asked."""
    cli("ingest", str(F008))
    before = rows(db, "SELECT count(*) FROM fact")
    r = cli("sql", statement)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert "ledger sql is read-only" in r.output and statement.split()[0] in r.output, r.output
    assert rows(db, "SELECT count(*) FROM fact") == before


@pytest.fixture
def server_dir():
    """A folder the server's own user (postgres) can write a file into: proof that a program ran."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ledger-sql-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _psql_deleting_facts(db: str) -> str:
    """The trial's program: psql connecting back to the ledger and deleting its facts."""
    from sqlalchemy.engine import make_url

    u = make_url(db)
    return f"psql -h {u.host} -p {u.port or 5432} -U {u.username} -d {u.database} -c \"DELETE FROM fact\""


_EXEC_COPY = "EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch {marker}''';"
_LO_EXPORT = "lo_export(lo_from_bytea(0, 'x'), '{marker}')"


@postgres_only
@pytest.mark.parametrize("statement", [
    "COPY (SELECT 1) TO PROGRAM '{program}; touch {marker}'",  # the trial's: 46 facts deleted
    "/* /* */ SELECT */ COPY (SELECT 1) TO PROGRAM '{program}; touch {marker}'",  # sqlparse: SELECT; the server: COPY
    "/* /* */ SHOW */ COPY (SELECT 1) TO PROGRAM '{program}; touch {marker}'",
    "/* /* */ EXPLAIN */ DO $$BEGIN RESET ROLE; " + _EXEC_COPY + " END$$",
    "DO $$BEGIN " + _EXEC_COPY + " END$$",
    "SELECT " + _LO_EXPORT,
    "SELECT \"lo_export\"" + _LO_EXPORT[len("lo_export"):],
    "SELECT pg_catalog.LO_EXPORT" + _LO_EXPORT[len("lo_export"):],
    "SELECT U&\"lo_expor\\0074\"" + _LO_EXPORT[len("lo_export"):],
    "SELECT set_config('role', 'none', false), query_to_xml('SELECT "
    + _LO_EXPORT.replace("'", "''") + "', true, true, '')",
    "SELECT pg_read_file('/etc/hostname')",
    "SELECT pg_terminate_backend(2147483647)",
    "SELECT pg_reload_conf()",
    "SELECT dblink_exec('dbname=postgres', 'DELETE FROM fact')",
])
def test_sql_on_a_superuser_url_runs_no_program_and_touches_no_server_file(db, cli, statement, server_dir):
    """The test database's URL is a superuser's (``.ci/postgres.sh``'s ``ledger``): a READ ONLY
    transaction let ``COPY … TO PROGRAM`` run a program that deleted the facts.  Now the text
    is refused (a statement that is not a read; a function that reads or writes server files,
    runs programs, signals backends or changes the role) and, whatever the text checks miss,
    the statement runs as ``pg_read_all_data``, which has no right but reading."""
    cli("ingest", str(F008))
    before = rows(db, "SELECT count(*) FROM fact")
    assert rows(db, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user") == [(True,)]
    marker = server_dir / "ran"
    r = cli("sql", statement.format(program=_psql_deleting_facts(db), marker=marker))
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and r.output.startswith("Error: sql:"), \
        r.output
    # refused as no read, or the name; or, where sqlparse read a SHOW or EXPLAIN the server would
    # not, the server's syntax error on what follows the keyword ledger sql wrote
    assert "ledger sql is read-only" in r.output or "syntax error" in r.output, r.output
    assert not marker.exists() and rows(db, "SELECT count(*) FROM fact") == before


@postgres_only
def test_sql_on_a_superuser_url_still_reads_every_table_and_view(db, cli):
    cli("ingest", str(F008))
    facts = rows(db, "SELECT count(*) FROM fact")[0][0]
    assert cli("sql", "SELECT count(*) AS n FROM fact", "--format", "csv").output.split() == ["n", str(facts)]
    for query in ("SELECT count(*) FROM boot_figures", "SELECT count(*) FROM kv_formula", "TABLE deploy",
                  "EXPLAIN SELECT count(*) FROM fact", "SHOW transaction_read_only",
                  "WITH x AS (SELECT 1 AS a) SELECT a FROM x", "VALUES (1)", "/* a comment */ SELECT 1",
                  "(SELECT 1)", "EXPLAIN (COSTS OFF) SELECT 1", "EXPLAIN ANALYZE SELECT 1", "explain select 1"):
        r = cli("sql", query, "--format", "csv")
        assert r.exit_code == 0, (query, r.output)
    assert cli("sql", "SELECT current_user AS u", "--format", "csv").output.split() == ["u", "pg_read_all_data"]


def test_sql_has_a_timeout(db, cli):
    cli("ingest", str(F008))
    forever = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    if IS_PG:
        forever = "SELECT pg_sleep(30)"
    started = time.monotonic()
    r = cli("sql", forever, "--timeout", "1")
    assert time.monotonic() - started < 15
    assert r.exit_code == 2 and "stopped after 1 s" in r.output and len(r.output.strip().splitlines()) == 1


@pytest.mark.parametrize("timeout", ["nan", "inf", "1e400", "1e-300", "0.0001", "1e10"])
def test_sql_refuses_a_timeout_that_is_no_limit_in_disguise(db, cli, timeout):
    """nan and 1e-300 once meant no limit (the deadline never passed; 0 ms on PostgreSQL),
    inf and 1e400 a traceback on PostgreSQL, 1e10 s is past what PostgreSQL can hold."""
    cli("ingest", str(F008))
    r = cli("sql", "SELECT 1", "--timeout", timeout)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.strip().splitlines()[-1].startswith("Error: ") and "--timeout" in r.output, r.output


@pytest.mark.parametrize("timeout", ["0", "0.5", "30"])
def test_sql_takes_a_finite_timeout_or_zero(db, cli, timeout):
    cli("ingest", str(F008))
    r = cli("sql", "SELECT count(*) AS n FROM boot", "--timeout", timeout, "--format", "csv")
    assert r.exit_code == 0 and r.output.split() == ["n", "1"], r.output


def _wait_for_the_query(p: subprocess.Popen, db: str) -> None:
    """Until ``p`` runs its query: once it holds the ledger's file open (its imports are done:
    the query is what comes next), and half a second more (a fixed 3 s was the wait before, most
    of it the query burning a core)."""
    path = os.path.realpath(db)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and p.poll() is None:
        try:
            fds = [os.readlink(f"/proc/{p.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{p.pid}/fd")]
        except OSError:  # an fd closed while it was read
            fds = []
        if path in fds:
            time.sleep(0.5)
            return
        time.sleep(0.05)
    raise AssertionError(f"ledger sql never opened {path}")


@sqlite_only
def test_sql_stops_on_ctrl_c(db, cli, tmp_path):
    cli("ingest", str(F008))
    forever = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    p = subprocess.Popen([*LEDGER, "--db", db, "sql", forever], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=hears_ctrl_c)
    _wait_for_the_query(p, db)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail("ledger sql ignored Ctrl-C")
    assert p.returncode != 0 and "Aborted!" in err and "Traceback" not in err


@pytest.mark.heavy
@sqlite_only
def test_sql_streams_its_rows(db, cli):
    """A million rows go out as they are read: the process stays small (before: the whole
    result in memory, 1.5 GB for 1.17 M rows)."""
    cli("ingest", str(F008))
    query = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000) "
             "SELECT i, 'row number ' || i AS label FROM n")
    code = ("import sys; from ledger.cli import main\n"
            "try:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            "sys.stderr.write([x.split()[1] for x in open('/proc/self/status') if x.startswith('VmHWM')][0])")
    p = subprocess.run([sys.executable, "-c", code, "--db", db, "sql", query, "--format", "csv"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    lines = p.stdout.count("\n")
    assert lines == 1_000_001
    assert int(p.stderr.strip().splitlines()[-1]) < 120_000  # KiB: 52 MB measured, 477 MB before (VmHWM: the peak since exec; ru_maxrss would count the forked pytest)


@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl", "markdown", "table"])
def test_streamed_output_is_what_render_prints(fmt):
    from ledger.render import rows_stream as render_stream
    from ledger.render.formats import render

    columns = ["i", "label", "half", "empty"]
    rows = [(i, f"row {i}", i * 0.5, None) for i in range(1, 2501)]
    if fmt == "table":  # widths come from the first page: the same when the page holds all rows
        rows = rows[:999]
    expected = render([dict(zip(columns, r, strict=True)) for r in rows], columns, fmt)
    assert "".join(render_stream(iter(rows), columns, fmt)) == expected


def test_sql_table_output_is_unchanged_for_a_small_result(db, cli):
    cli("ingest", str(F008))
    out = cli("sql", "SELECT name, count(*) AS n FROM fact GROUP BY name ORDER BY name LIMIT 3").output
    lines = out.splitlines()
    assert lines[0].split() == ["name", "n"] and set(lines[1]) <= {"-", " "} and len(lines) == 5


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "jsonl", "markdown"])
def test_sql_keeps_every_column_of_one_name(db, cli, fmt):
    """Issue 38, item 8: ``select count(*), count(distinct deploy_id) from boot`` printed ``2 2``
    on PostgreSQL (both columns are named "count" there; psql prints ``84 | 2``): the rows were
    dicts keyed by the label, so the second column overwrote the first.  Every column is kept;
    JSON, JSON lines and CSV key a repeated label with ``_2``, ``_3`` … (skipping labels taken)."""
    import csv
    import io
    import json

    cli("ingest", str(F008))
    cli("ingest", str(REAL / "005_v1-runpod-iso-timestamps-gptoss120b-workerproc-failed.log"))
    boots, deploys = rows(db, "SELECT count(*), count(DISTINCT deploy_id) FROM boot")[0]
    assert boots != deploys  # the bug showed only where the two differ
    query = "SELECT count(*) AS n, count(DISTINCT deploy_id) AS n, 7 AS n_2, 8 AS n FROM boot"
    r = cli("sql", query, "--format", fmt)
    assert r.exit_code == 0, r.output
    out = r.output
    want = {"n": boots, "n_3": deploys, "n_2": 7, "n_4": 8}
    if fmt == "json":
        assert json.loads(out) == [want] and list(json.loads(out)[0]) == ["n", "n_3", "n_2", "n_4"]
    elif fmt == "jsonl":
        assert [json.loads(x) for x in out.splitlines() if x] == [want]
    elif fmt == "csv":
        got = list(csv.reader(io.StringIO(out)))
        assert got[:2] == [["n", "n_3", "n_2", "n_4"], [str(boots), str(deploys), "7", "8"]]
    else:  # for people: the labels as the database gives them
        lines = [x for x in out.splitlines() if x.strip()]
        cells = [c.strip() for c in lines[-1].strip("| ").split("|")] if fmt == "markdown" else lines[-1].split()
        assert cells == [str(boots), str(deploys), "7", "8"], out
        assert lines[0].replace("|", " ").split() == ["n", "n", "n_2", "n"], out
    # the database's own labels, told apart (SQLite names a column by its expression)
    got = json.loads(cli("sql", "SELECT count(*), count(DISTINCT deploy_id) FROM boot", "--format", "json").output)
    assert list(got[0].values()) == [boots, deploys]


# -- 2. passwords are never printed ---------------------------------------------------------------------


SECRET = "s3cr3t-pw"


@pytest.mark.parametrize("url", [
    f"postgresql+psycopg://ledger:{SECRET}@127.0.0.1:1/ledger",  # refused
    f"postgresql+psycopg://ledger:{SECRET}@no-such-host.invalid/ledger",  # unknown host
    f"postgresql+nosuchdriver://ledger:{SECRET}@127.0.0.1/ledger",  # bad driver
    f"nosuchdb://ledger:{SECRET}@127.0.0.1/ledger",  # bad dialect
])
@pytest.mark.parametrize("command", [["history"], ["db", "current"], ["ingest", str(F008)], ["db", "upgrade"]])
def test_a_connection_error_hides_the_password(cli, url, command):
    r = cli("--db", url, *command)
    assert r.exit_code == 2 and SECRET not in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_copy_to_an_unreachable_server_hides_the_password(cli, db, tmp_path):
    cli("ingest", str(F008))
    r = cli("copy", db, f"postgresql+psycopg://ledger:{SECRET}@127.0.0.1:1/ledger")
    assert r.exit_code == 2 and SECRET not in r.output


@postgres_only
def test_db_current_copy_and_errors_hide_the_password_of_a_real_server(cli, db, tmp_path):
    from sqlalchemy.engine import make_url

    with_pw = make_url(db).set(password=SECRET).render_as_string(hide_password=False)
    cli("ingest", str(F008))
    r = cli("db", "current", "--db", with_pw)  # the test server trusts local users: any password works
    assert r.exit_code == 0 and SECRET not in r.output and ":***@" in r.output
    r = cli("copy", with_pw, str(tmp_path / "copy.db"))
    assert r.exit_code == 0 and SECRET not in r.output and "copied 1 boot" in r.output
    missing = make_url(db).set(password=SECRET, database="no_such_ledger").render_as_string(hide_password=False)
    r = cli("history", "--db", missing)  # unknown database
    assert r.exit_code == 2 and SECRET not in r.output and "Traceback" not in r.output


def test_shown_url_hides_what_sqlalchemy_hides():
    from sqlalchemy.engine import make_url

    from ledger.db.location import shown_url

    for url in ["postgresql+psycopg://u:p%40ss@h:5/db", "postgresql://u@h/db", "postgresql://:pw@h/d",
                "sqlite:////tmp/x.db", "postgresql://u:a:b@h/db?sslmode=require"]:
        assert shown_url(url) == make_url(url).render_as_string(hide_password=True)
    assert "cr" not in shown_url("postgresql://u:s3/cr@et@h/db")  # an unescaped '@' is hidden too
    assert "cr" not in shown_url("postgresql://u:s3?cr@et@h/db?sslmode=require")  # and a '?'


@pytest.mark.parametrize("url", [
    f"postgresql+psycopg://ledger@127.0.0.1:1/ledgerdb?password={SECRET}",
    f"postgresql+psycopg://ledger@127.0.0.1:1/ledgerdb?sslmode=require&password={SECRET}&x=1",
    f"postgresql+psycopg://ledger@127.0.0.1:1/ledgerdb?sslpassword={SECRET}",
    f"postgresql+psycopg://ledger@127.0.0.1:1/ledgerdb?PASSWORD={SECRET}",
    f"postgresql+psycopg://ledger:{SECRET}@127.0.0.1:1/ledgerdb?password={SECRET}",
    f"postgresql+psycopg://ledger@127.0.0.1:1/ledgerdb?password=a%26{SECRET}",
])
def test_shown_url_hides_a_password_in_the_query_string(url):
    from ledger.db.location import shown_url

    shown = shown_url(url)
    assert SECRET not in shown and "=***" in shown
    assert shown.startswith("postgresql+psycopg://ledger") and "/ledgerdb?" in shown


def test_shown_url_keeps_the_other_query_options():
    from ledger.db.location import shown_url

    assert (shown_url(f"postgresql://u@h/d?sslmode=require&password={SECRET}&application_name=x")
            == "postgresql://u@h/d?sslmode=require&password=***&application_name=x")


@pytest.mark.parametrize("command", [["history"], ["db", "current"], ["ingest", str(F008)], ["db", "upgrade"]])
def test_an_error_hides_a_password_in_the_query_string(cli, command):
    r = cli("--db", f"postgresql+psycopg://ledger@127.0.0.1:1/ledgerdb?password={SECRET}", *command)
    assert r.exit_code == 2 and SECRET not in r.output and len(r.output.strip().splitlines()) == 1


@postgres_only
def test_db_current_hides_a_password_in_the_query_string_of_a_real_server(cli, db):
    cli("ingest", str(F008))
    r = cli("db", "current", "--db", f"{db}?password={SECRET}")  # the test server trusts local users
    assert r.exit_code == 0 and SECRET not in r.output and "password=***" in r.output


# -- 9. read commands never write ---------------------------------------------------------------------


READERS = [["history"], ["export"], ["sql", "select count(*) from boot"], ["show", "1"], ["check"],
           ["deploy", "list"], ["db", "current"], ["runtime", "1"], ["diff", "1", "1"]]


def _delete_journal_ledger(tmp_path: Path, cli) -> Path:
    path = tmp_path / "nfs.db"
    cli("--db", str(path), "ingest", str(F008))
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    con.close()
    return path


@pytest.mark.parametrize("command", READERS)
def test_a_read_command_keeps_a_delete_journal_ledger_as_it_is(tmp_path, cli, command):
    path = _delete_journal_ledger(tmp_path, cli)
    before = _digest(path)
    cli("--db", str(path), *command)
    assert _digest(path) == before
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    con.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nfs.db"]


def test_a_writer_keeps_the_journal_mode_it_finds(tmp_path, cli):
    path = _delete_journal_ledger(tmp_path, cli)
    cli("--db", str(path), "ingest", str(next(REAL.glob("005_*.log"))), "--year", "2026")
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    assert con.execute("SELECT count(*) FROM boot").fetchone()[0] >= 2
    con.close()


@pytest.mark.parametrize("command", READERS)
def test_a_read_command_creates_no_ledger(tmp_path, cli, command):
    r = cli("--db", str(tmp_path / "typo" / "deep" / "x.db"), *command)
    assert "Traceback" not in r.output
    assert list(tmp_path.iterdir()) == []


def test_a_missing_ledger_is_said_so_and_nothing_is_created(tmp_path, cli):
    # a read command on a missing ledger is an error (a typo in --db), and creates nothing
    r = cli("--db", str(tmp_path / "none.db"), "export")
    assert r.exit_code == 2 and "no ledger here yet" in r.output
    r = cli("--db", str(tmp_path / "none.db"), "sql", "select count(*) as n from boot")
    assert r.exit_code == 2 and "no ledger here yet" in r.output
    assert list(tmp_path.iterdir()) == []


def test_a_missing_ledger_reads_as_empty_in_the_library(tmp_path):
    from ledger import frames

    assert frames.boots(str(tmp_path / "none.db")).empty
    assert list(tmp_path.iterdir()) == []


def test_a_newer_delete_journal_ledger_is_refused_byte_for_byte(tmp_path, cli):
    path = _delete_journal_ledger(tmp_path, cli)
    con = sqlite3.connect(path)
    con.execute("UPDATE alembic_version SET version_num = '9999_future'")
    con.commit()
    con.close()
    before = _digest(path)
    for command in READERS + [["ingest", str(F008)], ["db", "upgrade"]]:
        r = cli("--db", str(path), *command)
        if command != ["db", "current"]:  # which says the revision
            assert r.exit_code == 2 and "newer than this version" in r.output, (command, r.output)
        assert _digest(path) == before, command


def test_an_empty_database_is_no_ledger_and_gets_no_schema(db, cli):
    r = cli("history")
    assert r.exit_code == 2 and "no ledger here yet" in r.output
    if IS_PG:
        assert rows(db, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'") == [(0,)]
    else:
        assert not os.path.exists(db)


@postgres_only
def test_a_read_command_does_not_upgrade_a_postgresql_ledger(db, cli):
    cli("ingest", str(F008))
    from ledger.db.columns import HEAD_REVISION

    old = "0002_reconciliation"
    assert HEAD_REVISION != old
    rows(db, "SELECT 1")  # the engine exists
    from dbutil import _engine

    with _engine(db).begin() as conn:
        conn.exec_driver_sql(f"UPDATE alembic_version SET version_num = '{old}'")
    r = cli("history")
    assert r.exit_code == 2 and "run 'ledger db upgrade'" in r.output
    assert rows(db, "SELECT version_num FROM alembic_version") == [(old,)]


@pytest.mark.heavy
def test_concurrent_upgrades_say_upgraded_once(tmp_path):
    import shutil

    old = tmp_path / "old.db"
    shutil.copy(ROOT / "fixtures" / "ledgers" / "schema-0001-real-boots.db", old)
    procs = [subprocess.Popen([*LEDGER, "--db", str(old), "db", "upgrade"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert sum("upgraded 0001_initial" in o for o in outs) == 1, outs
    assert sum("already at" in o for o in outs) == 3, outs
    assert len(list(tmp_path.glob("*.bak"))) == 1
