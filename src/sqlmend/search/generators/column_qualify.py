"""column_qualify: name the table of a column that several tables of its SELECT hold.

SQLite refuses such a query ("ambiguous column name"); PostgreSQL and DuckDB too. Each
table that holds the column gives one candidate, in which every unqualified use of the
name in that SELECT reads that table (the table the question names first).
"""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit, qualifier
from sqlmend.sql import ast
from sqlmend.structure.canonical import scope_tables
from sqlmend.synth.nodes import holders, selects


def _uses(sel: ast.Select, name: str) -> list[ast.Column]:
    """The unqualified columns called ``name`` that ``sel`` itself reads (not its subqueries)."""
    return [c for c in sel.find_all(ast.Column)
            if not c.table and c.name.lower() == name and c.parent_select is sel]


def _ambiguous(schema):
    def locate(tree):
        out = []
        for sel in selects(tree):
            if len(scope_tables(sel)) < 2:
                continue
            for name in sorted({c.name.lower() for c in sel.find_all(ast.Column)
                                if not c.table and c.parent_select is sel}):
                held = holders(name, sel, schema)
                if len(held) > 1:
                    out.append((sel, name, held))
        return out

    return locate


def generate(tree, inp):
    """Qualify a column that two or more tables in scope hold, with each of them in turn."""

    def options(item):
        sel, name, holders = item
        ranked = sorted(holders, key=lambda h: -max(inp.link_scores.get(h[1].lower(), 0.0),
                                                   inp.column_score(h[1], name)))
        return [((alias, table), f"qualify {name} with {qualifier(sel, alias, table)}") for alias, table in ranked]

    def apply(item, option):
        sel, name, _ = item
        alias, table = option
        prefix = qualifier(sel, alias, table) or table
        for col in _uses(sel, name):
            col.replace(ast.column(col.this.copy(), table=prefix))
        return True

    yield from each_edit(tree, _ambiguous(inp.schema), options, apply)


GENERATOR = Generator("column_qualify", ("attribute_mismatch", "table_mismatch"), generate, generate.__doc__)
