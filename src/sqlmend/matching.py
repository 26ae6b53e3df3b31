"""When two query results are the same answer: the evaluator's rules, shared by every layer.

The evaluator (:mod:`sqlmend.evaluation.evaluate`) scores a prediction by these rules, and the consensus
stage groups alternative queries by the same rule, so that "these answers agree" means what
"this answer is correct" means when it is measured.

* **set** (BIRD's ``set(predicted) == set(gold)``, also how the shared Spider numbers were
  measured): the rows as sets; order and duplicates ignored;
* **ordered**: the rows as lists when the gold orders them (a top-level ORDER BY), as
  multisets otherwise, so that a swapped order under ORDER BY and duplicated rows count as wrong.

Values compare with Python equality of what the engine returned, as the official scripts do
(``1 == 1.0``; ``'1' != 1``).

>>> same_set([(1,), (2,)], [(2,), (1,), (1,)])
True
>>> same_ordered([(1,), (2,)], [(2,), (1,)], ordered=True)
False
>>> set_key([(2, 'a'), (1, 'b'), (2, 'a')]) == set_key([(1.0, 'b'), (2, 'a')])
True
>>> same_up_to_columns([("x", 1), ("y", 2)], [(1, "x"), (2, "y")]), same_set([("x", 1)], [(1, "x")])
(True, False)
"""

from __future__ import annotations

from collections import Counter
from itertools import product
from typing import Hashable, Sequence

#: Column orders tried at most by :func:`same_up_to_columns` (a wide result of look-alike columns).
MAX_ORDERS = 720


def same_set(pred: Sequence[tuple], gold: Sequence[tuple]) -> bool:
    """BIRD's rule: equal sets of rows.

    Args:
        pred: the prediction's rows.
        gold: the gold's rows.

    Returns:
        True when the sets are equal.
    """
    return set(pred) == set(gold)


def set_key(rows: Sequence[tuple]) -> Hashable:
    """A key under which two results are equal exactly when :func:`same_set` says so (``1`` and
    ``1.0`` hash alike, as they compare alike): results grouped by it agree by the evaluator's rule."""
    return frozenset(rows)


def same_ordered(pred: Sequence[tuple], gold: Sequence[tuple], ordered: bool) -> bool:
    """The order- and duplicate-aware rule.

    Args:
        pred: the prediction's rows.
        gold: the gold's rows.
        ordered: the gold has a top-level ORDER BY (compare lists), else compare multisets.

    Returns:
        True when equal under the rule.
    """
    if len(pred) != len(gold):
        return False
    if list(pred) == list(gold):  # equal lists: equal multisets too
        return True
    return not ordered and Counter(pred) == Counter(gold)


def same_up_to_columns(a: Sequence[tuple], b: Sequence[tuple]) -> bool:
    """Whether two results hold the same rows as sets once the columns of one are put in some order
    of the other's: the same content, written in another column order (the set rule counts that
    as different, as the benchmarks' golds fix a column order).

    Only column orders that pair columns of equal value sets are tried (at most :data:`MAX_ORDERS`;
    past that the results count as different).
    """
    sa, sb = set(a), set(b)
    if sa == sb:
        return True
    if len(sa) != len(sb) or not sa:
        return False
    width = len(next(iter(sa)))
    if any(len(r) != width for r in sa) or any(len(r) != width for r in sb):
        return False
    return _columns_onto(list(sb), sa) is not None


def projection_columns(wide: Sequence[tuple], narrow: Sequence[tuple]) -> tuple[int, ...] | None:
    """Which columns of ``wide`` ``narrow`` keeps, in ``narrow``'s order, when ``narrow`` holds exactly
    ``wide``'s rows with some of its columns dropped (as sets of rows, the evaluator's set rule); None
    when it does not, when it drops nothing, or when ``wide`` is empty.

    Only column choices that pair columns of equal value sets are tried (at most :data:`MAX_ORDERS`).

    >>> projection_columns([("x", 1, "a"), ("y", 2, "b")], [(2,), (1,)])
    (1,)
    >>> projection_columns([("x", 1), ("y", 2)], [("x",), ("z",)]) is None
    True
    """
    if not wide or not narrow:
        return None
    width, kept = len(wide[0]), len(narrow[0])
    if not 0 < kept < width or any(len(r) != width for r in wide) or any(len(r) != kept for r in narrow):
        return None
    return _columns_onto(wide, narrow)


def _columns_onto(wide: Sequence[tuple], narrow: Sequence[tuple] | set[tuple]) -> tuple[int, ...] | None:
    """The columns of ``wide``, one for each of ``narrow``'s in its order, that turn ``wide``'s rows into
    ``narrow``'s (as sets), trying only columns of equal value sets (at most :data:`MAX_ORDERS` choices)."""
    width, kept = len(wide[0]), len(next(iter(narrow)))
    target = set(narrow)
    cols_w = [frozenset(r[i] for r in wide) for i in range(width)]
    cols_n = [frozenset(r[j] for r in target) for j in range(kept)]
    choices = [[i for i in range(width) if cols_w[i] == cols_n[j]] for j in range(kept)]
    if not all(choices):
        return None
    tried = 0
    for cols in product(*choices):
        if len(set(cols)) != kept:
            continue
        tried += 1
        if tried > MAX_ORDERS:
            return None
        if {tuple(r[i] for i in cols) for r in wide} == target:
            return cols
    return None
