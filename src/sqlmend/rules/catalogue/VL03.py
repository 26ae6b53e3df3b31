"""VL03: the literal is stored in another column, not in the one compared."""

from __future__ import annotations

from sqlmend.rules.base import RuleContext
from sqlmend.rules.literals import AbsentLiteral, LiteralRule, literal_finding
from sqlmend.rules.values import holders, spellings
from sqlmend.types import Finding


class StoredElsewhere(LiteralRule):
    """The literal never occurs in the compared column but is stored in another column of the database.

    Usually the query filters the wrong column, or the column that holds the
    value is in a table the query did not join (a code column compared with a
    name). The columns that hold the value are in the evidence.

    Anti-pattern::

        SELECT FlightNo FROM flights WHERE Airline = 'United Airlines'

    Fixed::

        SELECT T1.FlightNo FROM flights AS T1 JOIN airlines AS T2 ON T2.uid = T1.Airline
        WHERE T2.Airline = 'United Airlines'
    """

    code = "VL03"
    name = "value.stored_elsewhere"
    error_type = "value_error"
    severity = "advisory"

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        if not isinstance(absent.value, str) or not absent.value.strip():
            return None
        if spellings(ctx, absent.table, absent.column, absent.value):
            return None  # a variant in the column itself: VL01's or VL06's business
        found = holders(ctx, absent.value, exclude=(absent.table, absent.column))
        if not found:
            return None
        where = ", ".join(f"{m.table}.{m.column}" for m in found)
        return literal_finding(
            self, absent, f"({absent.value!r} is stored in {where})",
            {"holders": [{"table": m.table, "column": m.column, "stored": m.value} for m in found]},
            also=[f"{m.table}.{m.column}" for m in found])


RULE = StoredElsewhere()
