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
