"""aggregate_change: use another aggregate, drop it, or count distinct values."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.sql import ast

_AGGS = (ast.Max, ast.Min, ast.Avg, ast.Sum, ast.Count)


def _locate(tree):
    return [n for n in tree.find_all(*_AGGS)]


def _options(node):
    out = []
    star = isinstance(node.this, ast.Star)
    distinct = isinstance(node.this, ast.Distinct)
    if not star:
        for cls in _AGGS:
            if not isinstance(node, cls) and not distinct:
                out.append((cls, f"{type(node).__name__.upper()} -> {cls.__name__.upper()}"))
        if isinstance(node, ast.Count):
            out.append(("distinct", "COUNT(x) <-> COUNT(DISTINCT x)"))
        if isinstance(node.parent, (ast.Select, ast.Alias)) and not distinct:
            out.append(("drop", f"drop {type(node).__name__.upper()}"))
    return out


def _apply(node, option):
    if option == "drop":
        node.replace(node.this.copy())
    elif option == "distinct":
        arg = node.this
        node.set("this", arg.expressions[0].copy() if isinstance(arg, ast.Distinct)
                 else ast.Distinct(expressions=[arg.copy()]))
    else:
        node.replace(option(this=node.this.copy()))
    return True


def generate(tree, inp):
    """Aggregate as the question asks (MAX/MIN/AVG/SUM/COUNT, DISTINCT inside COUNT, or none)."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("aggregate_change", ("function_error",), generate, generate.__doc__)
