"""aggregate_change: use another aggregate, drop it, count distinct values, or aggregate a plain column."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.sql import ast
from sqlmend.synth.nodes import selects

_AGGS = (ast.Max, ast.Min, ast.Avg, ast.Sum, ast.Count)


def _plain(sel) -> list:
    """The one projected column of a SELECT of one plain column, no aggregate and no grouping."""
    if sel.args.get("group") or len(sel.expressions) != 1:
        return []
    e = sel.expressions[0]
    e = e.this if isinstance(e, ast.Alias) else e
    return [e] if isinstance(e, ast.Column) else []


def _locate(tree):
    return [n for n in tree.find_all(*_AGGS)] + [c for sel in selects(tree) for c in _plain(sel)]


def _options(node):
    if isinstance(node, ast.Column):
        return [(("wrap", cls), f"{node.sql()} -> {cls.__name__.upper()}({node.sql()})")
                for cls in (ast.Sum, ast.Avg, ast.Max, ast.Min, ast.Count)]
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
    if isinstance(option, tuple):
        node.replace(option[1](this=node.copy()))
    elif option == "drop":
        node.replace(node.this.copy())
    elif option == "distinct":
        arg = node.this
        node.set("this", arg.expressions[0].copy() if isinstance(arg, ast.Distinct)
                 else ast.Distinct(expressions=[arg.copy()]))
    else:
        node.replace(option(this=node.this.copy()))
    return True


def generate(tree, inp):
    """Aggregate as the question asks (MAX/MIN/AVG/SUM/COUNT, DISTINCT inside COUNT, or none; a plain
    projected column of an ungrouped query aggregated)."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("aggregate_change", ("function_error",), generate, generate.__doc__)
