"""Read-only whatever the login: on the suite's real PostgreSQL and MariaDB servers, logged in as the
superuser / root, every side-effect function is reported (EX03's refusal, naming it) and never run,
and the server's state is the same after each call (locks held, statistics counters, replication
origins and slots, sequences, settings, other sessions, files, the server's own statement log); the
login itself is checked at connect (``sqlmend db check``, ``--require-read-only-login``).

Every statement that reaches the probe database is logged by the server (``log_statement = 'all'``,
MariaDB's general log), so "never run" is read off the server, not assumed.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

import psycopg
import pytest
from copy_db import load_duckdb, load_mysql, load_postgres, sha256
from typer.testing import CliRunner

import sqlmend
from sqlmend.cli import app
from sqlmend.db import connect
from sqlmend.db.account import check_login
from sqlmend.errors import ConfigError, QueryError, ReadOnlyViolation
from sqlmend.sql import functions

PROBE = "readonly_probe"

#: Side-effect calls of PostgreSQL by family ({pid}: another session's process id).
PG_CALLS = {
    "files": ["pg_read_file('/etc/passwd')", "pg_read_binary_file('/etc/hostname')", "pg_ls_dir('.')",
              "pg_stat_file('postgresql.conf')", "lo_import('/etc/hostname')", "lo_export(1, '/tmp/x')"],
    "locks": ["pg_advisory_lock(42)", "pg_advisory_lock_shared(42)", "pg_try_advisory_lock(42)",
              "pg_advisory_xact_lock(42)", "pg_advisory_unlock_all()", "pg_advisory_unlock(7)"],
    "statistics": ["pg_stat_reset()", "pg_stat_reset_shared('bgwriter')", "pg_stat_reset_slru('clog')",
                   "pg_stat_reset_single_table_counters('singer'::regclass)", "pg_stat_get_db_xact_commit(1)"],
    "replication": ["pg_replication_origin_create('o1')", "pg_create_physical_replication_slot('s1')",
                    "pg_create_logical_replication_slot('s2', 'test_decoding')", "pg_drop_replication_slot('s1')",
                    "pg_logical_emit_message(true, 'p', 'x')"],
    "notifications": ["pg_notify('probe', 'x')"],
    "sequences": ["nextval('probe_seq')", "setval('probe_seq', 99)", "currval('probe_seq')", "lastval()"],
    "settings": ["set_config('work_mem', '1MB', false)", "pg_reload_conf()", "current_setting('data_directory')"],
    "signals": ["pg_log_backend_memory_contexts({pid})", "pg_cancel_backend({pid})", "pg_terminate_backend({pid})",
                "pg_rotate_logfile()"],
    "extensions": ["pg_extension_config_dump('singer', '')", "pg_available_extensions()"],
    "sleep": ["pg_sleep(100)", "pg_sleep_for('100 seconds')", "pg_sleep_until(now() + interval '100 seconds')"],
    "transactions": ["txid_current()", "pg_current_xact_id()"],
    "dynamic_sql": ["query_to_xml('SELECT pg_stat_reset()', true, true, '')", "ts_stat('SELECT 1')"],
}
#: The same families' statements: not a query, refused before the server.
PG_STATEMENTS = ["LISTEN probe", "NOTIFY probe", "LOAD 'auto_explain'", "CHECKPOINT", "SET work_mem = '1MB'",
                 "CREATE EXTENSION pg_stat_statements", "COPY singer TO '/tmp/x'", "LOCK TABLE singer",
                 "ANALYZE singer"]

MYSQL_CALLS = {
    "files": ["LOAD_FILE('/etc/passwd')"],
    "locks": ["GET_LOCK('probe', 100)", "RELEASE_LOCK('probe')", "RELEASE_ALL_LOCKS()", "IS_FREE_LOCK('probe')",
              "IS_USED_LOCK('probe')"],
    "sleep": ["SLEEP(100)", "BENCHMARK(100000000000, MD5('x'))"],
    "sequences": ["NEXTVAL(probe_seq)", "SETVAL(probe_seq, 99)", "LASTVAL(probe_seq)", "LAST_INSERT_ID(42)"],
    "replication": ["MASTER_POS_WAIT('log.000001', 4, 100)", "MASTER_GTID_WAIT('0-1-1', 100)",
                    "BINLOG_GTID_POS('log.000001', 4)"],
}
MYSQL_STATEMENTS = ["SELECT NEXT VALUE FOR probe_seq", "SELECT PREVIOUS VALUE FOR probe_seq", "DO GET_LOCK('probe', 1)",
                    "KILL 1", "SET GLOBAL max_connections = 10", "FLUSH STATUS", "INSTALL SONAME 'ha_example'",
                    "SELECT 1 INTO OUTFILE '/tmp/probe.txt'", "LOAD DATA INFILE '/etc/passwd' INTO TABLE singer",
                    "HANDLER singer OPEN"]


def _name(call: str) -> str:
    return call.split("(")[0].strip().lower()


def _refused(db, text: str, name: str | None) -> float:
    """Run ``text`` through ``db``: it must be refused (naming ``name``) quickly; the seconds it took."""
    start = time.monotonic()
    with pytest.raises(ReadOnlyViolation) as refused:
        db.execute(text, timeout=20)
    if name:
        assert f"function {name}() is not on the read-only list of {db.dialect}" in str(refused.value)
    return time.monotonic() - start


class _Log:
    """The server's statement log from a point on: what reached the server since."""

    def __init__(self, path: Path):
        self.path = path
        self.start = path.stat().st_size

    def since(self) -> str:
        with self.path.open("rb") as f:
            f.seek(self.start)
            return f.read().decode("utf-8", "replace")


