"""Which clause of its SELECT a node sits in (``select``, ``where``, ``join``...)."""

from __future__ import annotations

from sqlglot import exp

#: the argument of a SELECT (or set operation) -> our clause name
_CLAUSE = {
    "expressions": "select",
    "from": "from",
    "from_": "from",
    "joins": "join",
    "where": "where",
    "group": "group",
    "having": "having",
    "order": "order",
    "limit": "limit",
    "offset": "limit",
    "distinct": "distinct",
    "with": "with",
    "with_": "with",
}
CLAUSES = ("select", "from", "join", "where", "group", "having", "order", "limit", "distinct", "with", "other")


def clause_of(node: exp.Expression) -> str:
    """The clause of the nearest enclosing SELECT (or set operation) that holds ``node``.

    Args:
        node: any node of a tree.

    Returns:
        One of :data:`CLAUSES`; ``"other"`` when the node is not under a query clause.
    """
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, (exp.Select, exp.SetOperation)) and child.arg_key in _CLAUSE:
            return _CLAUSE[child.arg_key]
        child, parent = parent, parent.parent
    return "other"


def conjuncts(cond: exp.Expression) -> list[exp.Expression]:
    """Split a condition into its top-level AND terms.

    A parenthesized conjunction is split too; any other parenthesized term
    (``(a OR b)``) stays whole. The nodes are those of the input tree.

    Args:
        cond: a condition (the ``this`` of a WHERE or HAVING, an ON, ...).

    Returns:
        The terms, left to right.

    >>> from sqlmend.sql import parse
    >>> [t.sql() for t in conjuncts(parse("SELECT 1 WHERE a = 1 AND (b = 2 AND (c OR d))").args["where"].this)]
    ['a = 1', 'b = 2', '(c OR d)']
    """
    if isinstance(cond, exp.And):
        return conjuncts(cond.this) + conjuncts(cond.expression)
    if isinstance(cond, exp.Paren) and isinstance(cond.this, exp.And):
        return conjuncts(cond.this)
    return [cond]
