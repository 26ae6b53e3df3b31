"""VL04: the literal occurs nowhere in the database."""

from __future__ import annotations

from sqlmend.rules.base import RuleContext
from sqlmend.rules.literals import AbsentLiteral, LiteralRule, literal_finding
from sqlmend.rules.values import accent_variants, as_number, holders, spellings, variants
from sqlmend.types import Finding


class StoredNowhere(LiteralRule):
    """The compared text literal occurs in no text column of the database, not even in another form.

    The comparison matches no row. That may be what the question wants (an
    empty answer), so this is a hint: the value may be misspelled, abbreviated
    or paraphrased ('engineering' for 'Engineering Department').

    Anti-pattern::

        SELECT count(*) FROM Departments WHERE department_name = 'engineering'

    Fixed::

        SELECT count(*) FROM Departments WHERE department_name LIKE '%engineer%'
    """

    code = "VL04"
    name = "value.stored_nowhere"
    error_type = "value_error"
    severity = "advisory"

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        if not isinstance(absent.value, str) or not absent.value.strip():
            return None
        if as_number(absent.value) is not None:
            return None  # a number written as a string: VL02's business
        if spellings(ctx, absent.table, absent.column, absent.value) or variants(
                ctx, absent.table, absent.column, absent.value) or accent_variants(
                ctx, absent.table, absent.column, absent.value):
            return None  # VL01's / VL05's / VL06's / VL12's business
        if holders(ctx, absent.value, exclude=(absent.table, absent.column), limit=1):
            return None
        return literal_finding(self, absent, f"({absent.value!r})",
                               {"stored_sample": ctx.probe.sample(absent.table, absent.column, 10)})


RULE = StoredNowhere()
