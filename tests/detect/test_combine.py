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
    rows = [[float(a), float(b), 0.0, float(c), 0.0, 0.0] for a, b, c in zip(noise, informative, rng.random(n))]
    spec = combine.fit(rows, y.tolist(), [str(i // 3) for i in range(n)], folds=4)
    assert set(spec["variants"]) == set(combine.VARIANTS) and spec["chosen"] in spec["variants"]
    full = spec["variants"]["combined"]
    assert full["coef"][1] > 2 * abs(full["coef"][0])
    assert spec["training"]["cv_auroc"]["verifier"] > 0.9 > 0.6 > spec["training"]["cv_auroc"]["detector"]
    comb = combine.Combiner(spec)
    assert comb.variant == spec["chosen"]
    row = [0.5, 0.95, 0.0, 0.5, 0.0, 0.0]
    assert comb.score(row) > comb.score([0.5, 0.05, 0.0, 0.5, 0.0, 0.0])
    assert comb.verifier_flags(0.02) and not comb.verifier_flags(0.98) and not comb.verifier_flags(None)
    # a variant reads only its own columns of the full row
    cheap = combine.Combiner(spec, "verifier+static")
    assert not cheap.uses_detector and not cheap.uses_search
    assert cheap.score(row) == cheap.score([0.0, 0.95, 0.0, 0.9, 0.9, 1.0])
    assert combine.Combiner(spec, "combined-no-detector").uses_search
    with pytest.raises(ConfigError, match="no combination"):
        combine.Combiner(spec, "nonsense")


def test_a_missing_score_counts_as_undecided():
    # no search run: s_best undecided, no gain, not "searched and found nothing"
    assert combine.feature_row(None, None, []) == [0.5, 0.5, 0.0, 0.5, 0.0, 0.0]
    assert combine.feature_row(0.9, 0.2, ["attribute_mismatch"]) == pytest.approx([0.1, 0.8, 1.0, 0.5, 0.0, 0.0])


def test_the_search_features_of_a_query():
    # the best candidate beats the original by 0.5: s_best 0.7, s_gain 0.5
    assert combine.feature_row(0.9, 0.2, [], best=0.7, candidates=12) == pytest.approx([0.1, 0.8, 0.0, 0.7, 0.5, 0.0])
    # the original beats every candidate: no gain
    assert combine.feature_row(0.9, 0.8, [], best=0.3, candidates=4)[3:] == pytest.approx([0.3, 0.0, 0.0])
    # searched, nothing found
    assert combine.feature_row(0.9, 0.8, [], best=None, candidates=0)[3:] == [0.0, 0.0, 1.0]


def test_the_search_features_on_a_real_database(spider_conn):
    """A wrong query whose one-edit fix the verifier trusts: a large gain; the gold: none."""
    from sqlmend import rules
    from sqlmend.search.verifier import FeatureVerifier

    db = spider_conn("concert_singer")
    v = FeatureVerifier()
    q = "What is the average age of all singers?"

    def row(sql):
        found = v.judge(db, sql, q, findings=rules.check(db, sql, q), search=combine.search_settings())
        return combine.feature_row(None, found.p_correct, [], found.best, found.candidates)

    wrong, gold = row("SELECT max(age) FROM singer"), row("SELECT avg(age) FROM singer")
    assert wrong[4] > 0.3 and gold[4] < wrong[4]


def test_cases_scored_before_the_search_features_are_refused():
    from sqlmend.bench.detect import fit_combiner
    from sqlmend.search.verifier import WEIGHTS

    old = [{"qid": "1", "p_no_error": 0.5, "p_correct": 0.5, "static_types": [], "correct": True, "kind": "gold"}]
    with pytest.raises(ConfigError, match="before the repair-search features"):
        fit_combiner(old, WEIGHTS)


def test_the_shipped_weights_load_and_were_fitted_on_train(tmp_path):
    comb = combine.Combiner.load()
    assert comb.spec["training"]["dataset"] == "spider-train"
    assert 0 < comb.threshold < 1 and 0 < comb.verifier_threshold < 1
    other = tmp_path / "w.json"
    other.write_text(json.dumps({**comb.spec, "features": ["p_error"]}))
    with pytest.raises(ConfigError, match="train-combiner"):
        combine.Combiner.load(other)
    # the weights before the search features (three features, one model): the same clear error
    before = {"features": ["p_error", "v_wrong", "static"], "coef": [-1.1, 4.7, 0.5], "intercept": -1.7,
              "threshold": 0.31, "verifier_threshold": 0.35, "training": {"dataset": "spider-train"}}
    other.write_text(json.dumps(before))
    with pytest.raises(ConfigError, match="train-combiner"):
        combine.Combiner.load(other)
    with pytest.raises(ConfigError, match="no combination weights"):
        combine.Combiner.load(tmp_path / "missing.json")


def test_the_combiner_trains_on_questions_neither_model_saw(data_dir):
    import random
    from dataclasses import replace

    from sqlmend.bench.detect import combiner_cases, unseen_train_tasks
    from sqlmend.data import load_dataset
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


def test_the_combinations_verifier_fingerprint_reads_the_model_not_the_failing_ranker(tmp_path):
    import json

    from sqlmend.detect.combine import Combiner, fingerprint
    from sqlmend.search.verifier import WEIGHTS

    spec = json.loads(WEIGHTS.read_text())
    without = dict(spec)
    without.pop("failing", None)
    (tmp_path / "no-ranker.json").write_text(json.dumps(without))
    assert fingerprint(tmp_path / "no-ranker.json") == fingerprint(WEIGHTS)
    assert Combiner.load(None).fitted_with(WEIGHTS)  # the shipped combination, the shipped model
    other = dict(spec, model=dict(spec["model"], baseline=spec["model"]["baseline"] + 1.0))
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert fingerprint(tmp_path / "other.json") != fingerprint(WEIGHTS)
