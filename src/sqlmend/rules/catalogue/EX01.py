"""EX01: the query is not valid SQL."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.types import Finding


class SyntaxFailure(Rule):
    """The query does not parse: the engine reports a syntax error.

    Anti-pattern::

        SELECT Name FROM country WHERE Population < ANY (SELECT Population FROM country)

    Fixed::

        SELECT Name FROM country WHERE Population < (SELECT max(Population) FROM country)
    """

    code = "EX01"
    name = "execution.syntax"
    error_type = "clause_error"
    severity = "strict"

    def check(self, ctx: RuleContext) -> list[Finding]:
        kind, _ = ctx.failure
        if kind != "syntax":
            return []
        parse = ctx.analysis.parse_error
        evidence = {"engine": ctx.exec_error}
        if parse is not None:
            evidence.update(parser=str(parse), line=parse.line, col=parse.col)
        return [self.finding(detail=f"({ctx.exec_error})", evidence=evidence)]


RULE = SyntaxFailure()
