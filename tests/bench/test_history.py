"""bench history's parts on real car_1 questions: one search per question, labels from the gold, decisions, cache."""

from __future__ import annotations

import pytest

from sqlmend.bench import history
from sqlmend.db import connect
from sqlmend.search import adaptation as adapt
from sqlmend.types import Task

Q = "How many car makers are there?"
GOLD = "SELECT count(*) FROM CAR_MAKERS"


@pytest.fixture
def searched(spider_db):
    tasks = [Task("w", "car_1", Q, "", gold=GOLD), Task("c", "car_1", Q, "", gold=GOLD)]
    preds = {"w": "SELECT count(*) FROM car_makers WHERE Id > 5", "c": "SELECT count(*) FROM car_makers"}
    with connect(str(spider_db("car_1"))) as db:
        yield history.collect(tasks, preds, lambda db_id: db, keep_ctx=True), tasks, preds, db


def test_one_search_per_question_labels_candidates_by_the_gold_rows(searched):
    records, _, _, _ = searched
    w, c = records["w"], records["c"]
    assert not w.original_right and c.original_right
    assert w.observation is not None and w.reach  # searched (the verifier doubts it); the gold's rows reached
    assert w.observation.candidates[0]["right"] and w.top[0]
    assert w.observation.db_id == "car_1" and w.observation.group.startswith("car_1|")
    if c.observation is not None:  # a correct prediction: every change is wrong
        assert not any(x["right"] for x in c.observation.candidates)


def test_without_an_adaptation_the_decision_is_the_shipped_one(searched):
    records, _, _, _ = searched
    out, secs = history.decide(records, ["w", "c"], None, 0.4)
    assert secs == [] and out["c"] == records["c"].after_static
    assert out["w"] == (records["w"].shipped_sql or records["w"].after_static)


def test_the_cache_keeps_the_searches_and_rebuilds_a_context_on_demand(searched, tmp_path, monkeypatch):
    records, tasks, preds, db = searched
    history.write_cache(tmp_path / "c.pkl", records, 1.5)

    class Data:
        def task(self, q):
            return next(t for t in tasks if t.question_id == q)

    back, seconds = history.read_cache(tmp_path / "c.pkl", Data(), preds, lambda db_id: db)
    assert seconds == 1.5 and back["w"].ctx is None and back["w"].top == records["w"].top
    assert back["w"].context().sql == records["w"].after_static


def test_a_fit_on_records_names_the_history(searched):
    records, _, _, _ = searched
    a = history.fit_records("sys", records, ["w", "c"], 2)
    assert isinstance(a, adapt.Adaptation) and a.history["questions"] == 2 and a.threshold is None
