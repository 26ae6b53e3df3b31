"""EX03: the text is refused because it is not one read-only query."""

from __future__ import annotations

from sqlmend import taxonomy
from sqlmend.rules.base import Rule, RuleContext
from sqlmend.types import Finding


class Refused(Rule):
    """refused: not one read-only query

    A write, PRAGMA, ATTACH, several statements, or a call of a function that is
    not on the dialect's list of functions that read and compute (one that reads
    files, takes locks, resets statistics or changes server state: "function f()
    is not on the read-only list of <dialect>"). sqlmend corrects queries; it
    never runs anything else. The text was stopped
    before it reached the engine, so it is reported as a refusal, not as a
    mistake of the upstream system, and no stage rewrites it.

    Anti-pattern::

        DELETE FROM singer WHERE Age > 40

    Fixed::

        SELECT Name FROM singer WHERE Age > 40
    """

    code = "EX03"
    name = "execution.refused"
    error_type = taxonomy.REFUSED
    severity = "advisory"  # nothing to fix: the pipeline stops at a refusal

    def check(self, ctx: RuleContext) -> list[Finding]:
        reason = ctx.refused
        if reason is None:
            return []
        return [self.finding(detail=f"({reason})", evidence={"refused": reason})]


RULE = Refused()
