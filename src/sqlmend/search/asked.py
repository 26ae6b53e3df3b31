"""Which output columns a question asks for: a trained reading of a query's SELECT items.

A model's rewrite that returns the original's rows with some of its columns dropped (a
*projection* of the original: :func:`sqlmend.matching.projection_columns`) is right exactly when
the question did not ask for what it drops. Real systems' most common mistake on Spider is such
an extra column (an id, the ORDER BY key, the ``COUNT(*)`` of "the most common ..."), and the
verifier, which judges a query by its clauses, does not see it (docs/history.md, 12-06). Reading
the question for column names alone does not hold on data not seen: questions ask for a column by
part of its name ("first and last name" for ``Lname``, "account balance" for ``acc_bal``), and
name a column they do not ask for ("sorted by age").

So each SELECT item is read with a few plain features of the question and the query (is its name,
a word of its name, or an abbreviation of two of the question's words in the question; its
aggregate and the question's word for it; is it a key; does it also filter, order or group; how
many items the SELECT has) and a logistic regression fitted on Spider train's golds
(``sqlmend train-asked``, :mod:`sqlmend.search.asked_train`): a gold's SELECT items are asked for;
the columns it filters, orders or groups by and does not return, a key and two other columns of
its tables, and the ``COUNT(*)`` of a grouping are not. The shipped weights (``asked.json``) say how
they were made and what they measure; the threshold below which a column reads as "not asked" is
fixed on held-out Spider-train databases (:data:`ALPHA` of the asked columns of multi-column
answers fall below it), not on the runs it serves.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from sqlmend.sql.asked import FEATURES, item_features_of

#: The shipped weights.
WEIGHTS = Path(__file__).with_name("asked.json")
#: The share of asked columns (held-out Spider-train databases, answers of two or more columns) the
#: threshold lets read as "not asked": a stated risk, not a fitted one.
ALPHA = 0.05


class AskedReading:
    """The trained reading (the weights of ``sqlmend train-asked``).

    Args:
        weights: the weights file (None: the shipped one).
    """

    def __init__(self, weights: str | Path | None = None):
        data = json.loads(Path(weights or WEIGHTS).read_text())
        if tuple(data.get("features", ())) != FEATURES:
            raise ValueError(f"{weights or WEIGHTS}: not weights of this reading's features "
                             "(run `sqlmend train-asked`)")
        self.coef = [float(c) for c in data["coef"]]
        self.intercept = float(data["intercept"])
        self.threshold = float(data["threshold"])

    def probability(self, features: list[float]) -> float:
        """P(asked) of one item's features."""
        z = self.intercept + sum(c * x for c, x in zip(self.coef, features))
        return 1.0 / (1.0 + math.exp(-z))

    def probabilities(self, question: str, sql: object, dialect: str = "sqlite") -> list[float] | None:
        """P(asked) of each SELECT item of ``sql`` (its text, or its parsed tree), in order; None when it
        cannot tell (a query that does not parse, a set operation, a ``*``)."""
        rows = item_features_of(question, sql, dialect)
        return None if rows is None else [self.probability(f) for f in rows]


@lru_cache(maxsize=4)
def reading(weights: str | None = None) -> AskedReading:
    """The reading of a weights file (None: the shipped one), loaded once."""
    return AskedReading(weights)
