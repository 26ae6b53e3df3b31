"""Property-based fuzzing (Hypothesis) of the whole correction path on the example database:
through the Python API (``Corrector.correct`` / ``check``) and the HTTP service (FastAPI's test
client), mutated queries (``sqlmend.stress.fuzz.SQL_MUTATIONS``) and arbitrary text.

Properties: nothing raises; every error is a typed sqlmend error (or "empty SQL"); no stage fails
with an untyped exception; the database's bytes are unchanged; the output is the input or one query
that parses and runs on a fresh read-only connection."""

from __future__ import annotations

import hashlib
import json
import random

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings, strategies as st

from sqlmend.api import Corrector
from sqlmend.stress.fuzz import EXAMPLE_QUERIES, SQL_MUTATIONS, TYPED, mutate
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.pipeline import PipelineConfig
from sqlmend.service import ServiceSettings, create_app
from sqlmend.sql import parse



def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()

FUZZ = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CONFIG = PipelineConfig(timeout=2.0)  # the default stages: static, memory, search, refine (no model), guard


def typed(error: str | None) -> bool:
    return error is None or error == "empty SQL" or error.split(":", 1)[0] in TYPED


@st.composite
def mutated_sql(draw) -> str:
    """A query of the example database mutated by one to three of the fuzz's mutations."""
    sql = draw(st.sampled_from(EXAMPLE_QUERIES))
    names = draw(st.lists(st.sampled_from(sorted(SQL_MUTATIONS)), min_size=1, max_size=3))
    table = draw(st.sampled_from(["city", "person", '"order items"']))
    return mutate(random.Random(draw(st.integers(0, 2**32))), sql, table, names)[0]


SQL = st.one_of(mutated_sql(), st.text(max_size=200), st.sampled_from(EXAMPLE_QUERIES))
QUESTION = st.one_of(st.text(max_size=300), st.sampled_from(["", "How many?", "\x00", "'; DROP TABLE city; --"]))


@pytest.fixture(scope="module")
def fixer(fuzz_db):
    with Corrector(fuzz_db, config=CONFIG, models=lambda stage: None) as c:
        yield c


@pytest.fixture(scope="module")
def client(fuzz_db):
    app = create_app(CONFIG, resolve=lambda stage: None, db_root=str(fuzz_db.parent.parent),
                     settings=ServiceSettings(deadline=120.0, max_body_bytes=1 << 22))
    with TestClient(app) as c:
        yield c


def assert_answer(db_path, before: str, sql_in: str, sql_out: str, error: str | None, stages) -> None:
    assert typed(error), error
    for s in stages:
        status, note = (s.status, s.note) if hasattr(s, "status") else (s["status"], s["note"])
        assert status != "failed" or typed(note), note
    assert sha256(db_path) == before
    if sql_out != sql_in:
        parse(sql_out)
        with connect(db_path) as db:
            db.execute(sql_out, timeout=2.0)


@FUZZ
@given(sql=SQL, question=QUESTION, evidence=st.text(max_size=50), check=st.booleans())
def test_the_python_api_answers_every_input(fixer, fuzz_db, sql, question, evidence, check):
    before = sha256(fuzz_db)
    run = fixer.check if check else fixer.correct
    result = run(question, sql, evidence)
    assert_answer(fuzz_db, before, sql, result.sql, result.error, result.stages)


@FUZZ
@given(sql=SQL, question=QUESTION)
def test_the_service_answers_every_input(client, fuzz_db, sql, question):
    before = sha256(fuzz_db)
    body = json.dumps({"db_id": "fuzz", "question": question, "sql": sql})  # "\ud800" escaped, as clients send it
    r = client.post("/correct", content=body.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert_answer(fuzz_db, before, sql, answer["sql"], answer["error"], answer["stages"])


def test_several_statements_are_refused_and_never_run(fixer, fuzz_db):
    before = sha256(fuzz_db)
    for tail in ("; DROP TABLE city", "; DELETE FROM person", "; PRAGMA writable_schema = ON",
                 "; VACUUM INTO 'x.db'", "; ATTACH DATABASE 'x.db' AS x"):
        result = fixer.correct("?", "SELECT name FROM city" + tail)
        assert result.refused and result.sql == "SELECT name FROM city" + tail, tail
    assert sha256(fuzz_db) == before


def test_a_typed_error_names_its_item(fixer):
    result = fixer.correct("?", "SELECT \ud800 FROM city", question_id="item-7")
    assert result.error.startswith("InputError: the sql is not valid Unicode")
    assert result.correction.question_id == "item-7" and "InputError" in {c.__name__ for c in
                                                                        SqlmendError.__subclasses__()}