# --- PostgreSQL --------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg_probe(pg_server, spider_db):
    """A Spider database on the suite's PostgreSQL whose every statement the server logs, with a sequence;
    the superuser's URL and a witness session (another backend, listening on the probe channel)."""
    pg_server.admin(f"CREATE DATABASE {PROBE}")
    admin = pg_server.url(PROBE, user="postgres")
    load_postgres(spider_db("concert_singer"), admin, "sqlmend_reader")
    pg_server.admin("CREATE SEQUENCE probe_seq", dbname=PROBE)
    pg_server.admin("GRANT CONNECT ON DATABASE readonly_probe TO sqlmend_reader")
    pg_server.admin(f"ALTER DATABASE {PROBE} SET log_statement = 'all'")
    witness = psycopg.connect(admin, autocommit=True)
    witness.execute("LISTEN probe")
    witness.execute("SELECT pg_advisory_lock(7)")  # one lock held elsewhere: unlock_all must not touch it
    yield admin, witness
    witness.close()


def _pg_state(admin: str, witness_pid: int) -> tuple:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SET log_statement = 'none'")  # the witness's questions stay out of the log
        return conn.execute(f"""SELECT
            (SELECT stats_reset FROM pg_stat_database WHERE datname = '{PROBE}'),
            (SELECT stats_reset FROM pg_stat_bgwriter),
            (SELECT array_agg(locktype || ':' || objid || ':' || mode ORDER BY objid, mode) FROM pg_locks
             WHERE locktype = 'advisory'),
            (SELECT count(*) FROM pg_replication_origin), (SELECT count(*) FROM pg_replication_slots),
            (SELECT last_value || ':' || is_called FROM probe_seq), pg_conf_load_time(),
            (SELECT count(*) FROM pg_stat_activity WHERE pid = {witness_pid}),
            (SELECT count(*) FROM pg_extension), (SELECT count(*) FROM pg_largeobject_metadata),
            (SELECT setting FROM pg_settings WHERE name = 'work_mem')""").fetchone()


