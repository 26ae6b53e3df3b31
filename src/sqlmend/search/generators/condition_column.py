"""condition_column: compare another column of the tables in scope in a WHERE/HAVING condition."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, column_swaps, each_edit, swap_column
from sqlmend.sql import ast
from sqlmend.synth.nodes import conditions, real_columns

_CMP = (ast.EQ, ast.NEQ, ast.GT, ast.GTE, ast.LT, ast.LTE, ast.Like, ast.In, ast.Between)


def _locate_for(inp):
    def locate(tree):
        return [(c, sel, t) for col, sel in conditions(tree, ast.Column) if isinstance(col.parent, _CMP)
                for c, t in real_columns(sel, inp.schema, [col])]

    return locate


def generate(tree, inp):
    """Filter on the column the question names instead of the one compared."""
    yield from each_edit(tree, _locate_for(inp), column_swaps(inp, "condition"), swap_column)


GENERATOR = Generator("condition_column", ("condition_error",), generate, generate.__doc__)
