"""Comparing a prediction's result with the gold's.

Two rules, reported side by side:

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
>>> gold_orders("SELECT a FROM t WHERE b IN (SELECT b FROM u ORDER BY c LIMIT 3)")
False
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from sqlmend.data.hardness import SpiderParseError, tokenize

_STRING = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")


def same_set(pred: Sequence[tuple], gold: Sequence[tuple]) -> bool:
    """BIRD's rule: equal sets of rows.

    Args:
        pred: the prediction's rows.
        gold: the gold's rows.

    Returns:
        True when the sets are equal.
    """
    return set(pred) == set(gold)


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


def gold_orders(sql: str) -> bool:
    """Whether a SQL orders its result: an ORDER BY outside every parenthesis.

    Args:
        sql: the (gold) SQL.

    Returns:
        True when the top-level query has ORDER BY.
    """
    try:
        toks = tokenize(sql)
    except SpiderParseError:
        toks = re.findall(r"\w+|[()]", _STRING.sub("''", sql).lower())
    depth = 0
    for i, tok in enumerate(toks):
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0 and tok == "order" and i + 1 < len(toks) and toks[i + 1] == "by":
            return True
    return False


def mismatch(pred_columns: Sequence[str], pred: Sequence[tuple], gold_columns: Sequence[str],
             gold: Sequence[tuple]) -> str:
    """A short reason why two results differ (for reports).

    Args:
        pred_columns: the prediction's column names.
        pred: its rows.
        gold_columns: the gold's column names.
        gold: its rows.

    Returns:
        "column count differs (3 vs 2)", "empty result", "extra rows", "missing rows" or "rows differ".
    """
    if len(pred_columns) != len(gold_columns):
        return f"column count differs ({len(pred_columns)} vs {len(gold_columns)})"
    if not pred and gold:
        return "empty result"
    ps, gs = set(pred), set(gold)
    if ps > gs:
        return "extra rows"
    if ps < gs:
        return "missing rows"
    return "rows differ"