@pytest.mark.postgres
@pytest.mark.parametrize("family", sorted(PG_CALLS))
def test_postgres_superuser_runs_no_side_effect_function(pg_server, pg_probe, family):
    admin, witness = pg_probe
    pid = witness.info.backend_pid
    log = _Log(pg_server.root / "log")
    before = _pg_state(admin, pid)
    with connect(admin) as db:
        assert check_login(db).summary == "superuser: may write"
        for call in PG_CALLS[family]:
            call = call.format(pid=pid)
            for text in (f"SELECT {call}", f"SELECT name FROM singer WHERE singer_id IN (SELECT {call})"):
                assert _refused(db, text, _name(call)) < 5  # the sleeps too: never started
        assert db.execute("SELECT count(*) FROM singer /* probe: still served */").rows == [(6,)]
    assert _pg_state(admin, pid) == before
    assert list(witness.notifies(timeout=0.2, stop_after=1)) == []
    reached = log.since()
    assert "probe: still served" in reached  # the log shows what reaches the server
    for call in PG_CALLS[family]:
        assert f"{_name(call)}(" not in reached
    assert "logging memory contexts" not in reached


@pytest.mark.postgres
def test_postgres_superuser_runs_no_function_of_any_refused_family(pg_server, pg_probe):
    admin, witness = pg_probe
    log = _Log(pg_server.root / "log")
    before = _pg_state(admin, witness.info.backend_pid)
    names = functions.function_list("postgres").refused_names
    with connect(admin) as db:
        for name in sorted(names):
            _refused(db, f"SELECT {name}()", name)
        for text in PG_STATEMENTS:
            _refused(db, text, None)
    assert _pg_state(admin, witness.info.backend_pid) == before
    reached = log.since()
    assert [n for n in names if f"{n}(" in reached] == []


@pytest.mark.postgres
def test_postgres_functions_off_the_list_are_asked_of_the_server(pg_server, pg_probe):
    """A name the list does not know: refused when the server has such a function (a user's, with effects),
    left to the server when it has none, run when the configuration allows it."""
    admin, _ = pg_probe
    pg_server.admin("CREATE TABLE IF NOT EXISTS probe_audit (n int)", dbname=PROBE)
    pg_server.admin("CREATE OR REPLACE FUNCTION probe_write() RETURNS int LANGUAGE sql "
                    "AS 'INSERT INTO probe_audit VALUES (1) RETURNING 1'", dbname=PROBE)
    pg_server.admin("CREATE OR REPLACE FUNCTION probe_double(x int) RETURNS int LANGUAGE sql IMMUTABLE "
                    "AS 'SELECT 2 * x'", dbname=PROBE)
    with connect(admin) as db:
        _refused(db, "SELECT probe_write()", "probe_write")
        _refused(db, "SELECT public.probe_write()", "public.probe_write")
        with pytest.raises(QueryError, match="does not exist"):
            db.execute("SELECT no_such_function(1)")
        _refused(db, "SELECT probe_double(2)", "probe_double")
        db.allow_functions = frozenset({"probe_double"})
        assert db.execute("SELECT probe_double(2)").rows == [(4,)]
    with psycopg.connect(admin) as conn:
        assert conn.execute("SELECT count(*) FROM probe_audit").fetchone() == (0,)
    with sqlmend.Corrector(admin, stages="static,guard", allow_functions=["probe_double"]) as fixer:
        result = fixer.check("Double two?", "SELECT probe_double(2)")
        assert not result.refused and result.error is None


