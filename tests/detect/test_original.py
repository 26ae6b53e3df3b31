"""The detection model (P(correct) of a query alone, trained for detection on Spider train)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from sqlmend.detect import original
from sqlmend.errors import ConfigError


@pytest.fixture(scope="module")
def train_cases(data_dir, tmp_path_factory):
    """Verifier training cases of six real Spider-train questions on two databases (one held out at 0.5)."""
    from sqlmend.data import load_dataset
    from sqlmend.search import train

    ds = load_dataset("spider-train")
    tasks = [t for db in ("department_management", "book_2") for t in [u for u in ds.tasks if u.db_id == db][:3]]
    out = tmp_path_factory.mktemp("original") / "cases.jsonl"
    list(train.build(tasks, lambda d: str(ds.db_path(d)), out, neighbours=train.Neighbours(ds.tasks)))
    return out


def test_fit_reads_the_originals_and_scores_correct_above_wrong(train_cases, tmp_path):
    rows = list(original.originals(train_cases))
    assert {r[2] for r in rows} >= {"gold", "neighbour"}
    assert all(wrong == (kind != "gold") for _, _, kind, _, wrong in rows), "only the gold is a correct original"
    spec = original.fit(train_cases, holdout=0.5, max_iter=30, min_samples_leaf=2, command="test")
    t = spec["training"]
    assert t["dataset"] == "spider-train" and t["originals"] == len(rows) and t["command"] == "test"
    assert t["held_out_originals"] == sum(r[1] == "department_management" for r in rows)
    assert 0 < spec["threshold"] < 1
    path = tmp_path / "original.json"
    path.write_text(json.dumps(spec))
    det = original.OriginalDetector(path)
    # the stored trees give P(correct) (negated P(wrong)): on their own training cases the golds score higher
    X = np.asarray([r[3] for r in rows])
    p = det.verifier.model.proba(X)
    gold = ~np.asarray([r[4] for r in rows])
    assert p[gold].mean() > p[~gold].mean()
    assert det.flags(1 - spec["threshold"]) and not det.flags(1.0) and not det.flags(None)


def test_correct_originals_that_are_not_golds_count_as_correct(train_cases, data_dir, tmp_path):
    from sqlmend.data import load_dataset
    from sqlmend.search import train

    ds = load_dataset("spider-train")
    tasks = [t for db in ("department_management", "book_2") for t in [u for u in ds.tasks if u.db_id == db][:8]]
    equiv = tmp_path / "equiv.jsonl"
    list(train.build(tasks, lambda d: str(ds.db_path(d)), equiv, kinds=("equiv",), gold=False))
    both = tmp_path / "both.jsonl"
    both.write_text(train_cases.read_text() + equiv.read_text())
    rows = list(original.originals(both))
    assert {kind for _, _, kind, _, wrong in rows if not wrong} == {"gold", "equiv"}
    t = original.fit(both, holdout=0.5, max_iter=30, min_samples_leaf=2)["training"]
    assert t["kinds"]["equiv"] == sum(r[2] == "equiv" for r in rows) > 0
    # each kind's AUROC is against the other label's originals: equiv against the wrong ones
    per_kind = t["held_out_auroc_per_kind"]
    assert set(per_kind) >= {"neighbour"} and all(0 <= v <= 1 for v in per_kind.values())


def test_fit_needs_both_parts(train_cases, tmp_path):
    from sqlmend.cli import app

    with pytest.raises(ConfigError, match="held-out"):
        original.fit(train_cases, holdout=0.0, max_iter=5)
    # the command: a missing cases file and a held-out share leaving nothing to train on are clear errors
    out = tmp_path / "o.json"
    r = CliRunner().invoke(app, ["train-original-detector", "--cases", str(tmp_path / "none.jsonl"), "--out", str(out)])
    assert r.exit_code == 2 and "Invalid value for '--cases'" in r.output
    r = CliRunner().invoke(app, ["train-original-detector", "--cases", str(train_cases), "--holdout", "1",
                                 "--out", str(out)])
    assert r.exit_code == 2 and "held-out" in r.output and not out.exists()


def test_the_shipped_model_was_trained_on_train_and_judges_a_real_query(spider_conn):
    from sqlmend import rules

    det = original.OriginalDetector()
    t = det.verifier.spec["training"]
    assert t["dataset"] == "spider-train" and "train-original-detector" in t["command"]
    assert t["held_out_auroc"] > 0.8 and 0 < det.threshold < 1
    assert original.WEIGHTS.stat().st_size < 600_000
    db = spider_conn("concert_singer")
    q = "What is the average age of all singers?"

    def p(sql):
        return det.verifier.judge(db, sql, q, findings=rules.check(db, sql, q)).p_correct

    assert p("SELECT avg(age) FROM singer") > p("SELECT max(age) FROM singer")
    with pytest.raises(ConfigError, match="train-original-detector"):
        original.OriginalDetector("/nonexistent/original.json")
    from sqlmend.search.verifier import WEIGHTS

    with pytest.raises(ConfigError, match="not a detection model"):  # the verifier's file has no threshold
        original.OriginalDetector(WEIGHTS)


def test_bench_detect_scores_the_detection_model(data_dir):
    from sqlmend.cli import app

    pred = data_dir / "predictions" / "spider-dev" / "codes-1b.sql"
    args = ["bench", "detect", "--no-model", "--no-verifier", "--pred", str(pred), "--limit", "8", "-q"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "| original / all |" in r.output and "| static+original / all |" in r.output
    r = CliRunner().invoke(app, [*args, "--original-weights", "/nonexistent/original.json"])
    assert r.exit_code != 0 and "no detection model" in r.output


def test_hard_negatives_are_near_misses_of_the_gold_with_an_originals_edit_features(train_cases):
    from sqlmend.search.features import FEATURE_NAMES

    plain = list(original.originals(train_cases))
    rows = list(original.originals(train_cases, hard_negatives=2))
    near = [r for r in rows if r[2] == "near"]
    assert [r for r in rows if r[2] != "near"] == plain, "the originals are unchanged"
    golds = {r[0]: r[3] for r in plain if r[2] == "gold"}
    assert near and all(r[4] for r in near), "a near miss is a wrong original"
    assert all(sum(r[0] == q for r in near) <= 2 for q in golds)
    own = FEATURE_NAMES.index("e_original")
    for qid, _, _, x, _ in near:
        assert x[own:] == golds[qid][own:], "edit, finding and difference features are the gold's"
        assert x[:own] != golds[qid][:own], "the query's own features are the candidate's"
    assert rows == list(original.originals(train_cases, hard_negatives=2)), "seeded"
    t = original.fit(train_cases, holdout=0.5, max_iter=30, min_samples_leaf=2, hard_negatives=2)["training"]
    base = original.fit(train_cases, holdout=0.5, max_iter=30, min_samples_leaf=2)["training"]
    assert t["near_misses"] == len(near) and t["hard_negatives"] == 2
    assert t["originals"] == base["originals"] and t["held_out_originals"] == base["held_out_originals"]
    assert 0 <= t["held_out_auroc_per_kind"]["near"] <= 1
