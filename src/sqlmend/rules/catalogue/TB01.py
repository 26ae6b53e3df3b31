"""TB01: the query names a table the database does not have."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql.resolve import closest as closest_names
from sqlmend.types import Finding


class UnknownTable(Rule):
    """A table in FROM/JOIN does not exist in the database.

    Anti-pattern::

        SELECT count(*) FROM singers

    Fixed::

        SELECT count(*) FROM singer
    """

    code = "TB01"
    name = "table.unknown"
    error_type = "table_mismatch"
    severity = "strict"

    def check(self, ctx: RuleContext) -> list[Finding]:
        kind, name = ctx.failure
        if kind != "unknown_table":
            return []
        tables = [t.name for t in ctx.schema.tables]
        closest = closest_names(name, tables) if name else []
        return [self.finding(detail=f"({name!r}; closest: {', '.join(closest)})", location=name,
                             schema_refs=closest,
                             evidence={"engine": ctx.exec_error, "table": name, "closest": closest})]


RULE = UnknownTable()