@pytest.mark.postgres
def test_db_check_on_postgres_says_what_each_login_may_do(pg_server, pg_probe):
    runner = CliRunner()
    admin = runner.invoke(app, ["db", "check", pg_server.url(PROBE, user="postgres")])
    assert admin.exit_code == 1 and "superuser: may write" in admin.output
    reader = runner.invoke(app, ["db", "check", pg_server.url(PROBE)])
    assert reader.exit_code == 0 and reader.output.splitlines()[1] == "read-only", reader.output
    pg_server.admin("DO $$ BEGIN CREATE ROLE probe_writer LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    pg_server.admin("GRANT CONNECT ON DATABASE readonly_probe TO probe_writer")
    pg_server.admin("GRANT USAGE ON SCHEMA public TO probe_writer", dbname=PROBE)
    pg_server.admin("GRANT SELECT, INSERT ON singer TO probe_writer", dbname=PROBE)
    pg_server.admin("GRANT pg_signal_backend TO probe_writer")
    with connect(pg_server.url(PROBE, user="probe_writer")) as db:
        login = check_login(db)
    assert login.may_write and not login.superuser
    assert "member of pg_signal_backend" in login.powers
    assert any(p.startswith("writes (INSERT, UPDATE, DELETE or TRUNCATE) on 1 table (public.singer)")
               for p in login.powers)


@pytest.mark.postgres
def test_mcp_and_the_api_refuse_the_superuser_under_require_read_only_login(pg_server, pg_probe, cache_root):
    admin = pg_server.url(PROBE, user="postgres")
    result = CliRunner().invoke(app, ["mcp", "--db", f"probe={admin}", "--require-read-only-login"])
    assert result.exit_code == 2
    assert "may do more than read" in result.output and "--require-read-only-login" in result.output
    with pytest.raises(ConfigError, match="superuser"):
        sqlmend.Corrector(admin, stages="static", require_read_only_login=True)
    with sqlmend.Corrector(pg_server.url(PROBE), stages="static", require_read_only_login=True) as fixer:
        assert fixer.login.summary == "read-only"


@pytest.mark.postgres
def test_the_service_warns_once_and_shows_the_login_on_health(pg_server, pg_probe, caplog, tmp_path, cache_root):
    from fastapi.testclient import TestClient

    from sqlmend.pipeline import PipelineConfig
    from sqlmend.service import ServiceSettings, create_app

    admin = pg_server.url(PROBE, user="postgres")
    empty = tmp_path / "root"
    empty.mkdir()
    body = {"db": admin, "question": "How many singers?", "sql": "SELECT count(*) FROM singer"}
    settings = ServiceSettings(allow_paths=True, log_requests=False)
    with caplog.at_level(logging.WARNING, logger="sqlmend"):
        client = TestClient(create_app(PipelineConfig(stages=["static", "guard"]), db_root=str(empty),
                                       settings=settings))
        assert client.get("/health").json()["login"] == {"read_only": True, "may_write": []}
        for _ in range(2):
            assert client.post("/check", json=body).json().get("error") is None
    warned = [r for r in caplog.records if "may do more than read" in r.getMessage() and PROBE in r.getMessage()]
    assert len(warned) <= 1  # once per process: another test may have warned about it already
    login = client.get("/health").json()["login"]
    assert login["read_only"] is False
    assert login["may_write"] == [{"database": PROBE, "engine": "PostgreSQL", "summary": "superuser: may write"}]
    strict = TestClient(create_app(PipelineConfig(stages=["static", "guard"], require_read_only_login=True),
                                   db_root=str(empty), settings=settings))
    error = strict.post("/check", json=body).json()["error"]
    assert "--require-read-only-login" in error and "postgres@" not in error


# --- MariaDB -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def mysql_probe(mysql_server, spider_db):
    """A Spider database on the suite's MariaDB with a sequence, root's URL (the server's socket), and the
    server's general log on for the module (every statement that reaches the server)."""
    conn = mysql_server.connection()
    try:
        load_mysql(spider_db("concert_singer"), conn, PROBE, "sqlmend_reader")
        with conn.cursor() as cur:
            cur.execute(f"CREATE SEQUENCE {PROBE}.probe_seq")
            cur.execute(f"SET GLOBAL general_log_file = '{mysql_server.root / 'general.log'}'")
            cur.execute("SET GLOBAL general_log = 1")
    finally:
        conn.close()
    yield f"mysql://root@localhost/{PROBE}?unix_socket={mysql_server.socket}"
    mysql_server.admin("SET GLOBAL general_log = 0")


def _mysql_state(server) -> tuple:
    conn = server.connection(PROBE)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_off = 1")  # the witness's questions stay out of the log
            cur.execute("SELECT IS_USED_LOCK('probe'), (SELECT next_not_cached_value FROM probe_seq), "
                        "@@GLOBAL.max_connections")
            return cur.fetchone()
    finally:
        conn.close()


@pytest.mark.mysql
@pytest.mark.parametrize("family", sorted(MYSQL_CALLS))
def test_mariadb_root_runs_no_side_effect_function(mysql_server, mysql_probe, family):
    log = _Log(mysql_server.root / "general.log")
    before = _mysql_state(mysql_server)
    with connect(mysql_probe) as db:
        assert check_login(db).summary == "superuser: may write"
        for call in MYSQL_CALLS[family]:
            for text in (f"SELECT {call}", f"SELECT name FROM singer WHERE singer_id IN (SELECT {call})"):
                assert _refused(db, text, _name(call)) < 5
        assert db.execute("SELECT count(*) FROM singer /* probe: still served */").rows == [(6,)]
    assert _mysql_state(mysql_server) == before
    reached = log.since()
    assert "probe: still served" in reached
    for call in MYSQL_CALLS[family]:
        assert f"{_name(call)}(" not in reached.lower()


@pytest.mark.mysql
def test_mariadb_root_runs_no_function_of_any_refused_family(mysql_server, mysql_probe):
    log = _Log(mysql_server.root / "general.log")
    before = _mysql_state(mysql_server)
    names = functions.function_list("mysql").refused_names
    with connect(mysql_probe) as db:
        for name in sorted(names):
            _refused(db, f"SELECT {name}()", name)
        for text in MYSQL_STATEMENTS:
            _refused(db, text, None)
    assert _mysql_state(mysql_server) == before
    reached = log.since().lower()
    assert [n for n in names if f"{n}(" in reached] == []
    assert "value for" not in reached and not Path("/tmp/probe.txt").exists()


@pytest.mark.mysql
def test_mariadb_functions_off_the_list_are_asked_of_the_server(mysql_server, mysql_probe):
    """Root may read mysql.func: a name no built-in, stored or loadable function has is left to the server;
    a stored function is refused. The reader may not read mysql.func, so it cannot rule out a loadable
    function: every name off the list is refused there."""
    mysql_server.admin("CREATE FUNCTION IF NOT EXISTS probe_double(x INT) RETURNS INT DETERMINISTIC RETURN 2 * x",
                       dbname=PROBE)
    with connect(mysql_probe) as db:
        with pytest.raises(QueryError, match="does not exist"):
            db.execute("SELECT no_such_function(1)")
        _refused(db, "SELECT probe_double(2)", "probe_double")
        db.allow_functions = frozenset({"probe_double"})
        assert db.execute("SELECT probe_double(2)").rows == [(4,)]
    with connect(mysql_server.url(PROBE)) as db:
        _refused(db, "SELECT no_such_function(1)", "no_such_function")


@pytest.mark.mysql
def test_db_check_on_mariadb_says_what_each_login_may_do(mysql_server, mysql_probe):
    runner = CliRunner()
    root = runner.invoke(app, ["db", "check", mysql_probe])
    assert root.exit_code == 1 and "superuser: may write" in root.output
    reader = runner.invoke(app, ["db", "check", mysql_server.url(PROBE)])
    assert reader.exit_code == 0 and reader.output.splitlines()[1] == "read-only", reader.output
    assert ":reader@" not in reader.output  # no password shown
    mysql_server.admin("CREATE USER IF NOT EXISTS 'probe_file'@'%' IDENTIFIED BY 'p'")
    mysql_server.admin("GRANT FILE ON *.* TO 'probe_file'@'%'")
    mysql_server.admin(f"GRANT SELECT ON {PROBE}.* TO 'probe_file'@'%'")
    with connect(mysql_server.url(PROBE, user="probe_file", password="p")) as db:
        login = check_login(db)
    assert login.may_write and not login.superuser and login.powers == ["FILE on *.*"]


@pytest.mark.mysql
def test_mcp_refuses_root_under_require_read_only_login(mysql_probe):
    result = CliRunner().invoke(app, ["mcp", "--db", f"probe={mysql_probe}", "--require-read-only-login"])
    assert result.exit_code == 2 and "may do more than read" in result.output


# --- the file engines --------------------------------------------------------------

FILE_CALLS = {
    "duckdb": ["read_csv('/etc/passwd')", "read_text('/etc/hostname')", "glob('/*')", "parquet_scan('x.parquet')",
               "nextval('probe_seq')", "currval('probe_seq')", "setseed(0.5)", "current_setting('threads')",
               "write_log('x')", "sleep_ms(100000)", "query('SELECT 1')", "duckdb_settings()", "checkpoint()"],
    "sqlite": ["load_extension('x.so')", "readfile('/etc/passwd')", "writefile('{tmp}/x', 'y')",
               "fts3_tokenizer('simple')", "sqlite_log(1, 'x')", "zipfile('{tmp}/x.zip')"],
}


@pytest.mark.parametrize("engine", sorted(FILE_CALLS))
def test_file_engines_run_no_side_effect_function(engine, spider_db, tmp_path):
    path = tmp_path / f"probe.{engine}"
    if engine == "duckdb":
        import duckdb

        load_duckdb(spider_db("concert_singer"), path)
        conn = duckdb.connect(str(path))
        conn.execute("CREATE SEQUENCE probe_seq")
        conn.execute("CREATE MACRO probe_double(x) AS 2 * x")  # the file's own function: off the list
        conn.close()
    else:
        shutil.copyfile(spider_db("concert_singer"), path)
    before = sha256(path)
    names = functions.function_list(engine).refused_names
    with connect(path) as db:
        assert check_login(db).summary == "the file is writable by this process: may write"
        for call in FILE_CALLS[engine]:
            assert _refused(db, f"SELECT {call.format(tmp=tmp_path)}", _name(call)) < 5
        for name in sorted(names):
            _refused(db, f"SELECT {name}()", name)
        with pytest.raises(QueryError):  # a name the engine does not have: its own error, as before
            db.execute("SELECT no_such_function(1)")
        if engine == "duckdb":
            _refused(db, "SELECT probe_double(2)", "probe_double")
            db.allow_functions = frozenset({"probe_double"})
            assert db.execute("SELECT probe_double(2)").rows == [(4,)]
        assert db.execute("SELECT count(*) FROM singer").rows == [(6,)]
    assert sha256(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file: no read-only file to check")
def test_db_check_of_a_file_this_process_may_not_write(spider_db, tmp_path):
    path = tmp_path / "ro.sqlite"
    shutil.copyfile(spider_db("concert_singer"), path)
    path.chmod(0o444)
    result = CliRunner().invoke(app, ["db", "check", str(path)])
    assert result.exit_code == 0 and result.output.splitlines()[1] == "read-only"


def test_serve_refuses_to_start_on_a_writable_file_under_require_read_only_login(spider_db, tmp_path):
    from sqlmend.pipeline import PipelineConfig
    from sqlmend.service import create_app

    folder = tmp_path / "root" / "concert_singer"
    folder.mkdir(parents=True)
    shutil.copyfile(spider_db("concert_singer"), folder / "concert_singer.sqlite")
    writable = os.access(folder / "concert_singer.sqlite", os.W_OK)
    config = PipelineConfig(stages=["static"], require_read_only_login=True)
    if writable:
        with pytest.raises(ConfigError, match="concert_singer: the login .* may do more than read"):
            create_app(config, db_root=str(tmp_path / "root"))
    app_ = create_app(PipelineConfig(stages=["static"]), db_root=str(tmp_path / "root"))
    assert app_.state.service.logins()["read_only"] is not writable
