"""VL02: a literal of a type the compared column never holds."""

from __future__ import annotations

from sqlmend.rules.base import RuleContext
from sqlmend.rules.literals import AbsentLiteral, LiteralRule, literal_finding
from sqlmend.rules.values import as_number
from sqlmend.types import Finding


def _numeric(value) -> bool:
    return as_number(value) is not None


class TypeNeverHeld(LiteralRule):
    """The column never holds a value of the literal's type, so the comparison matches nothing.

    A number compared with a column whose values are all non-numeric text (a
    flag stored as 'T'/'F' or 'yes'/'no'), or a non-numeric string compared with
    a column of numbers. The stored values are in the evidence; which of them is
    meant is for a later stage to decide.

    Anti-pattern::

        SELECT Name FROM countrylanguage WHERE IsOfficial = 1

    Fixed::

        SELECT Name FROM countrylanguage WHERE IsOfficial = 'T'
    """

    code = "VL02"
    name = "value.type_never_held"
    error_type = "value_error"
    severity = "advisory"

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        sample = ctx.probe.sample(absent.table, absent.column)
        if not sample:
            return None
        if _numeric(absent.value):
            mismatch = all(isinstance(v, str) and not _numeric(v) for v in sample)
        else:
            mismatch = all(_numeric(v) and not isinstance(v, str) for v in sample)
        if not mismatch:
            return None
        return literal_finding(self, absent, f"({absent.table}.{absent.column} holds e.g. {sample[:5]!r})",
                               {"stored_sample": sample[:10]})


RULE = TypeNeverHeld()
