"""comparison_operator: use another comparison operator in a WHERE/HAVING condition."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.sql import ast
from sqlmend.synth.nodes import conditions

_ALTERNATIVES = {ast.EQ: (ast.NEQ, ast.Like), ast.NEQ: (ast.EQ,), ast.GT: (ast.GTE, ast.LT, ast.LTE),
                 ast.GTE: (ast.GT, ast.LTE, ast.LT), ast.LT: (ast.LTE, ast.GT, ast.GTE),
                 ast.LTE: (ast.LT, ast.GTE, ast.GT), ast.Like: (ast.EQ,)}


def _locate(tree):
    return [n for n, _ in conditions(tree, *_ALTERNATIVES)]


def _options(node):
    out = []
    for cls in _ALTERNATIVES[type(node)]:
        if cls is ast.Like and not (isinstance(node.expression, ast.Literal) and node.expression.is_string):
            continue
        out.append((cls, f"operator {type(node).__name__} -> {cls.__name__}"))
    return out


def _apply(node, cls):
    rhs = node.expression.copy()
    if cls is ast.Like and isinstance(rhs, ast.Literal) and "%" not in rhs.this:
        rhs = ast.Literal.string(f"%{rhs.this}%")
    if isinstance(node, ast.Like) and isinstance(rhs, ast.Literal) and rhs.is_string:
        rhs = ast.Literal.string(rhs.this.strip("%"))
    node.replace(cls(this=node.this.copy(), expression=rhs))
    return True


def generate(tree, inp):
    """Compare with the operator the question implies (>, >=, <, <=, =, !=, LIKE)."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("comparison_operator", ("condition_error",), generate, generate.__doc__)
