"""Train the feature verifier on Spider *train* only, calibrate its decision margin, export the trees.

Training data (:func:`build`): for each training question, its gold SQL is an
"original correct" case (every candidate the search makes from it is wrong:
the decision must learn to keep it); one or two execution-verified
perturbations of the gold (``synth.perturb``) are "original wrong" cases, and
a candidate the search makes from them is positive when it returns the gold's
rows. Each case is one JSON line (resumable: a rerun skips the questions done).

Training (:func:`fit`): gradient-boosted trees (scikit-learn's
HistGradientBoostingClassifier) on every row; the databases are split so that
the held-out questions are on databases never seen in training. The decision
margin is the smallest one whose held-out replacements reach the target
precision *and* whose replacement rate on correct originals stays under
``max_false_rate``.
"""

from __future__ import annotations

import json
import random
import time
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from sqlmend import rules
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.search.engine import SearchSettings, execute_original, result_key, search
from sqlmend.search.features import FEATURE_NAMES, Featurizer
from sqlmend.search.generators import SearchInput
from sqlmend.synth import OPERATORS, perturb
from sqlmend.types import Task


def _cases(task: Task, db: Any, gold_res: Any, rng: random.Random, per_question: int,
           timeout: float) -> list[tuple[str, str]]:
    """``[(kind, sql)]``: the gold (its result ``gold_res``), then perturbations of it from different operators."""
    gold = task.gold
    out = [("gold", gold)]
    ops = list(OPERATORS.values())
    rng.shuffle(ops)
    for text, op, _ in perturb(gold, db.schema(), db, gold_res, rng, ops, timeout):
        out.append((f"rule:{op.name}", text))
        if len(out) > per_question:
            break
    return out


