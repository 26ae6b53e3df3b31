"""VL01: a literal differs from the value the column stores only by case or surrounding spaces."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.rules.literals import absent_literals, literal_finding, replacement_fix, unless_moot
from sqlmend.rules.values import spellings
from sqlmend.types import Finding


class CaseVariant(Rule):
    """The literal does not occur in the column, but exactly one stored value equals it up to case and spaces.

    The comparison matches no row as written; the data holds one variant that
    differs only in letter case or leading/trailing spaces, so that variant is
    what the query means. Reported only when using the stored values changes the
    query's result (otherwise the mismatch does not affect the answer).
    Fix: use the stored value.

    Anti-pattern::

        SELECT Country FROM airlines WHERE Airline = 'Jetblue Airways'

    Fixed::

        SELECT Country FROM airlines WHERE Airline = 'JetBlue Airways'
    """

    code = "VL01"
    name = "value.case_variant"
    error_type = "value_error"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        out = []
        for absent in absent_literals(ctx):
            if not isinstance(absent.value, str):
                continue
            variants = spellings(ctx, absent.table, absent.column, absent.value)
            if len(variants) != 1:
                continue
            stored = variants[0]
            out.append(literal_finding(
                self, absent, f"({absent.table}.{absent.column} holds {stored!r}, not {absent.value!r})",
                {"stored": stored, "matches_as_written": 0, "source": "value index (trim)"},
                fixes=[replacement_fix(ctx, absent, stored)]))
        return unless_moot(ctx, out)


RULE = CaseVariant()
