"""Which clause of its SELECT a node sits in (``select``, ``where``, ``join``...)."""

from __future__ import annotations

from sqlglot import exp

from sqlmend.sql.schema import table_name

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


def from_tables(tree: exp.Expression) -> tuple[list[tuple[str, str | None]], list[tuple[str, str, str, str]]]:
    """The tables of a query's first SELECT's FROM and JOINs, and its column-equality joins.

    For a set operation the left-most SELECT is read; a sub-query in FROM is skipped
    (it is no table). Names are as written; aliases only where written.

    Args:
        tree: a parsed query.

    Returns:
        ``([(table, alias or None), ...], [(table_a, column_a, table_b, column_b), ...])``,
        the second from ``ON a.x = b.y`` terms whose both sides name a table of the FROM.

    >>> from sqlmend.sql import parse
    >>> from_tables(parse("SELECT 1 FROM a AS T1 JOIN b AS T2 ON T1.x = T2.y AND T1.z > 3"))
    ([('a', 'T1'), ('b', 'T2')], [('a', 'x', 'b', 'y')])
    """
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    if isinstance(select, exp.Subquery):
        select = select.unnest()
    if not isinstance(select, exp.Select):
        return [], []
    sources = [select.args.get("from") or select.args.get("from_")]
    sources = [s.this for s in sources if s is not None] + [j.this for j in select.args.get("joins") or []]
    read = [t for t in sources if isinstance(t, exp.Table) and t.name]
    tables = [(table_name(t), t.alias or None) for t in read]
    by_ref = {t.alias_or_name.lower(): name for t, (name, _) in zip(read, tables)}
    joins = []
    for j in select.args.get("joins") or []:
        on = j.args.get("on")
        for term in conjuncts(on) if on is not None else []:
            if isinstance(term, exp.EQ) and all(isinstance(s, exp.Column) for s in (term.this, term.expression)):
                a, b = term.this, term.expression
                ta, tb = by_ref.get(a.table.lower()), by_ref.get(b.table.lower())
                if ta and tb:
                    joins.append((ta, a.name, tb, b.name))
    return tables, joins
