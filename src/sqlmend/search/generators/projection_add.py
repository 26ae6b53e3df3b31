"""projection_add: append a column the question names to the outermost SELECT list."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit, qualifier
from sqlmend.sql import ast
from sqlmend.structure.canonical import scope_tables
from sqlmend.synth.nodes import real_columns, selects


def _locate(tree):
    return selects(tree)[:1]


def _options_for(inp):
    def options(sel):
        if any(isinstance(e, ast.Star) for e in sel.expressions):
            return []
        taken = {f"{t}.{c.name}".lower() for c, t in real_columns(sel, inp.schema, sel.find_all(ast.Column))
                 if c.parent_select is sel and c.find_ancestor(ast.Select) is sel}
        picked = inp.ranked_columns(scope_tables(sel), exclude=taken, linked_only=True)
        return [((a, t, c), f"add select item {t}.{c}") for a, t, c in picked]

    return options


def _apply(sel, option):
    alias, table, column = option
    qual = qualifier(sel, alias, table)
    sel.select(ast.column(column, table=qual), copy=False)
    return True


def generate(tree, inp):
    """Append a column of the tables in scope that the question names but the SELECT lacks."""
    yield from each_edit(tree, _locate, _options_for(inp), _apply)


GENERATOR = Generator("projection_add", ("attribute_missing",), generate, generate.__doc__)
