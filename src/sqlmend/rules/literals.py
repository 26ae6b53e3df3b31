"""Literals the data disproves: a compared literal that matches no row of its column.

Shared by the value rules (VL01..VL04), computed once per query and kept in
``ctx.memo``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlmend.rules.analysis import Comparison, node_path
from sqlmend.rules.base import RuleContext

#: Operators whose literal must occur in the column for the comparison to mean anything.
EQUALITY_OPS = {"eq": "=", "neq": "=", "in": "=", "not_in": "="}


@dataclass
class AbsentLiteral:
    """A literal compared (``=``, ``<>``, ``IN``, ``NOT IN``) with a column that never holds it."""

    comparison: Comparison
    node: Any  # the literal node
    value: Any  # its Python value
    table: str
    column: str

    @property
    def path(self) -> str:
        return node_path(self.node)

    @property
    def location(self) -> str:
        return self.comparison.node.sql()


def absent_literals(ctx: RuleContext) -> list[AbsentLiteral]:
    """Every literal compared for equality with a column where no row holds it.

    Args:
        ctx: the rule context.

    Returns:
        The absent literals, in query order (a column with no values at all is skipped).
    """
    if "absent" in ctx.memo:
        return ctx.memo["absent"]
    out: list[AbsentLiteral] = []
    analysis = ctx.analysis
    if analysis.tree is not None:
        for cmp in analysis.comparisons():
            ref = cmp.column
            if cmp.op not in EQUALITY_OPS or ref.status != "ok":
                continue
            if not ctx.probe.non_null_count(ref.table, ref.column):
                continue
            for lit in cmp.literals:
                value = analysis.as_literal(lit)
                literal_sql = (lit.sql(dialect=ctx.dialect) if not isinstance(value, str)
                               else "'" + value.replace("'", "''") + "'")
                if ctx.probe.matches(ref.table, ref.column, "=", literal_sql) is False:
                    out.append(AbsentLiteral(cmp, lit, value, ref.table, ref.column))
    ctx.memo["absent"] = out
    return out
