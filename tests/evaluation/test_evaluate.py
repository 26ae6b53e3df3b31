"""The evaluator on real Spider databases: known verdicts, gold vs itself, the five shared files."""

from __future__ import annotations

import pickle

import pytest

from sqlmend.evaluation import evaluate
from sqlmend.evaluation.evaluate import CACHE_VERSION, EvalReport, forget_loaded_caches
from sqlmend.evaluation.executor import QueryPool
from sqlmend.data import Dataset, load_dataset, load_predictions
from sqlmend.types import Task

PRED_FILES = {  # the shared prediction files and their published correct counts (data README)
    "din-sql_gpt-4.sql": 791,
    "dail-sql_gpt-4.sql": 788,
    "c3sql_gpt-3.5.sql": 769,
    "codes-1b.sql": 743,
    "gpt-4_zero-shot.sql": 688,
}

# (gold, prediction, verdict, ordered_correct, detail) on concert_singer, plus one on a missing database.
HANDMADE = [
    ("SELECT count(*) FROM singer", "SELECT count(*)  FROM singer", "correct", True, ""),
    ("SELECT name FROM singer WHERE country = 'France'", "SELECT name FROM singer WHERE country = 'Netherlands'",
     "wrong", False, "rows differ"),
    ("SELECT name FROM singer", "SELECT name, age FROM singer", "wrong", False, "column count differs (2 vs 1)"),
    ("SELECT name FROM singer ORDER BY age DESC", "SELECT name FROM singer ORDER BY age ASC",
     "correct", False, "order differs"),
    ("SELECT DISTINCT country FROM singer", "SELECT country FROM singer", "correct", False,
     "duplicate rows differ"),
    ("SELECT name FROM singer WHERE age > 100", "SELECT name FROM singer WHERE age > 30",
     "wrong", False, "extra rows"),
    ("SELECT count(*) FROM singer",
     "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
     "pred_timeout", False, None),
    ("SELECT count(*) FROM singer", "SELEC count(*) FROM singer", "pred_error", False, None),
    ("SELECT count(*) FROM singer", "SELECT count(*) FROM no_such_table", "pred_error", False, None),
    ("SELECT count(*) FROM singer", "DELETE FROM singer", "pred_error", False, None),
]


@pytest.fixture(scope="module")
def handmade(spider_dir, tmp_path_factory):
    tasks = [Task(question_id=str(i), db_id="concert_singer", question=f"q{i}", sql="", gold=gold)
             for i, (gold, *_rest) in enumerate(HANDMADE)]
    tasks.append(Task(question_id=str(len(HANDMADE)), db_id="wta_1", question="no db", sql="",
                      gold="SELECT count(*) FROM players"))
    ds = Dataset(name="handmade", tasks=tasks, db_root=spider_dir / "database")
    pred_file = tmp_path_factory.mktemp("preds") / "handmade.sql"
    pred_file.write_text("".join(p + "\n" for _g, p, *_r in HANDMADE) + "SELECT 1\n")
    return ds, load_predictions(pred_file, ds)


def test_handmade_verdicts(handmade, gold_cache):
    ds, preds = handmade
    report = evaluate(ds, preds, timeout=1.0, workers=2, cache_root=gold_cache)
    for i, (_gold, _pred, verdict, ordered, detail) in enumerate(HANDMADE):
        r = report.result(str(i))
        assert (r.verdict, r.ordered_correct) == (verdict, ordered), (i, r)
        if detail is not None:
            assert r.detail == detail, (i, r)
    missing = report.result(str(len(HANDMADE)))
    assert missing.verdict == "gold_error" and "wta_1" in missing.detail
    s = report.summary()
    assert (s.n, s.excluded, s.correct, s.correct_ordered) == (len(HANDMADE), 1, 3, 1)
    assert s.verdicts == {"correct": 3, "wrong": 3, "pred_error": 3, "pred_timeout": 1, "gold_error": 1}
    # without the suspects: figures over the rest
    assert report.summary(exclude=["0", "1"]).n == len(HANDMADE) - 2


def test_report_round_trips_through_json(handmade, gold_cache):
    ds, preds = handmade
    report = evaluate(ds, preds, timeout=1.0, cache_root=gold_cache, suspect_ids=["2", "99"])
    assert report.suspect_ids == ["2"]  # ids not in the dataset are dropped
    again = EvalReport.from_dict(report.to_dict())
    assert again.summary() == report.summary() and again.results == report.results


def test_gold_against_itself_is_all_correct(spider_dev, gold_cache):
    report = evaluate(spider_dev, spider_dev.gold, cache_root=gold_cache)
    s = report.summary()
    assert (s.n, s.excluded, s.correct, s.correct_ordered) == (972, 62, 972, 972)
    assert {r.db_id for r in report.results if not r.scored} == {"wta_1"}


