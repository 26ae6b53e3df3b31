"""Predicate column: a literal compared with a column that does not store it moves to one that does.

``T2.Model = 'amc hornet'`` -> ``T2.Make = 'amc hornet'``. Proven when the value
matches no row of the wrong column and rows of the right one; recurs when the
current SQL compares the wrong column with a value it does not store and the
right column does.
"""

from __future__ import annotations

from typing import Any

from sqlmend.memory.kinds.base import (Online, ast, column_fix, fill_contract, count_matches, fragment,
                                       predicate_rows, qualified_name)
from sqlmend.types import split_ref

NAME = "predicate_column"
ERROR_TYPE = "attribute_mismatch"
MECHANICAL = True
PRESERVE = ["the literal", "other conditions", "projection", "joins"]


def comparison(frag: str | None, dialect: str) -> tuple[str, str, Any] | None:
    """(table.column, operator, literal) of a fragment that is one column-literal comparison."""
    node = fragment(frag, dialect)
    if not isinstance(node, (ast.EQ, ast.Like, ast.NEQ)):
        return None
    col, lit = node.this, node.expression
    if isinstance(col, ast.Literal):
        col, lit = lit, col
    name = qualified_name(col)
    if name and isinstance(lit, ast.Literal):
        return name, type(node).__name__, lit.this
    return None


def classify(edits: list[Any], dialect: str) -> dict[str, Any] | None:
    """One REPLACE of a comparison that keeps its literal and changes its column."""
    if len(edits) != 1 or edits[0].kind != "replace":
        return None
    e = edits[0]
    a, b = comparison(e.before, dialect), comparison(e.after, dialect)
    if a and b and a[1] == b[1] == "EQ" and a[0] != b[0] and a[2] == b[2]:
        return {"wrong": a[0], "right": b[0], "value": a[2], "clause": e.clause}
    return None


def judge(question: str, p: dict[str, Any], facts: dict[str, Any]) -> tuple[bool, str]:
    rows = predicate_rows(facts)
    wrong = rows.get(("before", p["wrong"], str(p["value"])))
    right = rows.get(("after", p["right"], str(p["value"])))
    return wrong == 0 and bool(right), f"{p['value']!r} matches {wrong} rows of {p['wrong']}, {right} of {p['right']}"


def contract(p: dict[str, Any]) -> dict[str, Any]:
    return fill_contract(NAME, PRESERVE, p)


def activate(p: dict[str, Any], online: Online) -> tuple[bool, str, dict[str, Any]]:
    for o in online.observations:
        if o.get("column") != p["wrong"] or o.get("op") != "EQ":
            continue
        stored = count_matches(online.db, p["right"], o["literal"])
        if online.verify and not (o.get("rows") == 0 and stored):
            return False, f"{o['literal']!r}: {o.get('rows')} rows in {p['wrong']}, {stored} in {p['right']}", {}
        return True, f"{o['literal']!r} is not in {p['wrong']} but in {stored} rows of {p['right']}", \
            {"wrong": p["wrong"], "right": p["right"], "literal": o["literal"]}
    return False, f"no comparison on {p['wrong']}", {}


def adapt(tree: Any, resolver: Any, b: dict[str, Any]) -> list[dict[str, Any]]:
    table, new_col = split_ref(b["right"])
    fixes = []
    for pred in tree.find_all(ast.EQ):
        col, lit = pred.this, pred.expression
        if isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and lit.this == b["literal"] \
                and resolver.column_name(col) == b["wrong"]:
            qual = resolver.qualifier(table, at=col)
            if qual is not None:
                fixes.append(column_fix(col, new_col, qual if col.table else None))
    return fixes
