"""VL01: a literal differs from the value the column stores only by letter case."""

from __future__ import annotations

from sqlmend.rules.literals import SpellingRule
from sqlmend.rules.values import case_only


class CaseVariant(SpellingRule):
    """The literal does not occur in the column, but exactly one stored value equals it up to letter case.

    The comparison matches no row as written (SQLite's ``=`` tells case apart);
    the data holds one variant that differs only in letter case, so that
    variant is what the query means. Reported only when the column holds no
    other spelling (a variant with other surrounding spaces is VL06's) and
    using the stored value changes the query's result (otherwise the mismatch
    does not affect the answer). Fix: use the stored value.

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

    source = "value index (case)"

    def takes(self, literal: str, stored: str) -> bool:
        return case_only(literal, stored)


RULE = CaseVariant()
