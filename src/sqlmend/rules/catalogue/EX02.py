"""EX02: the engine rejects the query for a reason no more specific rule covers."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.types import Finding

#: Failure kinds that have their own rule (EX01, AT01, AT02, TB01, FN01, EX03).
_COVERED = {"", "syntax", "unknown_column", "ambiguous_column", "unknown_table", "aggregate_misuse",
            "refused"}


class EngineFailure(Rule):
    """The query fails to execute on the database (timeouts and errors other rules do not explain).

    Anti-pattern::

        SELECT substr(Name) FROM singer

    Fixed::

        SELECT substr(Name, 1, 3) FROM singer
    """

    code = "EX02"
    name = "execution.failure"
    error_type = "clause_error"
    severity = "strict"

    def check(self, ctx: RuleContext) -> list[Finding]:
        kind, name = ctx.failure
        if kind in _COVERED:
            return []
        return [self.finding(detail=f"({ctx.exec_error})",
                             evidence={"engine": ctx.exec_error, "kind": kind, "name": name})]


RULE = EngineFailure()
