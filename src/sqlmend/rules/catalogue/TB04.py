"""TB04: a join pairs key columns of two tables that the schema links only through other tables."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.rules.joins import cross_table_pairs, is_key_column, key_path, key_target, linking_keys
from sqlmend.types import Finding


class SkippedLink(Rule):
    """A join condition equates key columns of two tables that no foreign key links directly, while a chain of keys does.

    Both columns are keys (primary or foreign) that stand for different things
    (they reference different columns), and the schema joins the two tables
    only through others (``car_makers`` -> ``model_list`` -> ``car_names``):
    the condition pairs unrelated ids whose values merely overlap. The chain
    of tables is in the evidence; the missing tables are for a later stage.

    Anti-pattern::

        SELECT T1.Maker FROM car_makers AS T1 JOIN car_names AS T2 ON T1.Id = T2.MakeId

    Fixed::

        SELECT T1.Maker FROM car_makers AS T1 JOIN model_list AS T3 ON T1.Id = T3.Maker
        JOIN car_names AS T2 ON T3.Model = T2.Model
    """

    code = "TB04"
    name = "table.skipped_link"
    error_type = "table_mismatch"
    severity = "advisory"

    def check(self, ctx: RuleContext) -> list[Finding]:
        out = []
        for pair in cross_table_pairs(ctx):
            left, right = pair.left, pair.right
            if linking_keys(ctx, pair):
                continue  # a direct key: TB02 / TB03 judge the condition
            if not (is_key_column(ctx, left.table, left.column)
                    and is_key_column(ctx, right.table, right.column)):
                continue
            if key_target(ctx, left.table, left.column) == key_target(ctx, right.table, right.column):
                continue  # both reference the same column: a legitimate shortcut
            path = key_path(ctx, left.table, right.table)
            if len(path) < 3:
                continue
            out.append(self.finding(
                detail=f"({left.ref} = {right.ref}; the keys link {' -> '.join(path)})",
                location=pair.node.sql(), schema_refs=[left.ref, right.ref, *path[1:-1]],
                evidence={"left": left.ref, "right": right.ref, "key_path": path}))
        return out


RULE = SkippedLink()
