"""Comparing a prediction's result with the gold's.

The two rules, **set** (BIRD's, the shared numbers') and **ordered**, are :mod:`sqlmend.matching`'s,
below every layer: the consensus stage groups alternatives by the same set rule. Here, what only
the evaluator needs: whether a gold orders its rows, and why two results differ.

>>> gold_orders("SELECT a FROM t WHERE b IN (SELECT b FROM u ORDER BY c LIMIT 3)")
False
"""

from __future__ import annotations

import re
from typing import Sequence

from sqlmend.data.hardness import SpiderParseError, tokenize
from sqlmend.matching import same_ordered, same_set, set_key  # noqa: F401 (the rules live below every layer)

_STRING = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")


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
