"""subquery_quantifier: compare with the subquery's MIN or MAX instead of ANY / ALL.

SQLite has no ``x < ANY (SELECT ...)`` / ``x > ALL (SELECT ...)``; the same comparison
reads the subquery's extreme value: ``< ANY`` and ``> ALL`` compare with its MAX, ``> ANY``
and ``< ALL`` with its MIN (``= ANY`` is ``IN``, ``<> ALL`` is ``NOT IN``). Questions say
"less than any" for either reading, so the other extreme is offered too.
"""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.sql import ast

_LESS = (ast.LT, ast.LTE)
_MORE = (ast.GT, ast.GTE)


def _locate(tree):
    return [n for n in tree.find_all(*_LESS, *_MORE, ast.EQ, ast.NEQ)
            if isinstance(n.expression, (ast.Any, ast.All)) and _select(n.expression) is not None]


def _select(quantified):
    inner = quantified.this
    inner = inner.this if isinstance(inner, ast.Subquery) else inner
    return inner if isinstance(inner, ast.Select) and len(inner.expressions) == 1 else None


def _options(node):
    q = node.expression
    if isinstance(node, ast.EQ) and isinstance(q, ast.Any):
        return [("in", "= ANY -> IN")]
    if isinstance(node, ast.NEQ) and isinstance(q, ast.All):
        return [("not in", "<> ALL -> NOT IN")]
    if isinstance(node, (ast.EQ, ast.NEQ)):
        return []
    less, any_ = isinstance(node, _LESS), isinstance(q, ast.Any)
    first = ast.Max if less == any_ else ast.Min
    second = ast.Min if first is ast.Max else ast.Max
    word = type(q).__name__.upper()
    return [(agg, f"{word} -> {agg.__name__.upper()} of the subquery") for agg in (first, second)]


def _apply(node, option):
    inner = _select(node.expression).copy()
    if option in ("in", "not in"):
        new = ast.In(this=node.this.copy(), query=ast.Subquery(this=inner))
        node.replace(ast.Not(this=new) if option == "not in" else new)
        return True
    item = inner.expressions[0]
    value = item.this if isinstance(item, ast.Alias) else item
    inner.set("expressions", [option(this=value.copy())])
    node.set("expression", ast.Subquery(this=inner))
    return True


def generate(tree, inp):
    """Rewrite a comparison with ANY / ALL of a subquery as one with its MIN / MAX (or IN / NOT IN)."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("subquery_quantifier", ("clause_error", "function_error"), generate, generate.__doc__)
