"""projection_swap: replace a selected column with another column of the tables in scope."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit, qualifier
from sqlmend.sql import ast
from sqlmend.structure.canonical import scope_tables
from sqlmend.synth.nodes import select_columns


def _options_for(inp):
    def options(item):
        col, sel, table = item
        picked = inp.ranked_columns(scope_tables(sel), exclude={f"{table}.{col.name}".lower()},
                                    like=(table, col.name))
        return [((a, t, c), f"select column {col.sql()} -> {t}.{c}") for a, t, c in picked]

    return options


def _apply(item, option):
    col, sel, _ = item
    alias, table, column = option
    col.replace(ast.column(column, table=qualifier(sel, alias, table) if col.table or len(scope_tables(sel)) > 1
                           else None))
    return True


def generate(tree, inp):
    """Select another column (the question's names ranked first) instead of a selected one."""
    yield from each_edit(tree, lambda t: select_columns(t, inp.schema), _options_for(inp), _apply)


GENERATOR = Generator("projection_swap", ("attribute_mismatch",), generate, generate.__doc__)
