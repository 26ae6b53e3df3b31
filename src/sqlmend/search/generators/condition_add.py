"""condition_add: add ``column = 'value'`` for a question literal the database stores in a table in scope."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit, qualifier
from sqlmend.sql import ast
from sqlmend.structure.canonical import scope_tables
from sqlmend.synth.nodes import selects


def _locate(tree):
    sels = selects(tree)
    return sels[:1]


def _options_for(inp):
    def options(sel):
        vi = inp.value_index
        if vi is None:
            return []
        used = {str(n.this).lower() for n in sel.find_all(ast.Literal)} | {
            n.name.lower() for n in sel.find_all(ast.Column)}
        in_scope = {t.lower(): a for a, t in scope_tables(sel).items()}
        out = []
        for phrase in inp.literals:
            if phrase.lower() in used or phrase.isdigit():
                continue
            for m in vi.search(phrase, mode="ci", limit=4):
                if m.table.lower() in in_scope:
                    out.append(((in_scope[m.table.lower()], m.table, m.column, m.value),
                                f"add condition {m.table}.{m.column} = {m.value!r}"))
        return out[: inp.max_per_node]

    return options


def _apply(sel, option):
    alias, table, column, value = option
    cond = ast.EQ(this=ast.column(column, table=qualifier(sel, alias, table)), expression=ast.Literal.string(value))
    sel.where(cond, copy=False)
    return True


def generate(tree, inp):
    """Filter on a value the question names and a table in scope stores."""
    yield from each_edit(tree, _locate, _options_for(inp), _apply)


GENERATOR = Generator("condition_add", ("condition_missing",), generate, generate.__doc__)
