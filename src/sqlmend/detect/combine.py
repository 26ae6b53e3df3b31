"""One error score from four signals: the error-token detector, the search verifier, the static rules,
and what the repair search finds from the query.

A logistic regression over :data:`FEATURES`: P(error) of the detector, 1 - P(correct) of the
repair-search verifier (the query alone), any static-rule finding (0/1), and from the repair
search run on the query as the search stage runs it
(:meth:`sqlmend.search.verifier.FeatureVerifier.judge`) the best candidate's P(correct), its
gain over the query's own (``max(0, best - P(correct))``) and whether the search found no
candidate at all. Fitted on Spider TRAIN questions that neither the detector nor the verifier
trained on (``sqlmend train-combiner``), in :data:`VARIANTS` (subsets of the features: with and
without the detector, with and without the search); the one with the best cross-validated AUROC
on train is the default (``chosen``). Correct and wrong cases weigh the same in the fit and in
the thresholds; each threshold is the one with the best F1 on cross-validated scores (grouped by
question). The weights ship as ``combine.json`` beside this module (about 2 kB); scoring needs
no scikit-learn.

The same file carries the threshold of the verifier alone used as a detector
(``1 - P(correct) >= verifier_threshold`` flags), chosen the same way on the same cases.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Sequence

from sqlmend.errors import ConfigError

#: The shipped weights (written by ``sqlmend train-combiner``).
WEIGHTS = Path(__file__).with_name("combine.json")

#: The combination's inputs, in order (:func:`feature_row`).
FEATURES = ("p_error", "v_wrong", "static", "s_best", "s_gain", "s_none")

#: The combinations fitted (each a subset of :data:`FEATURES`).
VARIANTS = {"combined": FEATURES,
            "combined-no-search": FEATURES[:3],
            "combined-no-detector": FEATURES[1:],
            "verifier+static": FEATURES[1:3]}


def search_settings() -> Any:
    """The bounds of the search behind the ``s_*`` features: the search stage's defaults."""
    from sqlmend.search.stage import SearchOptions

    return SearchOptions().search_settings()


def feature_row(p_no_error: float | None, p_correct: float | None, static_types: Sequence[str],
                best: float | None = None, candidates: int | None = None) -> list[float]:
    """The :data:`FEATURES` of one query.

    Args:
        p_no_error: the error-token detector's P(no_error) (None: not run, counts 0.5).
        p_correct: the verifier's P(correct) of the query alone (None: counts 0.5).
        static_types: the static rules' error types.
        best: the best search candidate's P(correct) (None: no candidate).
        candidates: the distinct candidates the search found (None: no search; ``s_best`` counts 0.5).
    """
    v = p_correct if p_correct is not None else 0.5
    searched = candidates is not None
    s_best = best if best is not None else (0.0 if searched else 0.5)
    return [1 - p_no_error if p_no_error is not None else 0.5, 1 - v, float(bool(static_types)),
            s_best, max(0.0, best - v) if best is not None else 0.0, float(searched and not candidates)]


class Combiner:
    """The fitted combination (see the module doc): the variant ``variant`` (default: the one chosen on train)."""

    def __init__(self, spec: dict[str, Any], variant: str | None = None):
        if tuple(spec.get("features", ())) != FEATURES or "variants" not in spec:
            raise ConfigError(f"combination weights are for features {spec.get('features')}, not {FEATURES}; "
                              "run `sqlmend train-combiner`")
        self.spec = spec
        self.variant = variant or spec["chosen"]
        if self.variant not in spec["variants"]:
            raise ConfigError(f"no combination {self.variant!r} in the weights (have {sorted(spec['variants'])})")
        v = spec["variants"][self.variant]
        self.columns = [FEATURES.index(f) for f in v["features"]]
        self.coef = [float(c) for c in v["coef"]]
        self.intercept = float(v["intercept"])
        self.threshold = float(v["threshold"])
        self.verifier_threshold = float(spec["verifier_threshold"])

    @property
    def uses_detector(self) -> bool:
        """Whether this variant reads the error-token detector."""
        return FEATURES.index("p_error") in self.columns

    @property
    def uses_search(self) -> bool:
        """Whether this variant reads the repair search."""
        return any(FEATURES[i].startswith("s_") for i in self.columns)

    @classmethod
    def load(cls, path: str | Path | None = None, variant: str | None = None) -> "Combiner":
        """The weights at ``path`` (default: the shipped ``combine.json``), variant ``variant``."""
        p = Path(path) if path else WEIGHTS
        if not p.exists():
            raise ConfigError(f"no combination weights at {p}; run `sqlmend train-combiner`")
        return cls(json.loads(p.read_text()), variant)

    def score(self, row: Sequence[float]) -> float:
        """P(error) of the combination for one :func:`feature_row` (all :data:`FEATURES`)."""
        z = self.intercept + sum(c * row[i] for c, i in zip(self.coef, self.columns))
        return 1 / (1 + math.exp(-z))

    def flags(self, row: Sequence[float]) -> bool:
        """Whether the combination flags the query."""
        return self.score(row) >= self.threshold

    def fitted_with(self, verifier_weights: str | Path) -> bool:
        """Whether the combination was fitted with these verifier weights (refit when not)."""
        return self.spec.get("training", {}).get("verifier") == fingerprint(verifier_weights)

    def verifier_flags(self, p_correct: float | None) -> bool:
        """Whether the verifier alone flags the query (``1 - P(correct) >= verifier_threshold``)."""
        return p_correct is not None and 1 - p_correct >= self.verifier_threshold


