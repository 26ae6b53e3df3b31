"""TB03: a join condition pairs columns of two tables that a foreign key links on other columns."""

from __future__ import annotations

from typing import Any

from sqlmend.rules.base import RuleContext
from sqlmend.rules.joins import PairRule, describe, key_fix, linking_keys, on_key
from sqlmend.types import Finding


class OffKeyJoin(PairRule):
    """A join condition equates columns that no foreign key pairs, while a foreign key links the two tables.

    The schema declares how the two tables join; the condition pairs other
    columns whose values only happen to meet (two unrelated id columns). Joins
    whose columns share no value at all are TB02's. When exactly one key links
    the tables and one side of the condition is that key's column, the fix
    replaces the other side with the key's partner column.

    Anti-pattern::

        SELECT T2.Model FROM car_makers AS T1 JOIN model_list AS T2 ON T2.Maker = T1.Country

    Fixed::

        SELECT T2.Model FROM car_makers AS T1 JOIN model_list AS T2 ON T2.Maker = T1.Id
    """

    code = "TB03"
    name = "table.off_key_join"
    error_type = "table_mismatch"
    severity = "strict"
    fixable = True

    def check_pair(self, ctx: RuleContext, pair: Any) -> Finding | None:
        left, right = pair.left, pair.right
        keys = linking_keys(ctx, pair)
        if not keys or any(on_key(pair, fk) for fk in keys):
            return None
        if not ctx.probe.joinable((left.table, left.column), (right.table, right.column)):
            return None  # no shared value: TB02's business
        return self.finding(
            detail=f"({left.ref} = {right.ref}; the key is {'; '.join(describe(fk) for fk in keys)})",
            location=pair.node.sql(), schema_refs=[left.ref, right.ref],
            evidence={"left": left.ref, "right": right.ref, "foreign_keys": [describe(fk) for fk in keys]},
            fixes=key_fix(ctx, pair))


RULE = OffKeyJoin()
