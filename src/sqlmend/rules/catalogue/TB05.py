"""TB05: ``x IN (SELECT y ...)`` compares two columns that share no value."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql import ast
from sqlmend.sql.fixes import replace_column
from sqlmend.types import Finding


class DisjointSubquery(Rule):
    """A column is looked up in a subquery's column that holds none of its values, so the test never holds.

    ``airlines.Airline IN (SELECT Airline FROM flights ...)`` compares airline
    names with the airline ids flights stores: ``IN`` never matches (``NOT IN``
    always does). Reported when the data says which column was meant: exactly
    one other column of the outer table holds every value the subquery's column
    holds (``airlines.uid``). The fix compares that column. (Two columns that
    share no value and no column that holds them all prove no repair, and are
    not reported.)

    Anti-pattern::

        SELECT Airline FROM airlines WHERE Airline IN (SELECT Airline FROM flights GROUP BY Airline HAVING count(*) > 10)

    Fixed::

        SELECT Airline FROM airlines WHERE uid IN (SELECT Airline FROM flights GROUP BY Airline HAVING count(*) > 10)
    """

    code = "TB05"
    name = "table.disjoint_subquery"
    error_type = "table_mismatch"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        analysis = ctx.analysis
        if analysis.tree is None:
            return []
        out = []
        for node in analysis.tree.find_all(ast.In):
            query = node.args.get("query")
            inner = query.this if isinstance(query, ast.Subquery) else query
            if not (isinstance(node.this, ast.Column) and isinstance(inner, ast.Select)
                    and len(inner.expressions) == 1 and isinstance(inner.expressions[0], ast.Column)):
                continue
            outer, looked = analysis.ref(node.this), analysis.ref(inner.expressions[0])
            if not (outer and looked and outer.status == looked.status == "ok"):
                continue
            a, b = (outer.table, outer.column), (looked.table, looked.column)
            if not (ctx.probe.non_null_count(*a) and ctx.probe.non_null_count(*b)):
                continue
            if ctx.probe.joinable(a, b) is not False:
                continue
            table = ctx.schema.table(outer.table)
            meant = [c.name for c in table.columns if c.name.lower() != outer.column.lower()
                     and ctx.probe.included(b, (table.name, c.name))]
            if len(meant) != 1:
                continue  # no column, or several, say what was meant: nothing proven
            out.append(self.finding(
                detail=f"({outer.ref} and {looked.ref} share no value; {table.name}.{meant[0]} holds every "
                       f"{looked.ref} value)",
                location=node.sql(dialect=ctx.dialect), schema_refs=[outer.ref, looked.ref, f"{table.name}.{meant[0]}"],
                evidence={"left": outer.ref, "right": looked.ref, "shared_values": 0,
                          "left_sample": ctx.probe.sample(*a, 5), "right_sample": ctx.probe.sample(*b, 5),
                          "holds_every_value": f"{table.name}.{meant[0]}"},
                fixes=[replace_column(node.this, meant[0], dialect=ctx.dialect)]))
        return out


RULE = DisjointSubquery()
