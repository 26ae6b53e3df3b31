"""The training-set builder on real Spider training questions, and AsiLLM labelling with a recorded answer."""

from __future__ import annotations

import json

import pytest

from sqlmend import taxonomy
from sqlmend.db import connect
from sqlmend.detect.asillm import label_predictions
from sqlmend.errors import ConfigError
from sqlmend.llm.replay import ReplayBackend
from sqlmend.synth import differs, label_distribution, synthesize
from sqlmend.types import Task


@pytest.fixture(scope="module")
def train_tasks(spider_dir):
    rows = json.loads((spider_dir / "train_spider.json").read_text())[:120:6]
    return [Task(str(i), r["db_id"], r["question"], r["query"], gold=r["query"]) for i, r in enumerate(rows)]


def test_synthesize_gold_and_verified_errors(train_tasks, spider_db):
    examples = [e for e in synthesize(train_tasks, spider_db, per_question=1, compose_rate=1.0, seed=3)
                if not isinstance(e, str)]
    gold = [e for e in examples if e.source == "gold"]
    errors = [e for e in examples if e.source == "rule"]
    assert len(gold) == len(train_tasks)
    assert all(e.labels == [taxonomy.NO_ERROR] and e.sql == e.gold for e in gold)
    assert len(errors) >= len(train_tasks) // 2
    assert any(len(e.labels) == 2 for e in errors)  # composed multi-error examples
    for e in errors:
        assert taxonomy.NO_ERROR not in e.labels and e.sql != e.gold
        assert e.labels == sorted(e.labels, key=lambda t: taxonomy.get(t).slot)
        assert set(e.context) == {"sql", "qss", "ast", "exec"}
        with connect(spider_db(e.db_id)) as db:  # the execution-difference check, redone here
            assert differs(db.execute(e.sql), db.execute(e.gold))
    dist = label_distribution(examples)
    assert dist["examples"] == len(examples) and dist["label:no_error"] == len(gold)


def test_synthesize_reports_a_missing_database(spider_db):
    task = Task("x", "no_such_db", "q", "SELECT 1", gold="SELECT 1")
    out = list(synthesize([task], lambda d: f"/nowhere/{d}.sqlite"))
    assert len(out) == 1 and isinstance(out[0], str) and out[0].startswith("x: skipped")


def test_asillm_labels_a_real_wrong_prediction(spider_db):
    gold = "SELECT name FROM singer WHERE age > 40"
    tasks = [Task("1", "concert_singer", "Singers older than 40?", "SELECT name FROM singer WHERE age < 40", gold=gold),
             Task("2", "concert_singer", "Singers older than 40?", "SELECT Name FROM singer WHERE Age > 40", gold=gold)]
    backend = ReplayBackend(mode="queue", answers=['{"errors": ["condition_error", "made_up_type"]}'])
    out = list(label_predictions(tasks, spider_db, backend))
    labelled = [x for x in out if not isinstance(x, str)]
    assert len(labelled) == 1 and labelled[0].labels == ["condition_error"] and labelled[0].source == "asillm"
    assert any(isinstance(x, str) and "correct" in x for x in out)  # the right prediction is not asked about


def test_asillm_without_a_model_says_so(spider_db):
    with pytest.raises(ConfigError, match="no model is configured"):
        list(label_predictions([], spider_db, None))
