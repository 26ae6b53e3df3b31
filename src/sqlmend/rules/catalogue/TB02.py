"""TB02: a join condition pairs two columns that share no value."""

from __future__ import annotations

from sqlmend.rules.analysis import node_path
from sqlmend.rules.base import Rule, RuleContext
from sqlmend.types import Finding


class DisjointJoin(Rule):
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

    def check(self, ctx: RuleContext) -> list[Finding]:
        if ctx.exec_error is not None:
            return []
        out = []
        for pair in ctx.analysis.column_pairs():
            left, right = pair.left, pair.right
            if left.table == right.table:
                continue
            a, b = (left.table, left.column), (right.table, right.column)
            if not (ctx.probe.non_null_count(*a) and ctx.probe.non_null_count(*b)):
                continue
            if ctx.probe.joinable(a, b) is not False:
                continue
            fixes = self._fk_fix(ctx, pair)
            out.append(self.finding(
                detail=f"({left.ref} and {right.ref} share no value)",
                location=pair.node.sql(), schema_refs=[left.ref, right.ref],
                evidence={"left": left.ref, "right": right.ref, "shared_values": 0,
                          "left_sample": ctx.probe.sample(*a, 5), "right_sample": ctx.probe.sample(*b, 5),
                          "foreign_keys": [f"{fk.table}.{','.join(fk.columns)} -> {fk.ref_table}."
                                           f"{','.join(fk.ref_columns)}" for fk in self._fks(ctx, pair)]},
                fixes=fixes))
        return out

    @staticmethod
    def _fks(ctx: RuleContext, pair) -> list:
        tables = {pair.left.table.lower(), pair.right.table.lower()}
        return [fk for fk in ctx.schema.foreign_keys if len(fk.columns) == 1
                and {fk.table.lower(), fk.ref_table.lower()} == tables]

    def _fk_fix(self, ctx: RuleContext, pair) -> list[dict]:
        fks = self._fks(ctx, pair)
        if len(fks) != 1:
            return []
        fk = fks[0]
        ends = {fk.table.lower(): fk.columns[0], fk.ref_table.lower(): fk.ref_columns[0]}
        for keep, change in ((pair.left, pair.right), (pair.right, pair.left)):
            if ends.get(keep.table.lower(), "").lower() != keep.column.lower():
                continue
            partner = ends.get(change.table.lower())
            if not partner or partner.lower() == change.column.lower():
                continue
            table = ctx.schema.table(change.table)
            column = table.column(partner) if table else None
            if column is None or not ctx.probe.joinable((keep.table, keep.column),
                                                        (change.table, column.name)):
                continue
            return [{"op": "replace_column", "path": node_path(change.node),
                     "expect": change.node.sql(dialect=ctx.dialect), "column": column.name,
                     "table": change.node.table or None}]
        return []


RULE = DisjointJoin()
