"""set_operation: use another set operation (UNION / INTERSECT / EXCEPT), or drop the parentheses
around a branch (SQLite refuses ``... UNION (SELECT ...)``)."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.sql import ast
from sqlmend.synth.nodes import SETOPS


def _locate(tree):
    return list(tree.find_all(*SETOPS))


def _bare(branch) -> bool:
    """A parenthesized plain SELECT (no ORDER BY / LIMIT that the parentheses would scope)."""
    return (isinstance(branch, ast.Subquery) and isinstance(branch.this, ast.Select)
            and branch.this.args.get("order") is None and branch.this.args.get("limit") is None)


def _options(node):
    out = [(cls, f"{type(node).__name__.upper()} -> {cls.__name__.upper()}")
           for cls in SETOPS if not isinstance(node, cls)]
    return out + [(side, f"unparenthesize the {'left' if side == 'this' else 'right'} branch")
                  for side in ("this", "expression") if _bare(node.args.get(side))]


def _apply(node, cls):
    if isinstance(cls, str):  # a branch: its parentheses dropped
        branch = node.args[cls]
        branch.replace(branch.this.copy())
        return True
    new = cls(this=node.this.copy(), expression=node.expression.copy(), distinct=True)
    for key in ("order", "limit"):
        if node.args.get(key) is not None:
            new.set(key, node.args[key].copy())
    if node.parent is None:
        return new
    node.replace(new)
    return True


def generate(tree, inp):
    """Combine the two branches as the question says (both: INTERSECT, but not: EXCEPT, or: UNION)."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("set_operation", ("clause_error",), generate, generate.__doc__)
