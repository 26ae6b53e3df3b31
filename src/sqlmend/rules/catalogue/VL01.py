"""VL01: a literal differs from the value the column stores only by case or surrounding spaces."""

from __future__ import annotations

from sqlmend.rules.base import RuleContext
from sqlmend.rules.literals import AbsentLiteral, LiteralRule, literal_finding, replacement_fix
from sqlmend.rules.values import spellings
from sqlmend.types import Finding


class CaseVariant(LiteralRule):
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

    replaces = True

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        if not isinstance(absent.value, str):
            return None
        variants = spellings(ctx, absent.table, absent.column, absent.value)
        if len(variants) != 1:
            return None
        stored = variants[0]
        return literal_finding(
            self, absent, f"({absent.table}.{absent.column} holds {stored!r}, not {absent.value!r})",
            {"stored": stored, "matches_as_written": 0, "source": "value index (trim)"},
            fixes=[replacement_fix(ctx, absent, stored)])


RULE = CaseVariant()
