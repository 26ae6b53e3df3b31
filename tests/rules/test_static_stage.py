"""StaticStage on real databases: strict fixes applied through the engine and the guard."""

from __future__ import annotations

import pytest

from sqlmend.rules import engine
from sqlmend.rules.stage import StaticStage
from sqlmend.stage import RunSettings, StageContext
from sqlmend.types import Task


@pytest.fixture()
def run(spider_db):
    from sqlmend.db import connect

    def go(db_id: str, sql: str):
        with connect(str(spider_db(db_id))) as db:
            task = Task(question_id="t", db_id=db_id, question="", sql=sql)
            return StaticStage(run=RunSettings(timeout=5)).run(StageContext(task=task, db=db, sql=sql))

    return go


def test_strict_fix_passes_the_guard(run):
    trace = run("car_1", "SELECT T1.Make, T1.Year FROM cars_data AS T1 "
                         "JOIN car_names AS T2 ON T1.Id = T2.MakeId ORDER BY T1.Year LIMIT 1")
    assert trace.status == "ran" and [f.code for f in trace.findings] == ["AT01"]
    assert trace.verdict.accepted, trace.verdict.reason
    assert "T2.Make" in trace.verdict.sql


def test_a_correct_query_is_left_alone(run):
    sql = "SELECT Name FROM singer WHERE Country = 'France'"
    trace = run("concert_singer", sql)
    assert trace.findings == [] and trace.candidate is None and trace.verdict is None


def test_advisory_findings_are_hints_only(run):
    trace = run("world_1", "SELECT Language FROM countrylanguage WHERE IsOfficial = 1")
    assert [f.code for f in trace.findings] == ["VL02"]
    assert trace.findings[0].severity == "advisory" and trace.candidate is None


def test_engine_refuses_a_stale_fix():
    fix = {"op": "replace_literal", "path": "where.this.expression", "expect": "'y'", "value": "z"}
    with pytest.raises(engine.FixError):
        engine.apply("SELECT a FROM t WHERE b = 'x'", [fix])
    with pytest.raises(engine.FixError):
        engine.apply("SELECT a FROM t", [{"op": "drop_table", "path": ""}])
