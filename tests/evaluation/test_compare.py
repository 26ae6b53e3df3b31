"""Paired before/after report, checked against a plain sqlite3 computation on two shared files."""

from __future__ import annotations

import sqlite3

import pytest

from sqlmend.evaluation import compare, evaluate, paired_markdown
from sqlmend.evaluation.evaluate import EvalReport, QuestionResult
from sqlmend.data import load_predictions

BEFORE, AFTER = "gpt-4_zero-shot.sql", "din-sql_gpt-4.sql"


def _plain_correct(dataset, lines):
    """Independent check: sqlite3 directly, set of rows, no sqlmend code beyond the file paths."""
    out = {}
    for i, task in enumerate(dataset.tasks):
        path = dataset.db_root / task.db_id / f"{task.db_id}.sqlite"
        if not path.exists():
            continue
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
        gold = conn.execute(task.gold).fetchall()
        try:
            pred = conn.execute(lines[i]).fetchall()
        except sqlite3.Error:
            pred = None
        conn.close()
        out[str(i)] = pred is not None and set(pred) == set(gold)
    return out


@pytest.fixture(scope="module")
def reports(spider_dev, pred_dir, gold_cache):
    return tuple(evaluate(spider_dev, load_predictions(pred_dir / name, spider_dev), cache_root=gold_cache,
                          label=name) for name in (BEFORE, AFTER))


def test_fixed_and_regressed_ids_match_plain_sqlite3(spider_dev, pred_dir, reports):
    before = _plain_correct(spider_dev, (pred_dir / BEFORE).read_text().split("\n"))
    after = _plain_correct(spider_dev, (pred_dir / AFTER).read_text().split("\n"))
    fixed = sorted((q for q in before if not before[q] and after[q]), key=int)
    regressed = sorted((q for q in before if before[q] and not after[q]), key=int)
    paired = compare(*reports)
    assert paired.all.fixed == fixed and paired.all.regressed == regressed
    assert paired.all.n == len(before) == 972 and paired.excluded == 62
    assert (paired.all.before_correct, paired.all.after_correct) == (688, 791)
    assert paired.all.delta_ex == pytest.approx(100 * (len(fixed) - len(regressed)) / 972)
    assert len(fixed) - len(regressed) == 791 - 688


def test_suspects_give_a_second_slice(reports):
    paired = compare(*reports)
    suspects = paired.all.fixed[:3] + paired.all.regressed[:1] + ["nonexistent"]
    with_suspects = compare(*reports, suspect_ids=suspects)
    assert with_suspects.suspect_ids == sorted(suspects[:4], key=int)
    assert with_suspects.clean.n == 972 - 4
    assert len(with_suspects.clean.fixed) == len(paired.all.fixed) - 3
    assert len(with_suspects.clean.regressed) == len(paired.all.regressed) - 1
    text = paired_markdown(with_suspects)
    assert "without 4 gold-suspect" in text and "- fixed: " in text


def _report(rows):
    return EvalReport(dataset="d", predictions="p", timeout=1, results=[
        QuestionResult(question_id=q, db_id="x", sql=sql, verdict=v, ordered_correct=v == "correct")
        for q, sql, v in rows])


def test_changed_ignores_whitespace_and_unscored_are_excluded():
    before = _report([("0", "SELECT 1", "correct"), ("1", "SELECT  2", "wrong"), ("2", "x", "gold_error")])
    after = _report([("0", "SELECT 1 ", "correct"), ("1", "SELECT 3", "correct"), ("2", "y", "gold_error")])
    paired = compare(before, after)
    assert (paired.all.n, paired.excluded, paired.all.changed, paired.all.fixed) == (2, 1, ["1"], ["1"])
    assert paired.all.delta_ex == 50.0
