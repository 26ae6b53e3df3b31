"""Scripted review with the gold as reviewer builds the same items as ``sqlmend memory build`` (car_1)."""

from __future__ import annotations

from sqlmend.bench import load_dataset, load_predictions
from sqlmend.cli.memory_cmd import _history, build_all
from sqlmend.memory.split import Split, split_tasks
from sqlmend.pipeline import PipelineConfig, correct_batch
from sqlmend.review import confirm
from sqlmend.review.decisions import ReviewLog
from sqlmend.review.run import Run, write_run_info
from sqlmend.review.scripted import gold_decisions, store_items


def test_gold_review_of_the_history_split_equals_memory_build(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "din-sql_gpt-4.sql"
    ds = load_dataset("spider-dev")
    preds = load_predictions(pred, ds)
    full = split_tasks(ds.tasks, fraction=0.25, seed=0)
    history = [q for q in full.history if ds.task(q).db_id == "car_1"]
    split = Split(history=history, test=[], fraction=0.25, seed=0)
    run_dir = tmp_path / "run"
    tasks = [t for t in ds.with_sql(preds) if t.question_id in set(history)]
    correct_batch(tasks, PipelineConfig(stages=["static", "guard"], workers=2),
                  checkpoint=run_dir / "corrections.jsonl", progress=False, db_root=ds.db_root)
    write_run_info(run_dir, "spider-dev", None, pred, ["static", "guard"])
    run = Run.load(run_dir)
    run.evaluate()
    log = ReviewLog(run_dir)
    counts = gold_decisions(run, log)
    confirmed, _ = confirm.confirmations(run, log.latest())
    assert counts["edit"] == len(confirmed) > 0
    confirm.build(run, confirmed, tmp_path / "review")
    report = build_all(ds, _history(ds, preds, split, 1), tmp_path / "build", fresh=True)
    assert report.corrections == len(confirmed)
    by_review, by_build = store_items(tmp_path / "review"), store_items(tmp_path / "build")
    assert by_review == by_build and len(by_review) == 2  # din-sql #112 (predicate column), #116 (value binding)
    assert {i["kind"] for i in by_review.values()} == {"predicate_column", "value_binding"}
