"""A detector trained for detection: P(the query is correct) from the verifier's features of the query alone.

The repair-search verifier (:mod:`sqlmend.search.verifier`) is trained to *rank repair
candidates*; its P(correct) of the original is only a by-product. This model reads the same
features (:data:`sqlmend.search.features.FEATURE_NAMES`, the original as
:meth:`~sqlmend.search.verifier.FeatureVerifier.judge` featurizes it) but is fitted on the
originals alone: the gold of each Spider-TRAIN question (correct) and its wrong originals
(``rule1``, ``rule2``, ``neighbour``) from the verifier's training cases
(``sqlmend train-verifier``'s JSONL, ``labels[0]`` / ``X[0]``), correct and wrong weighing the
same; an ``equiv`` original (other SQL returning the gold's rows) counts as correct. Per kind, the
held-out AUROC ranks that kind's originals against every original of the other label. Databases held out by :func:`sqlmend.search.train.held_out` give the reported AUROC and the
threshold (best F1 there, balanced: the real base rate is not assumed); the shipped trees are
then refit on every case. The file (``original.json`` beside this module, ``sqlmend
train-original-detector``) has the verifier file's layout (``model`` trees), so
:class:`~sqlmend.search.verifier.FeatureVerifier` loads it and scoring needs no scikit-learn;
``threshold`` and ``training`` record the choice and the provenance.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Iterator

#: The shipped weights (written by ``sqlmend train-original-detector``).
WEIGHTS = Path(__file__).with_name("original.json")


class OriginalDetector:
    """The shipped (or given) detection model: flags a query when 1 - P(correct) >= ``threshold``."""

    def __init__(self, path: str | Path | None = None):
        from sqlmend.errors import ConfigError
        from sqlmend.search.verifier import FeatureVerifier

        p = Path(path) if path else WEIGHTS
        #: the weights file read
        self.path = p
        if not p.exists():
            raise ConfigError(f"no detection model at {p}; run `sqlmend train-original-detector`")
        #: the trees behind the verifier's interface (``judge``, ``p_correct``)
        self.verifier = FeatureVerifier(p)
        if "threshold" not in self.verifier.spec:  # e.g. the verifier's own weights
            raise ConfigError(f"{p} has trees but no detection threshold: not a detection model; "
                              "run `sqlmend train-original-detector`")
        self.threshold = float(self.verifier.spec["threshold"])
        training = self.verifier.spec.get("training") or {}
        #: what trained it, for a run's record and a trace
        self.version = (f"detection model {p.name}: trees over the verifier's features, Spider train "
                        f"{training.get('date', '')}, hard negatives {training.get('hard_negatives', 0)}")

    def flags(self, p_correct: float | None) -> bool:
        """Whether the model flags a query of this P(correct) (None: not judged, not flagged)."""
        return p_correct is not None and 1 - p_correct >= self.threshold


def originals(path: str | Path, hard_negatives: int = 0) -> Iterator[tuple[str, str, str, list[float], bool]]:
    """``(qid, db_id, kind, features, wrong)`` of each case's original in a verifier training file
    (cases whose vectors are of another feature set are skipped).

    With ``hard_negatives`` N, each ``gold`` case also gives up to N of its wrong repair candidates
    (near misses of the gold, drawn seeded by the question id) as wrong originals of kind ``near``:
    the candidate's own features of the query, question and result, and the gold's edit and finding
    features (``e_*``, ``o_*``, ``d_*``: those of an original, which no edit made). A candidate whose
    own features equal the gold's is not drawn.
    """
    from sqlmend.search.features import FEATURE_NAMES

    own = FEATURE_NAMES.index("e_original")  # the features from here on describe an edit, not the query
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                c = json.loads(line)
            except ValueError:
                continue
            if not c.get("X") or len(c["X"][0]) != len(FEATURE_NAMES):
                continue
            kind = c["kind"].split(":")[0]
            yield c["qid"], c["db_id"], kind, c["X"][0], not c["labels"][0]
            if hard_negatives and kind == "gold":
                gold = c["X"][0][:own]  # a near miss the features cannot tell from the gold teaches nothing
                wrong = [i for i, ok in enumerate(c["labels"]) if i and not ok and c["X"][i][:own] != gold]
                for i in sorted(random.Random(c["qid"]).sample(wrong, min(hard_negatives, len(wrong)))):
                    yield c["qid"], c["db_id"], "near", c["X"][i][:own] + c["X"][0][own:], True


def fit(cases: str | Path, holdout: float = 0.2, max_iter: int = 200, learning_rate: float = 0.1,
        max_leaf_nodes: int = 31, min_samples_leaf: int = 20, seed: int = 0,
        command: str = "", hard_negatives: int = 0) -> dict[str, Any]:
    """Fit the detection model on the originals of a verifier training file (see the module doc).

    Args:
        cases: the JSONL of ``sqlmend train-verifier`` (Spider train).
        holdout: the share of databases held out for the AUROC and the threshold.
        max_iter, learning_rate, max_leaf_nodes, min_samples_leaf: the boosting's settings.
        seed: its random state.
        command: the command line recorded in ``training``.
        hard_negatives: near misses of each gold added as wrong originals (see :func:`originals`).
            They are trained on, and reported as their own kind; the held-out AUROC and the
            threshold read the originals alone, so that models with and without them compare.

    Returns:
        ``{"model", "threshold", "training"}`` (``model``: :func:`sqlmend.search.train.export`).
    """
    import datetime as _dt

    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sqlmend.detect.combine import balanced_weights, best_threshold
    from sqlmend.errors import ConfigError
    from sqlmend.search.train import auroc, export, held_out

    rows = list(originals(cases, hard_negatives))
    if not rows:
        raise ConfigError(f"no cases with the current features in {cases}")
    X = np.asarray([r[3] for r in rows], dtype=np.float64)
    y = np.asarray([r[4] for r in rows], dtype=bool)
    ho = np.asarray([held_out(r[1], holdout) for r in rows])
    if ho.all() or not ho.any() or len(set(y[ho])) < 2:
        raise ConfigError("the held-out databases need correct and wrong cases, and some databases must be left")

    def model(train: np.ndarray) -> Any:
        w = np.asarray(balanced_weights(y[train].tolist()))
        return HistGradientBoostingClassifier(max_iter=max_iter, learning_rate=learning_rate,
                                              max_leaf_nodes=max_leaf_nodes, min_samples_leaf=min_samples_leaf,
                                              l2_regularization=1.0, random_state=seed).fit(X[train], y[train], sample_weight=w)

    # the trees score P(wrong); the file stores them negated so that they give P(correct) like the verifier's
    kinds = np.asarray([r[2] for r in rows])[ho]
    scored = model(~ho).predict_proba(X[ho])[:, 1]
    real = kinds != "near"  # the originals: what the AUROC and the threshold read
    wrong, y_ho = scored[real], y[ho][real]
    chosen = best_threshold(wrong.tolist(), y_ho.tolist(), balanced_weights(y_ho.tolist()))

    def kind_auroc(k: str) -> float:  # the kind's originals against every original of the other label
        pure = y[ho][kinds == k]
        part = (kinds == k) | ((y[ho] != pure[0]) & real)
        return round(auroc([1 - s for s in scored[part]], y[ho][part].tolist()), 4)

    per_kind = {k: kind_auroc(k) for k in sorted(set(kinds) - {"gold"})
                if len(set(y[ho][kinds == k].tolist())) == 1}
    spec = export(model(np.ones(len(y), dtype=bool)))
    spec = {**spec, "baseline": -spec["baseline"],
            "trees": [{**t, "value": [-v for v in t["value"]]} for t in spec["trees"]]}
    return {"model": spec, "threshold": round(float(chosen["threshold"]), 5),
            "training": {"date": _dt.date.today().isoformat(), "dataset": "spider-train", "cases": str(cases),
                         "originals": int((np.asarray([r[2] for r in rows]) != "near").sum()),
                         "near_misses": sum(r[2] == "near" for r in rows), "wrong": int(y.sum()), "questions": len({r[0] for r in rows}),
                         "kinds": {k: sum(r[2] == k for r in rows) for k in sorted({r[2] for r in rows})},
                         "holdout": holdout, "held_out_originals": int(real.sum()),
                         "hard_negatives": hard_negatives,
                         "held_out_auroc": round(auroc([1 - s for s in wrong], y_ho.tolist()), 4),
                         "held_out_auroc_per_kind": per_kind,
                         "held_out_at_threshold": {k: round(v, 4) for k, v in chosen.items()},
                         "weighting": "balanced (correct and wrong weigh the same)",
                         "threshold_rule": "best F1 of the held-out databases' cases, balanced, on 1 - P(correct)",
                         "settings": {"max_iter": max_iter, "learning_rate": learning_rate,
                                      "max_leaf_nodes": max_leaf_nodes, "min_samples_leaf": min_samples_leaf,
                                      "l2_regularization": 1.0, "seed": seed,
                                      "early_stopping": "sklearn's auto (on above 10,000 cases)",
                                      "trees": len(spec["trees"])},
                         "refit": "every case (the threshold and AUROC are the held-out model's)",
                         "command": command}}


__all__ = ["WEIGHTS", "OriginalDetector", "fit", "originals"]
