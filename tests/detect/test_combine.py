"""The detector + verifier + static-rules combination: thresholds, fit, the shipped weights."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sqlmend.detect import combine
from sqlmend.errors import ConfigError


def test_best_threshold_takes_the_cut_with_the_best_f1():
    scores = [0.9, 0.8, 0.7, 0.4, 0.3, 0.1]
    labels = [True, True, False, True, False, False]
    best = combine.best_threshold(scores, labels)
    # flag >= 0.8: P 1, R 2/3, F1 0.8; flag >= 0.4: P 3/4, R 1, F1 0.857 (the best)
    assert best["threshold"] == 0.4 and abs(best["f1"] - 6 / 7) < 1e-9


def test_balanced_weights_make_both_classes_weigh_the_same():
    labels = [True] * 3 + [False] * 9
    w = combine.balanced_weights(labels)
    assert abs(sum(x for x, y in zip(w, labels) if y) - sum(x for x, y in zip(w, labels) if not y)) < 1e-9
    # a rare class weighed up moves the F1-best cut: unweighted, flagging all three positives
    # costs three false alarms; weighed 3x, it pays
    scores = [0.9, 0.6, 0.6, 0.6, 0.6, 0.5, 0.5] + [0.1] * 5
    assert combine.best_threshold(scores, labels, w)["threshold"] <= combine.best_threshold(scores, labels)["threshold"]


def test_fit_learns_the_informative_signal_and_scores_without_sklearn():
    rng = np.random.default_rng(0)
    n = 400
    y = rng.random(n) < 0.4
    informative = np.clip(0.5 + 0.35 * (y * 2 - 1) + rng.normal(0, 0.15, n), 0, 1)  # the verifier column
    noise = rng.random(n)
    rows = [[float(a), float(b), 0.0] for a, b in zip(noise, informative)]
    spec = combine.fit(rows, y.tolist(), [str(i // 3) for i in range(n)], folds=4)
    assert spec["coef"][1] > 2 * abs(spec["coef"][0])
    assert spec["training"]["cv_auroc"]["verifier"] > 0.9 > 0.6 > spec["training"]["cv_auroc"]["detector"]
    comb = combine.Combiner(spec)
    assert comb.score([0.5, 0.95, 0.0]) > comb.score([0.5, 0.05, 0.0])
    assert comb.verifier_flags(0.02) and not comb.verifier_flags(0.98) and not comb.verifier_flags(None)


def test_a_missing_score_counts_as_undecided():
    assert combine.feature_row(None, None, []) == [0.5, 0.5, 0.0]
    assert combine.feature_row(0.9, 0.2, ["attribute_mismatch"]) == pytest.approx([0.1, 0.8, 1.0])


def test_the_shipped_weights_load_and_were_fitted_on_train(tmp_path):
    comb = combine.Combiner.load()
    assert comb.spec["training"]["dataset"] == "spider-train"
    assert 0 < comb.threshold < 1 and 0 < comb.verifier_threshold < 1
    other = tmp_path / "w.json"
    other.write_text(json.dumps({**comb.spec, "features": ["p_error"]}))
    with pytest.raises(ConfigError, match="train-combiner"):
        combine.Combiner.load(other)
    with pytest.raises(ConfigError, match="no combination weights"):
        combine.Combiner.load(tmp_path / "missing.json")


def test_the_combiner_trains_on_questions_neither_model_saw(data_dir):
    import random
    from dataclasses import replace

    from sqlmend.bench import load_dataset
    from sqlmend.bench.detect import combiner_cases, unseen_train_tasks
    from sqlmend.synth.build import sample_questions

    ds = load_dataset("spider-train", data_root=data_dir)
    unseen = unseen_train_tasks(ds, {"questions": 5000, "seed": 0}, synth_limit=1000, synth_seed=3)
    ids = {t.question_id for t in unseen}
    with_db = [t for t in ds.tasks if ds.db_path(t.db_id) is not None and t.gold]
    random.Random(0).shuffle(with_db)
    assert ids and not ids & {t.question_id for t in with_db[:5000]}
    assert not ids & {t.question_id for t in sample_questions(ds.tasks, 1000, 3)}
    assert len(ids) + 5000 + 1000 >= len(with_db) > len(ids) + 5000
    # nothing left to train on: a clear error, not a failed fit
    with pytest.raises(ConfigError, match="neither the detector nor the verifier"):
        combiner_cases(replace(ds, tasks=[]), None, None)
