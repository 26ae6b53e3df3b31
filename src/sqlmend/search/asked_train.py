"""``sqlmend train-asked``: fit the reading of which columns a question asks for (:mod:`sqlmend.search.asked`).

Training rows come from a dataset's golds (Spider train): each SELECT item of a gold is asked for
(label 1); read as an extra item of the same SELECT, each column the gold filters, orders or groups
by and does not return, each aggregate it orders by, the ``COUNT(*)`` of a grouping that does not
count, one key column and two other columns of its tables (drawn with a seeded generator) are not
(label 0): the extra columns real systems add. A logistic regression (scikit-learn) is fitted on the
questions of the databases not held out (:func:`sqlmend.search.train.held_out`); the threshold is the
``alpha`` quantile of P(asked) over the held-out databases' asked items of multi-column answers, so
that share of what questions ask for would read as "not asked". Nothing of Spider dev is read.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Iterable

from sqlmend.search.asked import ALPHA, FEATURES
from sqlmend.search.train import held_out
from sqlmend.sql.asked import training_items
from sqlmend.types import Schema, Task


def training_rows(tasks: Iterable[Task], schema_of: Callable[[str], Schema | None],
                  seed: int = 0) -> list[tuple[list[float], int, str, int]]:
    """``(features, label, db_id, items of the SELECT)`` for each gold item and each extra one
    (:func:`sqlmend.sql.asked.training_items`).

    Args:
        tasks: questions with golds.
        schema_of: ``db_id -> schema`` (None: no columns drawn from its tables).
        seed: the draws' seed (each question draws from its own generator, so rows do not depend on order).
    """
    rows = []
    for task in tasks:
        if not task.gold:
            continue
        schema = schema_of(task.db_id)

        def table_columns(names: set[str], schema: Schema | None = schema) -> list[str]:
            return [] if schema is None else [c.name for t in schema.tables if t.name.casefold() in names
                                              for c in t.columns]

        rng = random.Random(f"{seed}:{task.question_id}")
        rows += [(f, label, task.db_id, n)
                 for f, label, n in training_items(task.question, task.gold, table_columns, rng)]
    return rows


def fit(rows: list[tuple[list[float], int, str, int]], alpha: float = ALPHA, holdout: float = 0.2) -> dict[str, Any]:
    """Fit the reading and fix its threshold (see the module doc); returns the weights' fields."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    x = np.array([r[0] for r in rows], dtype=float)
    y = np.array([r[1] for r in rows])
    test = np.array([held_out(r[2], holdout) for r in rows])
    model = LogisticRegression(max_iter=3000, C=1.0).fit(x[~test], y[~test])
    p = model.predict_proba(x[test])[:, 1]
    multi = np.array([r[3] >= 2 for r in rows])[test]
    asked = p[(y[test] == 1) & multi]
    threshold = float(np.quantile(asked, alpha))
    return {"features": list(FEATURES), "coef": [round(float(c), 6) for c in model.coef_[0]],
            "intercept": round(float(model.intercept_[0]), 6), "threshold": round(threshold, 6), "alpha": alpha,
            "holdout": holdout,
            "measured": {"rows": int(len(y)), "asked": int(y.sum()), "fit_rows": int((~test).sum()),
                         "held_out_rows": int(test.sum()),
                         "held_out_auroc": round(float(roc_auc_score(y[test], p)), 4),
                         "held_out_extras_below_threshold": round(float((p[y[test] == 0] < threshold).mean()), 4),
                         "held_out_asked_below_threshold": round(float((asked < threshold).mean()), 4)}}
