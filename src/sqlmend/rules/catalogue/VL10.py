"""VL10: TRUE or FALSE compared with a column that stores its flags as text ('T'/'F', 'yes'/'no')."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.rules.literals import changes_result
from sqlmend.rules.values import stored_flag
from sqlmend.sql import ast
from sqlmend.sql.fixes import node_path
from sqlmend.types import Finding

class BooleanFlag(Rule):
    """TRUE or FALSE is compared with a column that stores its flags as text: the stored form is meant.

    A text column holding only 'T'/'F' (or 'Y'/'N', 'yes'/'no', 'true'/'false', '1'/'0') never
    equals the boolean TRUE (SQLite's 1; PostgreSQL refuses the comparison). The value index gives
    the column's stored spellings; TRUE is bound to the one that means true, FALSE to the other,
    as the value rules bind other literals. Reported when the binding changes the query's result.
    Fix: the stored spelling.

    Anti-pattern::

        SELECT Language FROM countrylanguage WHERE IsOfficial = TRUE AND CountryCode = 'FRA'

    Fixed::

        SELECT Language FROM countrylanguage WHERE IsOfficial = 'T' AND CountryCode = 'FRA'
    """

    code = "VL10"
    name = "value.boolean_flag"
    error_type = "value_error"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        analysis, vi = ctx.analysis, ctx.values
        if analysis.tree is None or vi is None:
            return []
        out = []
        for node in analysis.tree.find_all(ast.EQ, ast.NEQ):
            sides = (node.this, node.expression)
            column = next((s for s in sides if isinstance(s, ast.Column)), None)
            boolean = next((s for s in sides if isinstance(s, ast.Boolean)), None)
            ref = analysis.ref(column) if column is not None else None
            if boolean is None or ref is None or ref.status != "ok" or vi.is_partial(ref.table, ref.column):
                continue
            stored = vi.values(ref.table, ref.column)
            form = stored_flag(stored, bool(boolean.this))
            if form is None:
                continue
            written = boolean.sql(dialect=ctx.dialect)
            out.append(self.finding(
                detail=f"({ref.table}.{ref.column} stores {sorted(stored)!r}: {written} is {form!r})",
                location=node.sql(dialect=ctx.dialect), schema_refs=[ref.table, f"{ref.table}.{ref.column}"],
                evidence={"literal": written, "stored": form, "stored_values": sorted(stored)},
                fixes=[{"op": "replace_literal", "path": node_path(boolean), "expect": written, "value": form}]))
        if out and not changes_result(ctx, [f.fixes[0] for f in out]):
            return []
        return out


RULE = BooleanFlag()
