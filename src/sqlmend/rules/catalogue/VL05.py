"""VL05: a literal is another form of the one value the column stores (plural, abbreviation...)."""

from __future__ import annotations

from sqlmend.rules.base import RuleContext
from sqlmend.rules.literals import AbsentLiteral, LiteralRule, literal_finding, replacement_fix
from sqlmend.rules.values import spellings, variants
from sqlmend.types import Finding


class FormVariant(LiteralRule):
    """The literal does not occur in the column, but exactly one stored value is another form of it.

    The value index finds the stored value the literal stands for: its singular
    or plural ('Bachelors' / 'Bachelor'), an abbreviation or initials in either
    direction ('female' / 'F', 'USA' / 'United States of America'), the start of
    a longer stored value up to a word boundary ('2010-05-01' / '2010-05-01
    00:00:00'), or the same number written differently ('1,000' / '1000').
    Reported only when exactly one stored value qualifies and using it changes
    the query's result. Fix: use the stored value.

    Anti-pattern::

        SELECT count(*) FROM Student WHERE Sex = 'female'

    Fixed::

        SELECT count(*) FROM Student WHERE Sex = 'F'
    """

    code = "VL05"
    name = "value.form_variant"
    error_type = "value_error"
    severity = "strict"
    fixable = True

    replaces = True

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        if spellings(ctx, absent.table, absent.column, absent.value):
            return None  # a case/space spelling: VL01's or VL06's business
        found = variants(ctx, absent.table, absent.column, absent.value)
        if len(found) != 1:
            return None
        stored, kind = found[0]
        return literal_finding(
            self, absent, f"({absent.table}.{absent.column} holds {stored!r}, not {absent.value!r}: {kind})",
            {"stored": stored, "kind": kind, "matches_as_written": 0, "source": "value index"},
            fixes=[replacement_fix(ctx, absent, stored)])


RULE = FormVariant()
