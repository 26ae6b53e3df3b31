"""Mechanical repair units proven by database evidence (no model), built from and applied to real Spider data."""

from __future__ import annotations

import pytest

from sqlmend.db import connect
from sqlmend.memory.build import BuildReport, ConfirmedCorrection, build_items, build_memory
from sqlmend.memory.edits import EditGroup
from sqlmend.memory.isolation import IsolatedGroup
from sqlmend.memory.judge import classify
from sqlmend.memory.stage import MemoryStage
from sqlmend.memory.store import MemoryStore
from sqlmend.stage import StageContext
from sqlmend.types import Edit, Task

# Spider dev #112 as DIN-SQL/GPT-4 predicted it: the car name compared with the wrong column.
CAR = ConfirmedCorrection(
    "112", "How much does the car accelerate that makes amc hornet sportabout (sw)?",
    "SELECT T1.Accelerate FROM cars_data AS T1 JOIN car_names AS T2 ON T1.Id = T2.MakeId "
    "WHERE T2.Model = 'amc hornet sportabout (sw)'",
    "SELECT T1.Accelerate FROM CARS_DATA AS T1 JOIN CAR_NAMES AS T2 ON T1.Id  =  T2.MakeId "
    "WHERE T2.Make  =  'amc hornet sportabout (sw)';")


@pytest.fixture
def car_db(spider_db):
    with connect(spider_db("car_1")) as db:
        yield db


def _iso(*edits: Edit) -> IsolatedGroup:
    return IsolatedGroup(EditGroup(list(edits)), "reverted", "repair")


def test_classify_rebinding_inside_a_compound_condition_and_across_edits():
    inside = Edit("replace", "where", "addresses.country = 'Haiti' OR students.cell = '097'",
                  "addresses.country = 'haiti' OR students.cell = '097'")
    kind, p = classify(_iso(inside))
    assert kind == "value_binding" and (p["column"], p["wrong"], p["right"]) == ("addresses.country", "Haiti", "haiti")
    two = [Edit("replace", "where", "students.first_name = 'Tim'", "students.first_name = 'tim'"),
           Edit("replace", "where", "students.last_name = 'Ward'", "students.last_name = 'ward'")]
    kind, p = classify(_iso(*two))
    assert kind == "value_binding" and [b["column"] for b in p["bindings"]] == ["students.first_name",
                                                                              "students.last_name"]
    operator = Edit("replace", "where", "a.x = 'v' OR a.y = 'w'", "a.x = 'u' AND a.y = 'w'")
    assert classify(_iso(operator))[0] == "general"  # the connector changed too


def test_predicate_column_is_proven_by_where_the_value_is_stored(car_db):
    report = BuildReport()
    [item] = build_items(car_db, CAR, report=report, db_id="car_1")
    assert item.kind == "predicate_column" and item.error_type == "attribute_mismatch"
    assert item.check.params == {"wrong": "car_names.model", "right": "car_names.make",
                                 "value": "amc hornet sportabout (sw)", "clause": "where"}
    assert item.support.judged_by == "mechanical" and item.support.facts["contrast"]["same_result"] is False
    rows = {(o["side"], o["column"]): o["rows"] for o in item.support.facts["predicates"]}
    assert rows == {("before", "car_names.model"): 0, ("after", "car_names.make"): 1}


def test_predicate_column_item_repairs_a_new_query_and_spares_a_right_one(tmp_path, car_db):
    with MemoryStore(tmp_path, "car_1") as store:
        assert build_memory(car_db, "car_1", [CAR], store).items == 1
    stage = MemoryStage.from_config({"store": str(tmp_path)})

    def run(sql):
        task = Task("t", "car_1", "What is the horsepower of the car?", sql)
        return stage.run(StageContext(task=task, db=car_db, sql=sql))

    base = "SELECT T1.Horsepower FROM cars_data AS T1 JOIN car_names AS T2 ON T1.Id = T2.MakeId WHERE "
    fixed = run(base + "T2.Model = 'ford torino'")  # a full name: stored in make, not in model
    assert fixed.verdict.accepted, fixed.note
    assert fixed.candidate == base + "T2.make = 'ford torino'" and fixed.detail["how"] == "mechanical"
    kept = run(base + "T2.Model = 'ford'")  # 'ford' is a stored model: no violation
    assert kept.candidate is None and "rows in car_names.model" in kept.detail["activation"][0]["reason"]


def test_gold_that_binds_an_unstored_value_gives_no_item(spider_db):
    """Spider dev #583: the gold writes 'haiti', the database stores 'Haiti' - the evidence refuses the unit."""
    case = ConfirmedCorrection("583", "Students living in Haiti?",
                      "SELECT first_name FROM students AS T1 JOIN addresses AS T2 ON T1.permanent_address_id = "
                      "T2.address_id WHERE T2.country = 'Haiti' AND T1.student_id > 0",
                      "SELECT first_name FROM students AS T1 JOIN addresses AS T2 ON T1.permanent_address_id = "
                      "T2.address_id WHERE T2.country = 'haiti' AND T1.student_id > 0")
    logged = []
    with connect(spider_db("student_transcripts_tracking")) as db:
        items = build_items(db, case, log=lambda *a: logged.append(a), db_id="student_transcripts_tracking")
    assert items == []
    assert any("'Haiti' matches 1 rows, 'haiti' matches 0" in reason for _, _, reason in logged)


def test_multi_binding_item_rebinds_every_column_it_recorded(tmp_path, concert_db, make_item):
    params = {"column": "singer.country", "wrong": "france", "right": "France", "clause": "where",
              "bindings": [{"column": "singer.country", "wrong": "france", "right": "France", "clause": "where"},
                           {"column": "singer.name", "wrong": "joe sharp", "right": "Joe Sharp", "clause": "where"}]}
    with MemoryStore(tmp_path, "concert_singer") as store:
        store.add(make_item("concert_singer", "value_binding", params,
                            ["cmp:singer.country", "cmp:singer.name", "table:singer"], ["singer.country"]))
    sql = "SELECT age FROM singer WHERE country = 'netherlands' OR name = 'joe sharp'"
    trace = MemoryStage.from_config({"store": str(tmp_path)}).run(StageContext(task=Task("t", "concert_singer", "q", sql), db=concert_db, sql=sql))
    assert trace.verdict.accepted, trace.note
    assert trace.candidate == "SELECT age FROM singer WHERE country = 'Netherlands' OR name = 'Joe Sharp'"
