"""AT01: a column names nothing in the tables it is read from."""

from __future__ import annotations

from sqlmend.sql.fixes import replace_column
from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql.resolve import closest as closest_names
from sqlmend.types import Finding


class UnknownColumn(Rule):
    """A column does not exist in the table(s) it is read from; the engine refuses the query.

    When the query qualifies the column with one source but exactly one other
    source of the same SELECT has a column of that name, that source is the
    one meant: the fix requalifies the column.

    Anti-pattern::

        SELECT T1.Make, T1.Year FROM cars_data AS T1 JOIN car_names AS T2 ON T1.Id = T2.MakeId

    Fixed::

        SELECT T2.Make, T1.Year FROM cars_data AS T1 JOIN car_names AS T2 ON T1.Id = T2.MakeId
    """

    code = "AT01"
    name = "attribute.unknown_column"
    error_type = "attribute_mismatch"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        kind, name = ctx.failure
        if kind != "unknown_column":
            return []
        analysis = ctx.analysis
        unknown = [c for c in analysis.columns if c.status in ("unknown", "unknown_qualifier")
                   and analysis.as_literal(c.node) is None] if analysis.tree is not None else []
        if not unknown:
            return [self.finding(detail=f"({name})", location=name, evidence={"engine": ctx.exec_error})]
        out = []
        for ref in unknown:
            col = ref.node.name
            sources = analysis.sources(ref.select) if ref.select is not None else []
            in_scope = [(s.alias, s.columns[col.lower()]) for s in sources if col.lower() in s.columns]
            holders = [f"{t.name}.{c.name}" for t in ctx.schema.tables for c in t.columns
                       if c.name.lower() == col.lower()]
            names = [c for s in sources for c in s.columns.values()]
            closest = closest_names(col, names)
            fixes = []
            if ref.node.table and len(in_scope) == 1 and in_scope[0][0] != ref.node.table.lower():
                alias, real = in_scope[0]
                fixes.append(replace_column(ref.node, real, next(s.node.alias_or_name for s in sources
                                                                   if s.alias == alias), ctx.dialect))
            out.append(self.finding(
                detail=f"({ref.node.sql()}; in scope: {', '.join(a + '.' + c for a, c in in_scope) or 'none'}"
                       f"; tables with it: {', '.join(holders) or 'none'})",
                location=ref.node.sql(), schema_refs=holders,
                evidence={"engine": ctx.exec_error, "column": ref.node.sql(), "in_scope": in_scope,
                          "tables_with_column": holders, "closest_in_scope": closest},
                fixes=fixes))
        return out


RULE = UnknownColumn()
