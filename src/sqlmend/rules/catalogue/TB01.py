"""TB01: the query names a table the database does not have."""

from __future__ import annotations

from rapidfuzz import process

from sqlmend.rules.base import Rule, RuleContext
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
        closest = [m[0] for m in process.extract(name, tables, limit=3)] if name and tables else []
        return [self.finding(detail=f"({name!r}; closest: {', '.join(closest)})", location=name,
                             schema_refs=closest,
                             evidence={"engine": ctx.exec_error, "table": name, "closest": closest})]


RULE = UnknownTable()
