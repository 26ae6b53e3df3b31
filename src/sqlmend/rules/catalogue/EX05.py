"""EX05: the text is a model's raw answer: the SQL was taken out of a markdown fence or a sentence."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql.answer import extract
from sqlmend.types import Finding


class RawAnswer(Rule):
    """The SQL came wrapped in a model's answer: it was taken out of a markdown fence or the sentence around it.

    A model's raw answer (```` ```sql ... ``` ````, "Here is the query: SELECT ...; it counts
    ...") is no SQL the engine can run. The pipeline takes the statement out once, before anything
    parses it (:func:`sqlmend.sql.answer.extract`), drops its trailing ``;``, and every stage sees
    the SQL; this finding, in the trace's ``input`` step, says so. Every statement found is kept,
    so two statements or a write are still refused (EX03). Nothing to fix in the SQL itself.

    Anti-pattern::

        ```sql
        SELECT Name FROM singer WHERE Age > 40;
        ```

    Fixed::

        SELECT Name FROM singer WHERE Age > 40
    """

    code = "EX05"
    name = "execution.raw_answer"
    error_type = "clause_error"
    severity = "advisory"  # nothing to fix: the pipeline has already taken the SQL out

    def check(self, ctx: RuleContext) -> list[Finding]:
        found = extract(ctx.sql, ctx.dialect)
        if found is None:
            return []
        where = "a markdown fence" if found.how == "fence" else "the sentence around it"
        detail = f"(taken out of {where}" + ("; trailing ';' dropped" if found.semicolon else "")
        if found.statements > 1:
            detail += f"; {found.statements} statements"
        return [self.finding(detail=detail + ")", location=found.sql,
                             evidence={"how": found.how, "sql": found.sql, "semicolon": found.semicolon,
                                       "statements": found.statements})]


RULE = RawAnswer()
