"""CD01: conditions on one column that no value can satisfy together."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql import ast
from sqlmend.types import Finding


def _conjuncts(node):
    if isinstance(node, ast.And):
        yield from _conjuncts(node.this)
        yield from _conjuncts(node.expression)
    elif isinstance(node, ast.Paren):
        yield from _conjuncts(node.this)
    else:
        yield node


class ContradictoryRange(Rule):
    """Conditions joined by AND on the same column contradict each other, so no row can match.

    Anti-pattern::

        SELECT Citizenship FROM singer WHERE Birth_Year < 1945 AND Birth_Year > 1955

    Fixed::

        SELECT Citizenship FROM singer WHERE Birth_Year < 1945
        INTERSECT SELECT Citizenship FROM singer WHERE Birth_Year > 1955
    """

    code = "CD01"
    name = "condition.contradiction"
    error_type = "condition_error"
    severity = "strict"

    def check(self, ctx: RuleContext) -> list[Finding]:
        analysis = ctx.analysis
        if analysis.tree is None:
            return []
        by_node = {id(c.node): c for c in analysis.comparisons()
                   if isinstance(analysis.as_literal(c.literals[0]), (int, float))}
        out = []
        for clause in analysis.tree.find_all(ast.Where, ast.Having):
            bounds: dict[tuple, list] = {}
            for node in _conjuncts(clause.this):
                cmp = by_node.get(id(node))
                if cmp is None or cmp.op not in ("eq", "gt", "gte", "lt", "lte"):
                    continue
                key = (cmp.column.alias, cmp.column.column or cmp.column.node.name.lower())
                bounds.setdefault(key, []).append((cmp.op, analysis.as_literal(cmp.literals[0]), node))
            for key, items in bounds.items():
                lo = max(((v, op == "gt") for op, v, _ in items if op in ("gt", "gte", "eq")),
                         default=None)
                hi = min(((v, op == "lt") for op, v, _ in items if op in ("lt", "lte", "eq")),
                         default=None)
                if lo is None or hi is None:
                    continue
                empty = lo[0] > hi[0] or (lo[0] == hi[0] and (lo[1] or hi[1]))
                if not empty:
                    continue
                text = " AND ".join(n.sql() for _, _, n in items)
                out.append(self.finding(detail=f"({text})", location=text,
                                        evidence={"column": ".".join(filter(None, key)),
                                                  "lower": lo[0], "upper": hi[0]}))
        return out


RULE = ContradictoryRange()
