"""The verifier's export (trees as arrays, evaluated with numpy) and its margin calibration."""

from __future__ import annotations

import numpy as np

from sqlmend.search import train
from sqlmend.search.features import FEATURE_NAMES
from sqlmend.search.verifier import TreeEnsemble


def test_exported_trees_predict_what_sklearn_predicts():
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, len(FEATURE_NAMES)))
    X[:50, 3] = np.nan  # missing values take the learned side
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    clf = HistGradientBoostingClassifier(max_iter=30).fit(X, y)
    ours = TreeEnsemble(train.export(clf)).proba(X)
    assert np.abs(ours - clf.predict_proba(X)[:, 1]).max() < 1e-5


def test_calibration_picks_the_smallest_margin_meeting_both_targets():
    decided = ([{"orig": 1, "best": 0, "gap": 0.15, "kind": "gold", "reachable": 0}] +
               [{"orig": 0, "best": 1, "gap": g, "kind": "rule", "reachable": 1} for g in (0.3, 0.5, 0.7)] +
               [{"orig": 0, "best": 0, "gap": 0.05, "kind": "rule", "reachable": 0}] +
               [{"orig": 1, "best": 0, "gap": -0.5, "kind": "gold", "reachable": 0}] * 50)
    chosen = train.calibrate(decided, precision=0.9, max_false_rate=0.002)
    assert chosen["margin"] == 0.15 and chosen["fixed"] == 3 and chosen["broken"] == 0
    loose = train.outcome(decided, 0.0)
    assert loose["broken"] == 1 and loose["replaced"] == 5 and abs(loose["precision"] - 3 / 5) < 1e-9