@pytest.fixture(scope="module")
def shared_pool():
    """One pool of workers for several files, as ``sqlmend bench eval`` runs them."""
    with QueryPool(workers=2, timeout=30.0) as pool:
        yield pool


@pytest.mark.parametrize("name, correct", PRED_FILES.items())
def test_shared_prediction_files_give_the_published_counts(spider_dev, pred_dir, gold_cache, shared_pool,
                                                           name, correct):
    report = evaluate(spider_dev, load_predictions(pred_dir / name, spider_dev), cache_root=gold_cache,
                      label=name, pool=shared_pool)
    s = report.summary()
    assert (s.n, s.excluded, s.correct) == (972, 62, correct)
    assert s.correct_ordered <= s.correct
    assert sum(d["n"] for d in s.by_difficulty.values()) == 972


def test_gold_cache_is_used_and_keyed_by_sql(handmade, tmp_path):
    ds, preds = handmade
    first = evaluate(ds, preds, timeout=1.0, cache_root=tmp_path)
    second = evaluate(ds, preds, timeout=1.0, cache_root=tmp_path)
    assert (first.gold_cached, second.gold_cached) == (0, len(HANDMADE))
    assert [(r.verdict, r.ordered_correct) for r in second.results] == \
        [(r.verdict, r.ordered_correct) for r in first.results]
    changed = Dataset(name="handmade", tasks=[Task("0", "concert_singer", "q", "", gold="SELECT 2")],
                      db_root=ds.db_root)
    third = evaluate(changed, {"0": "SELECT 2"}, timeout=1.0, cache_root=tmp_path)
    assert third.gold_cached == 0 and third.result("0").verdict == "correct"


def test_a_pool_with_another_time_limit_is_refused(handmade, tmp_path):
    ds, preds = handmade
    with QueryPool(workers=1, timeout=5.0) as pool, pytest.raises(ValueError, match="timeout"):
        evaluate(ds, preds, timeout=1.0, cache_root=tmp_path, pool=pool)


def test_gold_cache_rewritten_on_disk_is_read_again(handmade, tmp_path):
    ds, preds = handmade
    evaluate(ds, preds, timeout=1.0, cache_root=tmp_path)
    assert evaluate(ds, preds, timeout=1.0, cache_root=tmp_path).gold_cached == len(HANDMADE)
    (cache_file,) = tmp_path.glob("*.pkl")
    cache_file.write_bytes(pickle.dumps({}))  # another process emptied it
    assert evaluate(ds, preds, timeout=1.0, cache_root=tmp_path).gold_cached == 0
    forget_loaded_caches()
    assert evaluate(ds, preds, timeout=1.0, cache_root=tmp_path).gold_cached == len(HANDMADE)


def test_a_gold_cache_of_classes_that_moved_is_computed_again(handmade, tmp_path):
    """A cache pickled when the evaluator lived in another module (sqlmend.bench.evaluate before it
    became sqlmend.evaluation): read as empty and written again, not a crash of `sqlmend eval`."""
    ds, preds = handmade
    first = evaluate(ds, preds, timeout=1.0, cache_root=tmp_path)
    (cache_file,) = tmp_path.glob("*.pkl")
    assert cache_file.name == f"handmade.v{CACHE_VERSION}.pkl"  # a version that cannot read it never opens it
    old = pickle.dumps({"k": first}).replace(b"sqlmend.evaluation.evaluate", b"sqlmend.evaluation.gone_awa")
    assert b"sqlmend.evaluation.gone_awa" in old  # same length: still a valid pickle, of a module not there
    cache_file.write_bytes(old)
    forget_loaded_caches()
    again = evaluate(ds, preds, timeout=1.0, cache_root=tmp_path)
    assert again.gold_cached == 0
    assert [r.verdict for r in again.results] == [r.verdict for r in first.results]
    forget_loaded_caches()
    assert evaluate(ds, preds, timeout=1.0, cache_root=tmp_path).gold_cached == len(HANDMADE)


@pytest.mark.slow
def test_spider_train_gold_against_itself(gold_cache):
    """Each distinct (database, gold) of Spider train once (3,983 of 7,000 questions: they share their
    gold): the same SQL on the same database gets the same verdict."""
    train = load_dataset("spider-train")
    seen: set[tuple[str, str]] = set()
    tasks = [t for t in train.tasks if (t.db_id, t.gold) not in seen and not seen.add((t.db_id, t.gold))]
    distinct = Dataset(name="spider-train-distinct", tasks=tasks, db_root=train.db_root)
    s = evaluate(distinct, distinct.gold, cache_root=gold_cache).summary()
    assert s.correct == s.n == s.correct_ordered and s.n > 3800
