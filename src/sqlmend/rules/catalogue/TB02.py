"""TB02: a join condition pairs two columns that share no value."""

from __future__ import annotations

from typing import Any

from sqlmend.rules.base import RuleContext
from sqlmend.rules.joins import PairRule, describe, key_fix, linking_keys
from sqlmend.types import Finding


class DisjointJoin(PairRule):
    """A join condition equates two columns that have no value in common, so the join is empty.

    When one foreign key links the two tables and one side of the condition is
    a column of that key, the key says which column the other side must be:
    the fix replaces it with the key's partner column.

    Anti-pattern::

        SELECT countries.CountryName FROM countries
        JOIN car_makers ON countries.CountryName = car_makers.Country

    Fixed::

        SELECT countries.CountryName FROM countries
        JOIN car_makers ON countries.CountryId = car_makers.Country
    """

    code = "TB02"
    name = "table.disjoint_join"
    error_type = "table_mismatch"
    severity = "strict"
    fixable = True

    def check_pair(self, ctx: RuleContext, pair: Any) -> Finding | None:
        left, right = pair.left, pair.right
        a, b = (left.table, left.column), (right.table, right.column)
        if not (ctx.probe.non_null_count(*a) and ctx.probe.non_null_count(*b)):
            return None
        if ctx.probe.joinable(a, b) is not False:
            return None
        return self.finding(
            detail=f"({left.ref} and {right.ref} share no value)",
            location=pair.node.sql(), schema_refs=[left.ref, right.ref],
            evidence={"left": left.ref, "right": right.ref, "shared_values": 0,
                      "left_sample": ctx.probe.sample(*a, 5), "right_sample": ctx.probe.sample(*b, 5),
                      "foreign_keys": [describe(fk) for fk in linking_keys(ctx, pair)]},
            fixes=key_fix(ctx, pair))


RULE = DisjointJoin()
