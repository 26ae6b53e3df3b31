"""FN01: an aggregate is used where SQL does not allow one."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql import ast
from sqlmend.types import Finding


class AggregateMisuse(Rule):
    """An aggregate is nested in another aggregate or used in WHERE; the engine refuses it.

    Anti-pattern::

        SELECT Language FROM TV_Channel GROUP BY Language
        HAVING count(*) = (SELECT min(count(*)) FROM TV_Channel GROUP BY Language)

    Fixed::

        SELECT Language FROM TV_Channel GROUP BY Language ORDER BY count(*) ASC LIMIT 1
    """

    code = "FN01"
    name = "function.aggregate_misuse"
    error_type = "function_error"
    severity = "strict"

    def check(self, ctx: RuleContext) -> list[Finding]:
        if ctx.failure[0] != "aggregate_misuse":
            return []
        nested = []
        if ctx.analysis.tree is not None:
            for agg in ctx.analysis.tree.find_all(ast.AggFunc):
                outer = agg.find_ancestor(ast.AggFunc, ast.Select)
                if isinstance(outer, ast.AggFunc):
                    nested.append(outer.sql(dialect=ctx.dialect))
                elif agg.find_ancestor(ast.Where, ast.Select) is not None and isinstance(
                        agg.find_ancestor(ast.Where, ast.Select), ast.Where):
                    nested.append(agg.sql(dialect=ctx.dialect))
        return [self.finding(detail=f"({ctx.exec_error})", location="; ".join(nested),
                             evidence={"engine": ctx.exec_error, "misused": nested})]


RULE = AggregateMisuse()
