"""The one engine that applies fixes-as-data to a query: rules never edit SQL themselves.

A fix is a dict naming an operation, the :func:`~sqlmend.rules.analysis.node_path`
of the node it changes, and ``expect``: the node's SQL when the rule looked at
it (so that a fix aimed at a stale tree is refused instead of misapplied).

Operations:

``replace_literal``  ``{"path", "expect", "value"}``: the literal becomes ``value``
    (a string literal for ``str``, a number otherwise).
``qualify_column``  ``{"path", "expect", "table"}``: the column gets the qualifier ``table``.
``replace_column``  ``{"path", "expect", "column", "table"}``: the column is renamed
    (and requalified when ``table`` is given).

>>> apply("SELECT a FROM t WHERE b = 'x'",
...       [{"op": "replace_literal", "path": "where.this.expression", "expect": "'x'", "value": "X"}])
"SELECT a FROM t WHERE b = 'X'"
"""

from __future__ import annotations

from typing import Any

from sqlmend import sql
from sqlmend.errors import SqlError
from sqlmend.rules.analysis import find_node
from sqlmend.sql import ast

OPERATIONS = ("replace_literal", "qualify_column", "replace_column")


class FixError(SqlError):
    """A fix cannot be applied (unknown operation, stale path, conflicting fixes)."""


def _literal(value: Any) -> Any:
    if isinstance(value, str):
        return ast.Literal.string(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FixError(f"cannot write a literal of type {type(value).__name__}")
    node = ast.Literal.number(abs(value))
    return ast.Neg(this=node) if value < 0 else node


def _replacement(node: Any, fix: dict) -> Any:
    op = fix.get("op")
    if op == "replace_literal":
        return _literal(fix["value"])
    if op in ("qualify_column", "replace_column"):
        if not isinstance(node, ast.Column):
            raise FixError(f"{op} needs a column, found {type(node).__name__}")
        name = fix.get("column") or node.name
        table = fix.get("table") or node.table or None
        return ast.column(name, table=table)
    raise FixError(f"unknown fix operation {op!r}; known: {', '.join(OPERATIONS)}")


def apply(text: str, fixes: list[dict], dialect: str = "sqlite") -> str:
    """Apply fixes to a query and return the new SQL text.

    Args:
        text: the query.
        fixes: fixes as data (see the module docstring); applied all on one tree.
        dialect: the dialect to parse and write.

    Returns:
        The rewritten SQL (the original text when ``fixes`` is empty).

    Raises:
        FixError: a fix is malformed, aims at a node that is not there (or not
            what the rule saw), or two fixes change the same node differently.
    """
    if not fixes:
        return text
    tree = sql.parse(text, dialect=dialect)
    planned: dict[str, tuple[Any, Any, dict]] = {}
    for fix in fixes:
        path = fix.get("path", "")
        node = find_node(tree, path)
        if node is None:
            raise FixError(f"no node at {path!r}")
        expect = fix.get("expect")
        if expect is not None and node.sql(dialect=dialect) != expect:
            raise FixError(f"node at {path!r} is {node.sql(dialect=dialect)!r}, not {expect!r}")
        new = _replacement(node, fix)
        if path in planned:
            if planned[path][1] != new:
                raise FixError(f"conflicting fixes at {path!r}")
            continue
        planned[path] = (node, new, fix)
    for node, new, _ in planned.values():
        node.replace(new)
    return sql.render(tree, dialect=dialect, original=text)
