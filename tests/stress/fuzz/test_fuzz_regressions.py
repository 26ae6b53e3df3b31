"""Every failure ``sqlmend bench fuzz`` found, kept as a test (on the committed example database)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest
from fastapi.testclient import TestClient

from sqlmend.api import Corrector
from sqlmend.data import load_predictions, read_tasks
from sqlmend.data.datasets import Dataset
from sqlmend.errors import DatasetError, ReadOnlyViolation, SqlParseError
from sqlmend.pipeline import PipelineConfig, correct_batch, read_checkpoint
from sqlmend.service import ServiceSettings, create_app
from sqlmend.sql import parse
from sqlmend.sql.safety import check_read_only
from sqlmend.types import Task

CONFIG = PipelineConfig(timeout=2.0)


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def fixer(fuzz_db):
    with Corrector(fuzz_db, config=CONFIG, models=lambda stage: None) as c:
        yield c


# --- deep nesting ------------------------------------------------------------------------


def test_subqueries_nested_thousands_deep_do_not_crash_the_process(fuzz_db):
    """Found: ``SELECT * FROM (SELECT * FROM (... 10,000 deep`` overflowed the C stack of sqlglot's
    compiled parser: a segfault of the whole process (the service with it). Now refused before
    sqlglot reads it; run in a child process so that a regression fails here, not the suite."""
    code = textwrap.dedent(f"""
        from sqlmend.api import Corrector
        sql = "SELECT * FROM " + "(SELECT * FROM " * 20000 + "city" + ")" * 20000
        with Corrector({str(fuzz_db)!r}, stages="static,search,guard", timeout=2) as fixer:
            r = fixer.correct("?", sql)
        print(r.sql == sql, r.error, [s.status for s in r.stages])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[:2] == ["True", "None"], out.stdout
    assert "failed" not in out.stdout


@pytest.mark.parametrize("sql", [
    "SELECT " + "(" * 1000 + "1" + ")" * 1000 + " FROM city",               # RecursionError in parse
    "SELECT " + "CASE WHEN 1 THEN " * 150 + "1" + " END" * 150 + " FROM city",  # RecursionError in the stages
    "SELECT * FROM " + "(SELECT * FROM " * 100 + "city" + ")" * 100,          # minutes of tree walks
    "SELECT name FROM city WHERE " + "NOT " * 3000 + "1",
])
def test_a_query_nested_too_deeply_is_kept_with_no_stage_failing(fixer, sql):
    with pytest.raises(SqlParseError, match="nested too deeply"):
        parse(sql)
    result = fixer.correct("?", sql)
    assert result.sql == sql and result.error is None
    assert [s.note for s in result.stages if s.status == "failed"] == []


def test_the_read_only_check_refuses_what_it_cannot_read():
    with pytest.raises(ReadOnlyViolation, match="nested too deeply"):
        check_read_only("SELECT * FROM " + "(SELECT * FROM " * 5000 + "city" + ")" * 5000)
    check_read_only("SELECT '" + "(" * 5000 + "' FROM city")  # parentheses in a string do not nest


# --- lone surrogates ------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["sql", "question", "evidence"])
def test_a_lone_surrogate_is_the_items_typed_error(fixer, fuzz_db, field):
    """Found: ``\\ud800`` (a client's escaped JSON, an undecodable argv byte) failed the static and
    search stages with UnicodeEncodeError, and the service's answer could not be written (500)."""
    before = sha256(fuzz_db)
    args = {"sql": "SELECT name FROM city", "question": "Which cities?", "evidence": ""}
    args[field] += "\ud800"
    result = fixer.correct(args["question"], args["sql"], args["evidence"])
    assert result.error == f"InputError: the {field} is not valid Unicode: a lone surrogate '\\ud800' at " \
                           f"character {len(args[field])}"
    assert result.sql == args["sql"] and sha256(fuzz_db) == before


def test_the_service_answers_a_lone_surrogate_with_escaped_json(fuzz_db):
    app = create_app(CONFIG, resolve=lambda s: None, db_root=str(fuzz_db.parent.parent),
                     settings=ServiceSettings())
    body = json.dumps({"db_id": "fuzz", "question": "q", "sql": "SELECT na\ud800me FROM city"})
    with TestClient(app) as client:
        r = client.post("/correct", content=body.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 200 and b"\\ud800" in r.content
    assert r.json()["error"].startswith("InputError") and r.json()["sql"] == "SELECT na\ud800me FROM city"


def test_a_checkpoint_line_holds_a_lone_surrogate(fuzz_db, tmp_path):
    tasks = [Task("a", "fuzz", "q", "SELECT \udcff FROM city", db=str(fuzz_db)),
             Task("b", "fuzz", "q", "SELECT name FROM city", db=str(fuzz_db))]
    out = correct_batch(tasks, PipelineConfig(stages=["static", "guard"]), checkpoint=tmp_path / "c.jsonl",
                        progress=False)
    assert out[0].error.startswith("InputError") and out[1].error is None
    assert read_checkpoint(tmp_path / "c.jsonl")["a"].original_sql == "SELECT \udcff FROM city"


# --- files of other tools ---------------------------------------------------------------------

TASKS = [Task(question_id=str(i), db_id="fuzz", question="q", sql="") for i in range(3)]


def test_invalid_utf8_in_a_spider_prediction_file_empties_that_line_alone(tmp_path, capsys):
    """Found: invalid UTF-8 (or latin-1) anywhere raised UnicodeDecodeError for the whole file."""
    path = tmp_path / "p.sql"
    path.write_bytes(b"\xef\xbb\xbfSELECT 1\nSELECT 'caf\xe9'\nSELECT 3\n")  # a BOM, then a latin-1 line
    assert load_predictions(path, Dataset("d", list(TASKS)), fmt="spider") == {"0": "SELECT 1", "1": "",
                                                                               "2": "SELECT 3"}
    assert "p.sql:2: not valid UTF-8 (byte 0xe9 at column 12)" in capsys.readouterr().err


def test_invalid_utf8_in_a_json_file_names_its_line(tmp_path):
    path = tmp_path / "p.json"
    path.write_bytes(b'{"0": "SELECT 1",\n "1": "SELECT \xff"}')
    with pytest.raises(DatasetError, match=r"p.json:2: not valid UTF-8 \(byte 0xff"):
        load_predictions(path, Dataset("d", list(TASKS)), fmt="bird")


def test_a_bom_and_a_bad_line_of_a_jsonl_file_leave_the_rest_readable(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    lines = [json.dumps({"question_id": str(i), "db_id": "fuzz", "question": "q", "sql": "SELECT 1"})
             for i in range(4)]
    data = b"\xef\xbb\xbf" + "\n".join(lines[:2]).encode() + b"\n" + b'{"question_id": "2", "db_id": "\xff"}' \
        + b"\n" + lines[3].encode() + b"\n"  # a BOM before line 1; line 3 is not UTF-8
    path.write_bytes(data)
    tasks, _ = read_tasks(path, "jsonl")
    assert [t.question_id for t in tasks] == ["0", "1", "3"]
    assert "t.jsonl:3: not valid UTF-8 (byte 0xff" in capsys.readouterr().err


@pytest.mark.parametrize("record", [{"db_id": 5}, {"question": {"a": 1}}, {"sql": ["x"]}, {"question_id": [1]}])
def test_a_task_line_whose_fields_are_not_text_is_left_out(tmp_path, capsys, record):
    """Found: ``"db_id": 5`` or ``"sql": ["x"]`` went into the tasks and failed later, far from the file."""
    good = {"question_id": "0", "db_id": "fuzz", "question": "q", "sql": "SELECT 1"}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "question_id": "1", **record}) + "\n")
    tasks, _ = read_tasks(path, "jsonl")
    assert [t.question_id for t in tasks] == ["0"]
    assert "t.jsonl:2: field" in capsys.readouterr().err


@pytest.mark.parametrize("item", [True, 1.5, None, "x", [1]])
def test_a_spider_task_list_item_that_is_not_an_object_names_the_item(tmp_path, item):
    """Found: ``[true]`` in a Spider task file raised TypeError ('bool' is not iterable)."""
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([{"db_id": "fuzz", "question": "q", "query": "SELECT 1"}, item]))
    with pytest.raises(DatasetError, match="dev.json item 1: expected a JSON object"):
        read_tasks(path, "spider")