def build(tasks: Iterable[Task], db_path: Callable[[str], str], out: Path, per_question: int = 2,
          seed: int = 0, settings: SearchSettings | None = None, timeout: float = 5.0,
          progress: Callable[[int], None] | None = None) -> Iterator[str]:
    """Append one JSON line per case to ``out`` (skipping questions already there).

    Each line: ``{"qid", "db_id", "kind", "labels": [original, candidates...], "X": [[...], ...],
    "gens": [...]}``; a label is 1 when that query returns the gold's rows.

    Yields:
        A message per skipped question.
    """
    settings = settings or SearchSettings(budget=0.4)
    done: set[str] = set()
    if out.exists() and out.stat().st_size:
        data = out.read_bytes()
        if not data.endswith(b"\n"):  # a line cut short by a kill: drop it, its question is redone
            with out.open("r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)
        for line in out.read_text().splitlines():
            try:
                done.add(json.loads(line)["qid"])
            except (ValueError, KeyError):
                continue
    conns: dict[str, Any] = {}
    with out.open("a", encoding="utf-8") as fh:
        for task in tasks:
            if task.question_id in done:
                if progress:
                    progress(1)
                continue
            rng = random.Random(f"{seed}:{task.question_id}")
            try:
                if task.db_id not in conns:
                    conns[task.db_id] = connect(db_path(task.db_id))
                db = conns[task.db_id]
                gold_res = db.execute(task.gold, timeout=timeout, max_rows=2000)
                gold_key = result_key(gold_res)
                cases = _cases(task, db, gold_res, rng, per_question, timeout)
                inp = SearchInput(task.question, db.schema(), db.value_index(), task.evidence)
            except (SqlmendError, OSError) as exc:
                yield f"{task.question_id}: skipped ({exc})"
                if progress:
                    progress(1)
                continue
            lines = []
            for kind, text in cases:
                orig = execute_original(db, text, settings.timeout, settings.max_rows)
                findings = rules.check(db, text, task.question, timeout=timeout) if orig.tree is not None else []
                found = search(db, orig, inp, findings, settings)
                X = Featurizer(inp, db.dialect, findings).rows(orig, found.candidates)
                labels = [int(orig.result is not None and result_key(orig.result) == gold_key)]
                labels += [int(result_key(c.result) == gold_key) for c in found.candidates]
                gens = [""] + ["+".join(c.generators) for c in found.candidates]
                lines.append(json.dumps({"qid": task.question_id, "db_id": task.db_id, "kind": kind,
                                         "flagged": bool(findings or orig.error or orig.result is None
                                                         or not orig.result.rows),
                                         "labels": labels, "gens": gens,
                                         "X": [[round(v, 4) for v in row] for row in X]}))
            fh.write("\n".join(lines) + "\n")
            fh.flush()
            if progress:
                progress(1)
    for db in conns.values():
        db.close()


def load(path: Path) -> list[dict[str, Any]]:
    """The cases of a training file (those whose features match :data:`FEATURE_NAMES` in length)."""
    out = []
    for line in path.read_text().splitlines():
        try:
            case = json.loads(line)
        except ValueError:
            continue
        if case["X"] and len(case["X"][0]) == len(FEATURE_NAMES):
            out.append(case)
    return out


def held_out(db_id: str, fraction: float) -> bool:
    """Whether a database belongs to the held-out part (a stable hash of its id)."""
    return (zlib.crc32(db_id.encode()) % 1000) < fraction * 1000


def export(clf: Any) -> dict[str, Any]:
    """The trees of a fitted binary HistGradientBoostingClassifier as plain arrays."""
    trees = []
    for iteration in clf._predictors:
        nodes = iteration[0].nodes
        trees.append({"feature": nodes["feature_idx"].tolist(), "threshold": nodes["num_threshold"].tolist(),
                      "left": nodes["left"].tolist(), "right": nodes["right"].tolist(),
                      "missing_left": nodes["missing_go_to_left"].astype(int).tolist(),
                      "is_leaf": nodes["is_leaf"].astype(int).tolist(),
                      "value": [round(float(v), 6) for v in nodes["value"]]})
    return {"kind": "hist-gradient-boosting", "baseline": float(np.ravel(clf._baseline_prediction)[0]),
            "features": list(FEATURE_NAMES), "trees": trees}


def decisions(cases: list[dict[str, Any]], scores: list[np.ndarray]) -> list[dict[str, Any]]:
    """Per case: original label, the best candidate's label, and the score gap (best - original)."""
    out = []
    for case, s in zip(cases, scores):
        if len(s) < 2:
            out.append({"orig": case["labels"][0], "best": 0, "gap": -1.0, "kind": case["kind"],
                        "reachable": 0})
            continue
        best = 1 + int(np.argmax(s[1:]))
        out.append({"orig": case["labels"][0], "best": case["labels"][best], "gap": float(s[best] - s[0]),
                    "kind": case["kind"], "reachable": int(any(case["labels"][1:]))})
    return out


def outcome(decided: list[dict[str, Any]], margin: float, correct_weight: float = 1.0) -> dict[str, Any]:
    """Fixed / broken / replacements at one margin.

    ``precision`` counts each correct original ``correct_weight`` times (the mix of
    correct and wrong originals the precision is stated for).
    """
    rep = [d for d in decided if d["gap"] > margin]
    fixed = sum(1 for d in rep if not d["orig"] and d["best"])
    broken = sum(1 for d in rep if d["orig"] and not d["best"])
    correct_orig = sum(d["orig"] for d in decided)
    wrong_orig = len(decided) - correct_orig
    weighted = sum(correct_weight if d["orig"] else 1.0 for d in rep)
    return {"margin": margin, "replaced": len(rep), "fixed": fixed, "broken": broken,
            "precision": fixed / weighted if rep else None,
            "fix_rate": fixed / wrong_orig if wrong_orig else 0.0,
            "false_rate": broken / correct_orig if correct_orig else 0.0,
            "wrong_originals": wrong_orig, "correct_originals": correct_orig}


def calibrate(decided: list[dict[str, Any]], precision: float, max_false_rate: float,
              correct_weight: float = 1.0) -> dict[str, Any]:
    """The smallest margin on a grid meeting both targets (the largest grid value when none does)."""
    grid = [round(x, 3) for x in np.arange(0.0, 1.0, 0.01)]
    chosen = None
    for m in grid:
        o = outcome(decided, m, correct_weight)
        if (o["precision"] is None or o["precision"] >= precision) and o["false_rate"] <= max_false_rate:
            chosen = o
            break
    return chosen or outcome(decided, grid[-1], correct_weight)


def fit(cases: list[dict[str, Any]], holdout: float = 0.2, precision: float = 0.93,
        max_false_rate: float = 0.01, max_iter: int = 300, seed: int = 0) -> dict[str, Any]:
    """Train on the training databases, calibrate on the held-out ones, refit on all, return the spec."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    # correct and wrong originals weigh the same in training and in the stated precision
    n_gold = sum(c["labels"][0] == 1 for c in cases)
    w_gold = (len(cases) - n_gold) / n_gold if n_gold else 1.0

    def matrix(part):
        X = np.asarray([row for c in part for row in c["X"]], dtype=np.float64)
        y = np.asarray([lab for c in part for lab in c["labels"]], dtype=np.int64)
        w = np.asarray([w_gold if c["labels"][0] == 1 else 1.0 for c in part for _ in c["labels"]])
        return X, y, w

    def fitted(part):
        X, y, w = matrix(part)
        return model().fit(X, y, sample_weight=w)

    def model():
        return HistGradientBoostingClassifier(max_iter=max_iter, learning_rate=0.08, max_leaf_nodes=31,
                                              min_samples_leaf=40, l2_regularization=1.0, random_state=seed)

    train = [c for c in cases if not held_out(c["db_id"], holdout)]
    test = [c for c in cases if held_out(c["db_id"], holdout)]
    start = time.perf_counter()
    clf = fitted(train)
    scores = [clf.predict_proba(np.asarray(c["X"], dtype=np.float64))[:, 1] for c in test]
    decided = decisions(test, scores)
    chosen = calibrate(decided, precision, max_false_rate, w_gold)
    curve = [outcome(decided, m, w_gold) for m in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)]
    flagged = [d for d, c in zip(decided, test) if c.get("flagged")]
    curve_flagged = [outcome(flagged, m, w_gold) for m in (0.0, 0.2, 0.4, 0.6, 0.8)]
    reach = [d for d in decided if not d["orig"]]
    held = {"cases": len(test), "questions": len({c["qid"] for c in test}),
            "databases": len({c["db_id"] for c in test}),
            "candidate_recall": sum(d["reachable"] for d in reach) / len(reach) if reach else 0.0,
            "selection_accuracy": (sum(d["best"] for d in reach if d["reachable"]) /
                                   max(1, sum(d["reachable"] for d in reach))),
            "chosen": chosen, "curve": curve, "curve_flagged": curve_flagged, "correct_weight": w_gold}
    final = fitted(cases)
    spec = export(final)
    return {"model": spec, "decision": {"margin": chosen["margin"], "precision_target": precision,
                                        "max_false_rate": max_false_rate},
            "training": {"cases": len(cases), "questions": len({c["qid"] for c in cases}),
                         "rows": sum(len(c["labels"]) for c in cases), "held_out": held,
                         "seconds": round(time.perf_counter() - start, 1), "max_iter": max_iter}}
