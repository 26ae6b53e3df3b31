"""EX03: the text is refused because it is not one read-only query."""

from __future__ import annotations

from sqlmend import taxonomy
from sqlmend.rules.base import Rule, RuleContext
from sqlmend.types import Finding


class Refused(Rule):
    """refused: not one read-only query

    A write, PRAGMA, ATTACH, several statements or a forbidden function (one
    that reads files or changes server state). sqlmend corrects queries; it
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
