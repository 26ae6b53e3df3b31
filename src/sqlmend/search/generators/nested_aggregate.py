"""nested_aggregate: the top group by ORDER BY ... LIMIT 1 instead of an aggregate of an aggregate.

``MAX(COUNT(*))`` is refused by SQLite ("misuse of aggregate function") and by
PostgreSQL; systems write it for "the X with the most Y", either as a select item of a
grouped query or as ``HAVING COUNT(*) = (SELECT MAX(COUNT(*)) ... GROUP BY ...)``. Both
become the grouped query sorted by the inner aggregate (MAX: descending, MIN:
ascending) with LIMIT 1.
"""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.sql import ast
from sqlmend.synth.nodes import selects


def _nested(node) -> bool:
    return isinstance(node, (ast.Max, ast.Min)) and isinstance(node.this, ast.AggFunc)


def _having_extreme(sel):
    """The ``MAX/MIN(agg)`` of ``HAVING agg = (SELECT MAX/MIN(agg) ...)``, or None."""
    having = sel.args.get("having")
    if having is None or not isinstance(having.this, ast.EQ):
        return None
    sub = having.this.expression
    inner = sub.this if isinstance(sub, ast.Subquery) else None
    if isinstance(inner, ast.Select) and len(inner.expressions) == 1 and _nested(inner.expressions[0]):
        return inner.expressions[0]
    return None


def _locate(tree):
    out = []
    for sel in selects(tree):
        if sel.args.get("group") is None or sel.args.get("order") is not None or sel.args.get("limit") is not None:
            continue
        if _having_extreme(sel) is not None:
            out.append((sel, "having"))
        for i, e in enumerate(sel.expressions):
            if _nested(e.this if isinstance(e, ast.Alias) else e):
                out.append((sel, i))
    return out


def _options(item):
    sel, where = item
    return [(None, "HAVING agg = (SELECT MAX/MIN(agg) ...) -> ORDER BY agg LIMIT 1" if where == "having"
             else f"select item {where}: MAX/MIN(agg) -> agg, ORDER BY agg LIMIT 1")]


def _apply(item, _):
    sel, where = item
    if where == "having":
        extreme = _having_extreme(sel)
        key = sel.args["having"].this.this.copy()
        sel.args["having"].pop()
    else:
        e = sel.expressions[where]
        extreme = e.this if isinstance(e, ast.Alias) else e
        key = extreme.this.copy()
        extreme.replace(key.copy())
    desc = isinstance(extreme, ast.Max)
    # nulls as SQLite sorts them by default (the smallest value), so no NULLS clause is written
    sel.order_by(ast.Ordered(this=key, desc=desc, nulls_first=not desc), copy=False)
    sel.limit(1, copy=False)
    return True


def generate(tree, inp):
    """Take the top group by sorting on the inner aggregate, not by an aggregate of it."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("nested_aggregate", ("function_error", "clause_error"), generate, generate.__doc__)