def fingerprint(path: str | Path) -> str:
    """A short hash of what the combination reads of a verifier weights file: its model and decider
    (the failing-original ranker beside them only picks the repair of a query that fails to run, so a
    ranker added or retrained leaves the fingerprint as it was)."""
    data = Path(path).read_bytes()
    try:
        spec = json.loads(data)
        data = json.dumps({k: spec[k] for k in ("model", "decider") if k in spec}, sort_keys=True).encode()
    except (ValueError, TypeError, AttributeError):
        pass  # not a weights file: hash its bytes
    return hashlib.sha256(data).hexdigest()[:12]


def balanced_weights(labels: Sequence[bool]) -> list[float]:
    """Per-case weights making the wrong (True) and correct (False) cases weigh the same in all."""
    pos = sum(labels) or 1
    neg = (len(labels) - sum(labels)) or 1
    return [len(labels) / (2 * pos) if y else len(labels) / (2 * neg) for y in labels]


def best_threshold(scores: Sequence[float], labels: Sequence[bool],
                   weights: Sequence[float] | None = None) -> dict[str, float]:
    """The score threshold (flag when ``score >= t``) with the best weighted F1.

    Returns:
        ``{"threshold", "precision", "recall", "f1"}`` (weighted counts).
    """
    weights = list(weights) if weights is not None else [1.0] * len(scores)
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    pos = sum(w for w, y in zip(weights, labels) if y) or 1.0
    tp = fp = 0.0
    best = {"threshold": 1.0 + 1e-9, "precision": 0.0, "recall": 0.0, "f1": 0.0}
    for k, i in enumerate(order):
        tp += weights[i] * labels[i]
        fp += weights[i] * (not labels[i])
        if k + 1 < len(order) and scores[order[k + 1]] == scores[i]:
            continue
        p, r = tp / (tp + fp), tp / pos
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        if f1 > best["f1"]:
            best = {"threshold": scores[i], "precision": p, "recall": r, "f1": f1}
    return best


def fit(rows: Sequence[Sequence[float]], labels: Sequence[bool], groups: Sequence[str], folds: int = 5,
        seed: int = 0) -> dict[str, Any]:
    """Fit every :data:`VARIANTS` combination and the verifier's threshold on training cases.

    Args:
        rows: :func:`feature_row` per case.
        labels: True when the case is wrong.
        groups: the question of each case (a question's cases stay in one fold).
        folds: cross-validation folds for the thresholds and the reported AUROCs.
        seed: the fold split's seed.

    Returns:
        The spec written to ``combine.json``: ``features``, ``variants`` (per variant its
        ``features``, ``coef``, ``intercept``, ``threshold``, ``cv_auroc``, ``cv_at_threshold``),
        ``chosen`` (the variant with the best cross-validated AUROC), ``verifier_threshold``
        and ``training`` (cross-validated figures).
    """
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    from sqlmend.search.train import auroc

    X, y = np.asarray(rows, dtype=np.float64), np.asarray(labels, dtype=bool)
    w = np.asarray(balanced_weights(list(y)))
    uniq = sorted(set(groups))
    folds = max(2, min(folds, len(uniq)))
    rank = {g: i for i, g in enumerate(np.random.RandomState(seed).permutation(uniq))}
    gid = np.asarray([rank[g] for g in groups])
    splits = list(GroupKFold(n_splits=folds).split(X, y, gid))

    def auc(score):  # train.auroc ranks 1 - its input
        return auroc([1 - s for s in score], y.tolist())

    variants = {}
    for name, feats in VARIANTS.items():
        cols = [FEATURES.index(f) for f in feats]
        Xv, cv = X[:, cols], np.zeros(len(y))
        for train, test in splits:
            model = LogisticRegression(C=1.0).fit(Xv[train], y[train], sample_weight=w[train])
            cv[test] = model.predict_proba(Xv[test])[:, 1]
        final = LogisticRegression(C=1.0).fit(Xv, y, sample_weight=w)
        chosen = best_threshold(cv.tolist(), y.tolist(), w.tolist())
        variants[name] = {"features": list(feats), "coef": [round(float(c), 5) for c in final.coef_[0]],
                          "intercept": round(float(final.intercept_[0]), 5),
                          "threshold": round(chosen["threshold"], 5), "cv_auroc": auc(cv.tolist()),
                          "cv_at_threshold": {k: round(v, 4) for k, v in chosen.items()}}
    verifier = best_threshold(X[:, 1].tolist(), y.tolist(), w.tolist())
    # each signal alone, ranked as is (no fit): higher = more likely wrong
    single = {"detector": "p_error", "verifier": "v_wrong", "search_best": "s_best", "search_gain": "s_gain"}
    cv_single = {k: auc(X[:, FEATURES.index(f)].tolist()) for k, f in single.items()}
    return {"features": list(FEATURES), "variants": variants,
            "chosen": max(variants, key=lambda k: variants[k]["cv_auroc"]),
            "verifier_threshold": round(verifier["threshold"], 5),
            "training": {"cases": len(y), "wrong": int(y.sum()), "questions": len(uniq), "folds": folds,
                         "weighting": "balanced (correct and wrong weigh the same)",
                         "cv_auroc": {**cv_single, **{k: v["cv_auroc"] for k, v in variants.items()}},
                         "verifier_at_threshold": {k: round(v, 4) for k, v in verifier.items()}}}


__all__ = ["FEATURES", "VARIANTS", "WEIGHTS", "Combiner", "balanced_weights", "best_threshold", "feature_row",
           "fingerprint", "fit", "search_settings"]
