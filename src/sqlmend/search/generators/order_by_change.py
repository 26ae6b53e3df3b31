"""order_by_change: flip a sort direction, sort by another column, or drop ORDER BY (with its LIMIT)."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit, qualifier
from sqlmend.sql import ast
from sqlmend.structure.canonical import scope_tables
from sqlmend.synth.nodes import real_columns, selects


def _locate(tree):
    return [sel for sel in selects(tree) if sel.args.get("order") is not None]


def _options_for(inp):
    def options(sel):
        out = [(("flip", i), f"flip direction of ORDER BY {o.this.sql()}")
               for i, o in enumerate(sel.args["order"].expressions)]
        first = sel.args["order"].expressions[0]
        cols = real_columns(sel, inp.schema, [first.this])
        if cols:
            col, table = cols[0]
            for a, t, c in inp.ranked_columns(scope_tables(sel), exclude={f"{table}.{col.name}".lower()},
                                              like=(table, col.name)):
                out.append((("column", (a, t, c)), f"ORDER BY {col.sql()} -> {t}.{c}"))
        out.append((("drop", None), "drop ORDER BY"))
        return out

    return options


def _apply(sel, option):
    kind, arg = option
    order = sel.args["order"]
    if kind == "flip":
        o = order.expressions[arg]
        desc = not o.args.get("desc")
        o.set("desc", desc)
        o.set("nulls_first", not desc)  # SQLite's default: NULLs sort as the smallest value
    elif kind == "column":
        alias, table, column = arg
        first = order.expressions[0]
        first.set("this", ast.column(column, table=qualifier(sel, alias, table)))
    else:
        order.pop()
        if sel.args.get("limit") is not None:
            sel.args["limit"].pop()
    return True


def generate(tree, inp):
    """Sort as the question asks: direction, sort key, or no sorting at all."""
    yield from each_edit(tree, _locate, _options_for(inp), _apply)


GENERATOR = Generator("order_by_change", ("clause_error", "modifier_error"), generate, generate.__doc__)
