"""VL12: a literal differs from the one value the column stores only by accents."""

from __future__ import annotations

from sqlmend.rules.base import RuleContext
from sqlmend.rules.literals import AbsentLiteral, LiteralRule, literal_finding, replacement_fix, scope_reads
from sqlmend.rules.values import accent_variants, holders, spellings
from sqlmend.types import Finding


class AccentVariant(LiteralRule):
    """The literal does not occur in the column, but exactly one stored value equals it once accents are folded.

    'Sao Paulo' for 'São Paulo', 'Zurich' for 'Zürich': the comparison matches no row as written;
    the value index finds the one stored value that is the same text without accents (and up to
    letter case), as VL01 finds a case variant. Reported only when the column holds no other
    spelling of the literal, no other column the query reads stores the literal as written (that
    is VL07's reading: the right value in the wrong column) and using the stored value changes the
    query's result. Fix: use the stored value.

    Anti-pattern::

        SELECT Population FROM city WHERE Name = 'Sao Paulo'

    Fixed::

        SELECT Population FROM city WHERE Name = 'São Paulo'
    """

    code = "VL12"
    name = "value.accent_variant"
    error_type = "value_error"
    severity = "strict"
    fixable = True

    replaces = True

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        if not isinstance(absent.value, str) or not absent.value.strip():
            return None
        if spellings(ctx, absent.table, absent.column, absent.value):
            return None  # a case or space spelling: VL01's or VL06's business
        reads = scope_reads(ctx, absent)
        if any(m.table.lower() in reads for m in holders(ctx, absent.value, exclude=(absent.table, absent.column))):
            return None  # stored as written in another column the query reads: VL07's business
        found = accent_variants(ctx, absent.table, absent.column, absent.value)
        if len(found) != 1:
            return None
        stored = found[0]
        return literal_finding(
            self, absent, f"({absent.table}.{absent.column} holds {stored!r}, not {absent.value!r})",
            {"stored": stored, "matches_as_written": 0, "source": "value index (accents)"},
            fixes=[replacement_fix(ctx, absent, stored)])


RULE = AccentVariant()
