"""A gold's compared value broken the way the static value rules claim to repair.

Real systems compare the right value with the wrong column of a table they read
(VL07 repairs it) or write it in the wrong letter case (VL01). Applied to a gold's
first ``column = 'text'`` comparison, these give wrong originals whose repair is
known: the gold itself (``sqlmend bench static-train``).
"""

from __future__ import annotations

import random
from typing import Any

from sqlmend.rules.analysis import QueryAnalysis
from sqlmend.rules.values import holds_text
from sqlmend.sql import ast
from sqlmend.sql.fixes import find_node, node_path

#: The ways :func:`variants` breaks a gold, in order.
KINDS = ("column", "case")


def variants(gold: str, schema: Any, rng: random.Random) -> list[tuple[str, str]]:
    """``[(kind, sql)]``: the gold's first ``column = 'text'`` with the column swapped for another text
    column of the same table (``rng`` picks it), and with the text's letter case changed (lower case,
    or title case when it already is). Nothing for a gold without such a comparison.

    Whether each variant returns other rows than the gold is for the database to say.
    """
    an = QueryAnalysis(gold, schema)
    if an.tree is None:
        return []
    found = [c for c in an.comparisons() if c.op == "eq" and c.column.status == "ok"
             and isinstance(an.as_literal(c.literals[0]), str)]
    if not found:
        return []
    cmp = found[0]
    out: list[tuple[str, str]] = []
    others = [c.name for c in schema.table(cmp.column.table).columns
              if c.name.lower() != cmp.column.column.lower() and holds_text(c)]
    if others:
        tree = an.tree.copy()
        col = find_node(tree, node_path(cmp.column.node))
        if isinstance(col, ast.Column):
            col.replace(ast.column(rng.choice(others), table=col.table or None))
            out.append(("column", tree.sql(dialect="sqlite")))
    value = an.as_literal(cmp.literals[0])
    other = value.lower() if value != value.lower() else value.title()
    if other != value:
        tree = an.tree.copy()
        lit = find_node(tree, node_path(cmp.literals[0]))
        if lit is not None:
            lit.replace(ast.Literal.string(other))
            out.append(("case", tree.sql(dialect="sqlite")))
    return out

