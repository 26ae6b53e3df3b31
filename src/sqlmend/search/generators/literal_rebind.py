"""literal_rebind: rebind a compared literal to a value the database stores (value index, all modes)."""

from __future__ import annotations

import re

from sqlmend.db import MODES
from sqlmend.search.generators.base import (Generator, add_join, each_edit, fk_pairs, join_on, qualifier,
                                            read_as)
from sqlmend.sql import ast
from sqlmend.structure.canonical import is_string_like, scope_tables
from sqlmend.synth.nodes import conditions, table_of

_CMP = (ast.EQ, ast.NEQ, ast.Like, ast.GT, ast.GTE, ast.LT, ast.LTE)


def _text(node) -> str:
    return str(node.name if isinstance(node, ast.Column) else node.this)


def _locate_for(inp):
    def locate(tree):
        return [(cmp, sel) for cmp, sel in conditions(tree, *_CMP)
                if isinstance(cmp.this, ast.Column) and not is_string_like(cmp.this, inp.schema)
                and (isinstance(cmp.expression, ast.Literal) or is_string_like(cmp.expression, inp.schema))]

    return locate


def _options_for(inp):
    def options(item):
        cmp, sel = item
        col, lit = cmp.this, cmp.expression
        value = _text(lit).strip("%")
        table = table_of(col, sel, inp.schema)
        out = []
        vi = inp.value_index
        is_text = isinstance(lit, ast.Column) or lit.is_string
        if vi is not None and table and is_text and value:
            for m in vi.matches(table, col.name, value, modes=MODES, limit=3):
                if m.value != value:
                    out.append(((None, m.value), f"value {value!r} -> {m.value!r} ({m.mode})"))
            scope = scope_tables(sel)
            in_scope = {t.lower(): a for a, t in scope.items()}
            for m in vi.search(value, mode="ci", limit=6):
                if m.table.lower() in in_scope and (m.table.lower(), m.column.lower()) != (table.lower(),
                                                                                        col.name.lower()):
                    out.append(((qualifier(sel, in_scope[m.table.lower()], m.table), m.column, m.value),
                                f"value {value!r} is stored in {m.table}.{m.column}"))
                elif m.table.lower() not in in_scope:
                    out += _joined(sel, inp.schema, m, value, col, table)
        elif not is_text:
            numbers = [n for n in re.findall(r"\b\d+(?:\.\d+)?\b", inp.question) if n != str(lit.this)]
            out += [((None, float(n) if "." in n else int(n)), f"number {lit.this} -> {n}") for n in numbers[:3]]
        return out[: inp.max_per_node]

    return options


def _joined(sel, schema, m, value: str, col, table: str) -> list:
    """Options comparing with the column of a table the SELECT does not read that stores the value,
    joined along a foreign key of a table it reads, or else on the compared column = that table's
    one-column primary key (a code column compared with a name: ``flights.Airline = 'United
    Airlines'`` where ``airlines.Airline`` holds it and ``airlines.uid`` is the code)."""
    keys = [(a, ca, cb) for a, ca, b, cb in fk_pairs(schema) if b.lower() == m.table.lower()]
    holder = schema.table(m.table)
    if not keys and holder is not None and len(holder.primary_key) == 1:
        keys = [(table, col.name, holder.primary_key[0])]
    out = []
    for a, ca, cb in keys:
        for left in read_as(sel, a):
            on = join_on(left, ca, m.table, cb)
            out.append((("join", m.table, on, m.column, m.value),
                        f"value {value!r} is stored in {m.table}.{m.column} (join {m.table} ON {on.sql()})"))
    return out


def _apply_for(inp):
    def apply(item, option):
        if option[0] == "join":
            _, table, on, column, value = option
            add_join(item[1], table, on, inp.schema)
            return _apply(item, (table.rpartition(".")[2], column, value))  # the joined table by its own name
        return _apply(item, option)

    return apply


def _apply(item, option):
    cmp, _ = item
    if len(option) == 3:
        qual, column, value = option
        cmp.this.replace(ast.column(column, table=qual))
    else:
        value = option[1]
    if isinstance(value, str):
        if isinstance(cmp, ast.Like):
            value = f"%{value}%"
        cmp.expression.replace(ast.Literal.string(value))
    else:
        cmp.expression.replace(ast.Literal.number(value))
    return True


def generate(tree, inp):
    """Compare with the value as stored (case, spacing, plural, prefix, approximate), or in the column storing it
    (of a table the query reads, or of one it joins along a foreign key for it)."""
    yield from each_edit(tree, _locate_for(inp), _options_for(inp), _apply_for(inp))


GENERATOR = Generator("literal_rebind", ("value_error", "condition_error"), generate, generate.__doc__)
