"""CD02: a comparison with NULL (``= NULL``, ``<> NULL``), which is never true."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql import ast
from sqlmend.sql.fixes import node_path
from sqlmend.types import Finding


class NullEquality(Rule):
    """A value is compared with NULL by ``=`` or ``<>``, which is never true: the test is IS [NOT] NULL.

    In SQL, ``x = NULL`` and ``x <> NULL`` are NULL for every row, so the condition keeps no row
    (and ``NOT (x = NULL)`` none either). The query runs and answers nothing; what it means is
    ``x IS NULL`` / ``x IS NOT NULL``. Reported whether or not the query runs. Fix: the IS test.

    Anti-pattern::

        SELECT count(*) FROM country WHERE IndepYear != NULL

    Fixed::

        SELECT COUNT(*) FROM country WHERE NOT IndepYear IS NULL
    """

    code = "CD02"
    name = "condition.null_equality"
    error_type = "condition_error"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        tree = ctx.analysis.tree
        if tree is None:
            return []
        out = []
        for node in tree.find_all(ast.EQ, ast.NEQ):
            nulls = [isinstance(side, ast.Null) for side in (node.this, node.expression)]
            if sum(nulls) != 1:
                continue
            test = "IS NOT NULL" if isinstance(node, ast.NEQ) else "IS NULL"
            written = node.sql(dialect=ctx.dialect)
            out.append(self.finding(
                detail=f"({written}: use {test})", location=written,
                evidence={"comparison": written, "means": test},
                fixes=[{"op": "is_null", "path": node_path(node), "expect": written}]))
        return out


RULE = NullEquality()
