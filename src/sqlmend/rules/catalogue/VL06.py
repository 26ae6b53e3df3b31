"""VL06: a literal differs from the value the column stores by surrounding spaces."""

from __future__ import annotations

from sqlmend.rules.literals import SpellingRule
from sqlmend.rules.values import case_only


class SpaceVariant(SpellingRule):
    """The literal does not occur in the column, but exactly one stored value equals it up to surrounding spaces.

    The comparison matches no row as written; the data holds one variant with
    leading or trailing spaces (and perhaps other letter case), so that variant
    is what the query means. Reported only when using the stored value changes
    the query's result. Advisory: a dataset's own reference queries often
    compare the trimmed value too (Spider's flight_2 stores ``'Aberdeen '`` and
    ``' APG'``, its gold SQL compares ``'Aberdeen'``), so the fix is a hint for
    later stages, not applied on its own. Fix: use the stored value.

    Anti-pattern::

        SELECT count(*) FROM airports WHERE City = 'Aberdeen'

    Fixed::

        SELECT count(*) FROM airports WHERE City = 'Aberdeen '
    """

    code = "VL06"
    name = "value.space_variant"
    error_type = "value_error"
    severity = "advisory"
    fixable = True

    source = "value index (trim)"

    def takes(self, literal: str, stored: str) -> bool:
        return not case_only(literal, stored)


RULE = SpaceVariant()
