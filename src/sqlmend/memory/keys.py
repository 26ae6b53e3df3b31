"""Structural keys of a SQL and of a memory item (MIRA §3.2.3 "Admission and indexing", §3.3.1).

``K(s)`` is a set of short strings read from the AST: tables, columns per
clause, columns compared with literals, join pairs, DISTINCT and aggregates;
each column is resolved to its table in its own scope (:class:`sqlmend.sql.Resolver`).
An item's keys describe its incorrect form and minimum context; for an ADD
repair, whose structure is absent from the incorrect SQL, they describe the
insertion context (the clause it goes into).

>>> sorted(sql_keys("SELECT DISTINCT T1.name FROM singer AS T1 WHERE T1.country = 'France'"))
['cmp:singer.country', 'col:select:singer.name', 'col:where:singer.country', 'distinct', 'table:singer']
"""

from __future__ import annotations

from typing import Any

from sqlmend import sql
from sqlmend.errors import SqlmendError

ast = sql.ast

_CLAUSES = {"expressions": "select", "where": "where", "group": "group", "having": "having",
            "order": "order", "joins": "join", "from": "from"}


def _clause(node) -> str:
    while node is not None and node.parent is not None:
        if isinstance(node.parent, ast.Select) and node.arg_key in _CLAUSES:
            return _CLAUSES[node.arg_key]
        node = node.parent
    return "other"


def sql_keys(text: str, dialect: str = "sqlite", tree: Any = None) -> set[str]:
    """Return the structural keys K(s) of one SQL.

    Args:
        text: the SQL.
        dialect: its dialect.
        tree: ``text`` already parsed (read, not changed), to spare a parse.

    Returns:
        The keys (empty when the SQL does not parse).
    """
    if tree is None:
        try:
            tree = sql.parse(text, dialect=dialect)
        except SqlmendError:
            return set()
    resolver = sql.Resolver(tree)
    column_name = resolver.column_name
    keys = {f"table:{t.lower()}" for t in resolver.tables().values()}
    for col in tree.find_all(ast.Column):
        keys.add(f"col:{_clause(col)}:{column_name(col)}")
    for pred in tree.find_all(ast.EQ, ast.NEQ, ast.Like, ast.GT, ast.LT, ast.GTE, ast.LTE):
        a, b = pred.this, pred.expression
        if isinstance(a, ast.Column) and isinstance(b, ast.Literal):
            keys.add(f"cmp:{column_name(a)}")
        elif isinstance(a, ast.Column) and isinstance(b, ast.Column) and _clause(pred) == "join":
            pair = sorted([column_name(a), column_name(b)])
            keys.add(f"join:{pair[0]}={pair[1]}")
    for sel in tree.find_all(ast.Select):
        if sel.args.get("distinct"):
            keys.add("distinct")
    for agg in tree.find_all(ast.AggFunc):
        keys.add(f"agg:{type(agg).__name__.lower()}")
    return keys


def item_keys(incorrect_sql: str, schema_refs: list[str], clauses: list[str], added: bool,
              dialect: str = "sqlite") -> list[str]:
    """Keys of an item: its incorrect form's keys touching its schema references.

    Args:
        incorrect_sql: s^{¬g}, the SQL with the group reverted.
        schema_refs: the group's ``table`` / ``table.column`` references.
        clauses: the group's clauses.
        added: the group only adds structure (ADD): keys describe the insertion
            context (every key of its clauses) instead.
        dialect: the SQL dialect.

    Returns:
        The sorted keys.
    """
    keys = sql_keys(incorrect_sql, dialect)
    refs = {r.lower() for r in schema_refs}
    tables = {r.split(".")[0] for r in refs}
    wanted = {c if c != "distinct" else "select" for c in clauses}

    def touches(k: str) -> bool:
        body = k.split(":")[-1]
        return any(r in body for r in refs) or (k.startswith("table:") and body in tables)

    if added:
        picked = {k for k in keys if k.split(":")[0] == "col" and k.split(":")[1] in wanted}
        picked |= {k for k in keys if k.startswith("table:") and (not tables or k[6:] in tables)}
    else:
        picked = {k for k in keys if touches(k)}
    return sorted(picked)