# --- one precedence -------------------------------------------------------------------------


def test_an_empty_sql_on_an_unknown_database_is_the_unknown_database(tmp_path):
    """Found in review of the doors (issue 35): the service answered "database not found" where
    the batch answered "empty SQL"; the database is resolved first everywhere now."""
    from sqlmend.api import Correctors
    from sqlmend.pipeline import Pipeline

    task = Task("q", "nope", "?", "", db=str(tmp_path / "nope.sqlite"))
    pipe = Pipeline(PipelineConfig(stages=["static", "guard"]))
    assert pipe.correct(task).error.startswith("DatabaseNotFoundError")
    assert Correctors(pipe).answer(task).error == pipe.correct(task).error


def test_an_undecodable_command_line_byte_is_the_items_error_not_a_crash(fuzz_db):
    """An argv byte that is not UTF-8 reaches Python as a lone surrogate: the explanation printed it
    to the terminal and crashed with UnicodeEncodeError."""
    cmd = [sys.executable, "-c", "from sqlmend.cli import main; main()", "correct", "--db", str(fuzz_db),
           "--question", "q", "--sql", b"SELECT \xff FROM city", "--stages", "static,guard"]
    out = subprocess.run(cmd, capture_output=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert out.returncode == 1, out.stderr.decode(errors="replace")[-1000:]
    assert b"InputError: the sql is not valid Unicode" in out.stdout and b"SELECT \\udcff FROM city" in out.stdout
