"""The reading of which columns a question asks for, and the model gate's projection check, on real
Spider-train databases and questions."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.db import connect
from sqlmend.matching import projection_columns
from sqlmend.search.asked import FEATURES, WEIGHTS, AskedReading, reading
from sqlmend.search.gate import PROJECTION, ModelGate
from sqlmend.stage import StageContext
from sqlmend.types import Task

EDITORS = "List the names of editors in ascending order of age."  # Spider train 650
STUDENTS = ("Which student's age is older than 18 and is majoring in 600? "
            "List each student's first and last name.")  # Spider train 2834
BALANCE = "For each state, find the total account balance of customers whose credit score is above 100."  # 3058


def test_the_shipped_weights_say_how_they_were_made():
    meta = json.loads(WEIGHTS.read_text())
    assert tuple(meta["features"]) == FEATURES and len(meta["coef"]) == len(FEATURES)
    assert meta["training"]["dataset"] == "spider-train" and meta["training"]["command"].startswith("sqlmend train-asked")
    assert 0 < meta["threshold"] < 0.5 and meta["measured"]["held_out_auroc"] > 0.9


@pytest.mark.parametrize("question, sql, asked", [
    (EDITORS, "SELECT Name, Age FROM editor ORDER BY Age ASC", [True, False]),  # the ORDER BY key, added
    (STUDENTS, "SELECT Fname, Lname FROM Student WHERE Age > 18 AND Major = 600", [True, True]),  # "last name"
    (BALANCE, "SELECT sum(acc_bal), state FROM customer WHERE credit_score > 100 GROUP BY state", [True, True]),
    (BALANCE, "SELECT state, cust_id FROM customer WHERE credit_score > 100", [True, False]),  # a key, added
    ("Which state has the most customers?",  # the count that orders, added
     "SELECT state, COUNT(*) FROM customer GROUP BY state ORDER BY COUNT(*) DESC LIMIT 1", [True, False]),
])
def test_what_the_question_asks_for(question, sql, asked):
    read = reading()
    probs = read.probabilities(question, sql)
    assert [p >= read.threshold for p in probs] == asked, probs


def test_it_cannot_tell_for_a_star_a_set_operation_or_unparsable_sql():
    read = reading()
    assert read.probabilities(EDITORS, "SELECT * FROM editor") is None
    assert read.probabilities(EDITORS, "SELECT e.* FROM editor AS e") is None
    assert read.probabilities(EDITORS, "SELECT Name FROM editor UNION SELECT Name FROM journal") is None
    assert read.probabilities(EDITORS, "SELECT Name FROM editor WHERE") is None


def test_weights_of_other_features_are_refused(tmp_path):
    bad = tmp_path / "asked.json"
    bad.write_text(json.dumps({**json.loads(WEIGHTS.read_text()), "features": ["x"]}))
    with pytest.raises(ValueError, match="train-asked"):
        AskedReading(bad)


def test_projection_columns():
    wide = [("x", 1, "a"), ("y", 2, "b")]
    assert projection_columns(wide, [(2, "b"), (1, "a")]) == (1, 2)
    assert projection_columns(wide, [("a", "x"), ("b", "y")]) == (2, 0)
    assert projection_columns(wide, [("x", "b"), ("y", "a")]) is None  # not the same rows
    assert projection_columns(wide, wide) is None  # drops nothing
    assert projection_columns([], [("x",)]) is None


def _gate(db, question: str, sql: str, candidate: str):
    task = Task(question_id="t", db_id="db", question=question, sql=sql)
    return ModelGate().check(StageContext(task=task, db=db, sql=sql), candidate, [])


def test_the_gate_admits_a_rewrite_that_drops_a_column_the_question_does_not_ask_for(spider_db):
    with connect(str(spider_db("journal_committee"))) as db:
        verdict = _gate(db, EDITORS, "SELECT Name, Age FROM editor ORDER BY Age ASC",
                        "SELECT Name FROM editor ORDER BY Age ASC")
    assert verdict.admitted and verdict.by == PROJECTION
    assert "Age (P(asked)" in verdict.note


def test_the_gate_keeps_a_column_the_question_asks_for_by_part_of_its_name(spider_db):
    with connect(str(spider_db("restaurant_1"))) as db:
        verdict = _gate(db, STUDENTS, "SELECT Fname, Lname FROM Student WHERE Age > 18 AND Major = 600",
                        "SELECT Fname FROM Student WHERE Age > 18 AND Major = 600")
    assert not verdict.admitted and verdict.by != PROJECTION


def test_the_gate_keeps_a_rewrite_that_returns_other_rows(spider_db):
    with connect(str(spider_db("journal_committee"))) as db:
        verdict = _gate(db, EDITORS, "SELECT Name, Age FROM editor ORDER BY Age ASC",
                        "SELECT Name FROM editor WHERE Age > 40 ORDER BY Age ASC")
    assert verdict.by != PROJECTION


@pytest.mark.slow
def test_train_asked_rebuilds_the_shipped_weights(tmp_path):
    """The command written in the weights makes the same weights (Spider train, a seeded draw)."""
    from sqlmend.cli import app

    out = tmp_path / "asked.json"
    result = CliRunner().invoke(app, ["train-asked", "--out", str(out)])
    assert result.exit_code == 0, result.output
    new, shipped = json.loads(out.read_text()), json.loads(WEIGHTS.read_text())
    assert new["coef"] == shipped["coef"] and new["threshold"] == shipped["threshold"]
    assert new["measured"] == shipped["measured"]


def test_train_asked_refuses_dev(tmp_path):
    from sqlmend.cli import app

    result = CliRunner().invoke(app, ["train-asked", "--dataset", "spider-dev", "--out", str(tmp_path / "a.json")])
    assert result.exit_code != 0
