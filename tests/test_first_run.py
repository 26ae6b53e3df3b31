"""A first run speaks of the correction: a writable login is warned about only where sqlmend's own lock
does not hold, and every command that may warn refuses such a login under --require-read-only-login."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import sqlmend
from sqlmend.cli import app
from sqlmend.db.account import target_logins
from sqlmend.errors import ConfigError

runner = CliRunner()
QUESTION = "How many female students are there?"
SQL = "SELECT count(*) FROM Student WHERE Sex = 'female'"


def _warned(caplog, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if "may do more than read" in r.getMessage() and name in r.getMessage()]


@pytest.fixture
def writable_root(spider_db, tmp_path):
    """A database folder of two Spider SQLite files this process may write (as every file it makes)."""
    for db_id in ("pets_1", "concert_singer"):
        folder = tmp_path / "dbs" / db_id
        folder.mkdir(parents=True)
        shutil.copyfile(spider_db(db_id), folder / f"{db_id}.sqlite")
    return tmp_path / "dbs"


def test_the_demos_first_query_prints_the_correction_first(spider_db):
    """scripts/demo.sh's first command, as a user runs it (stderr and stdout as a terminal shows them):
    its first line is the static stage's, not a warning about the file's login."""
    demo = open(os.path.join(os.path.dirname(__file__), "..", "scripts", "demo.sh"), encoding="utf-8").read()
    assert "--question \"How many female students are there?\"" in demo and SQL in demo
    out = subprocess.run([sys.executable, "-c", "from sqlmend.cli import main; main()", "correct",
                          "--db", str(spider_db("pets_1")), "--question", QUESTION, "--sql", SQL],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert out.returncode == 0, out.stdout
    lines = out.stdout.splitlines()
    assert lines[0].startswith("static ran: 1 finding(s)"), lines[:3]
    assert "may do more than read" not in out.stdout
    assert lines[-1].startswith("corrected: SELECT COUNT(*) FROM Student WHERE Sex = 'F'"), lines[-3:]


def test_a_writable_sqlite_file_is_a_line_of_db_check_and_health_not_a_warning(writable_root, caplog):
    path = writable_root / "pets_1" / "pets_1.sqlite"
    with caplog.at_level(logging.WARNING, logger="sqlmend"):
        with sqlmend.Corrector(path, stages="static") as fixer:
            assert fixer.login.may_write and fixer.login.own_lock and not fixer.login.warns
            assert fixer.correct(QUESTION, SQL).changed
    assert _warned(caplog, "pets_1") == []
    result = runner.invoke(app, ["db", "check", str(path)])
    assert result.exit_code == 1  # the login may write: what the command answers
    assert result.output.splitlines()[1] == "the file is writable by this process: may write"
    assert "sqlmend's own lock holds: the file opened read-only" in result.output

    from sqlmend.pipeline import PipelineConfig
    from sqlmend.service import create_app

    with caplog.at_level(logging.WARNING, logger="sqlmend"):
        client = TestClient(create_app(PipelineConfig(stages=["static"]), db_root=str(writable_root)))
    assert _warned(caplog, "pets_1") == []
    login = client.get("/health").json()["login"]
    assert login["read_only"] is False
    assert [(w["database"], w["engine"]) for w in login["may_write"]] == [("concert_singer", "SQLite"),
                                                                          ("pets_1", "SQLite")]
    assert all(w["own_lock"].startswith("the file opened read-only") for w in login["may_write"])


def test_a_writable_duckdb_file_is_warned_about_once_per_process(spider_db, tmp_path, caplog):
    """DuckDB has no authorizer of sqlmend's: a login that may write its file is still a warning, once."""
    from sqlmend.testing.copydb import load_duckdb

    path = tmp_path / "first_run_shop.duckdb"
    load_duckdb(spider_db("concert_singer"), path)
    with caplog.at_level(logging.WARNING, logger="sqlmend"):
        for _ in range(2):
            with sqlmend.Corrector(path, stages="static") as fixer:
                assert fixer.login.warns and fixer.login.own_lock is None
    assert len(_warned(caplog, "first_run_shop")) == 1
    with pytest.raises(ConfigError, match="--require-read-only-login refuses it"):
        sqlmend.Corrector(path, stages="static", require_read_only_login=True)


def test_correct_refuses_a_writable_login_under_require_read_only_login(writable_root, tmp_path):
    path = writable_root / "pets_1" / "pets_1.sqlite"
    r = runner.invoke(app, ["correct", "--db", str(path), "--question", QUESTION, "--sql", SQL,
                            "--require-read-only-login"])
    assert r.exit_code == 1
    assert r.output.startswith("error: pets_1: the login ") and "may do more than read" in r.output
    assert "--require-read-only-login refuses it: connect as a read-only login" in r.output
    assert "static ran" not in r.output and "corrected" not in r.output  # refused before any correction

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"question_id": "1", "db_id": "pets_1", "question": "q", "sql": "SELECT 1"}\n')
    out = tmp_path / "run"
    r = runner.invoke(app, ["correct", "--dataset", str(tasks), "--db-root", str(writable_root), "--pred", str(tasks),
                            "--out", str(out), "--quiet", "--require-read-only-login"])
    assert r.exit_code == 1 and "error: pets_1: the login " in r.output
    assert not out.exists()  # nothing written


def test_check_and_eval_take_require_read_only_login(writable_root, tmp_path):
    path = writable_root / "pets_1" / "pets_1.sqlite"
    r = runner.invoke(app, ["check", "--db", str(path), "--sql", SQL, "--require-read-only-login"])
    assert r.exit_code == 2 and "--require-read-only-login refuses it" in r.output
    r = runner.invoke(app, ["check", "--db", str(path), "--sql", SQL])
    assert r.exit_code == 0 and "VL05" in r.output

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"question_id": "1", "db_id": "pets_1", "question": "q", "sql": "", "gold": "SELECT 1"}\n')
    pred = tmp_path / "pred.sql"
    pred.write_text("SELECT 1\n")
    args = ["eval", "--dataset", str(tasks), "--db-root", str(writable_root), "--pred", str(pred), "--workers", "1",
            "--no-cache", "--quiet"]
    r = runner.invoke(app, args + ["--require-read-only-login"])
    assert r.exit_code == 2 and "pets_1: the login " in r.output and "refuses it" in r.output
    r = runner.invoke(app, args)
    assert r.exit_code == 0 and "may do more than read" not in r.output


def test_target_logins_reads_files_without_opening_them_and_leaves_out_what_is_missing(writable_root, tmp_path):
    path = writable_root / "pets_1" / "pets_1.sqlite"
    logins = target_logins([("pets_1", str(path)), ("again", str(path)), ("gone", str(tmp_path / "gone.sqlite")),
                            ("url", f"sqlite://{path}")])
    assert [(x.name, x.engine, x.may_write) for x in logins] == [("pets_1", "SQLite", True), ("url", "SQLite", True)]
