"""TB01: the query names a table the database does not have."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql.fixes import node_path
from sqlmend.sql.resolve import closest as closest_names
from sqlmend.sql.resolve import tables_elsewhere
from sqlmend.types import Finding


class UnknownTable(Rule):
    """A table in FROM/JOIN does not exist in the database.

    When the name is that of exactly one relation of another schema, the one the search path does
    not reach, the fix reads it from there (``employees`` -> ``hr.employees``).

    Anti-pattern::

        SELECT count(*) FROM singers

    Fixed::

        SELECT count(*) FROM singer
    """

    code = "TB01"
    name = "table.unknown"
    error_type = "table_mismatch"
    severity = "strict"
    fixable = False  # its one fix needs a database of several schemas, which no Spider fixture is

    def check(self, ctx: RuleContext) -> list[Finding]:
        kind, name = ctx.failure
        if kind != "unknown_table":
            return []
        tables = [t.name for t in ctx.schema.tables]
        closest = closest_names(name, tables) if name else []
        evidence = {"engine": ctx.exec_error, "table": name, "closest": closest}
        fixes = self._elsewhere(ctx, evidence)
        return [self.finding(detail=f"({name!r}; closest: {', '.join(closest)})", location=name,
                             schema_refs=closest, evidence=evidence, fixes=fixes)]

    @staticmethod
    def _elsewhere(ctx: RuleContext, evidence: dict) -> list[dict]:
        """The fix naming each unknown table by the one relation of that name in another schema."""
        tree = ctx.analysis.tree
        if tree is None:
            return []
        fixes = []
        for node, found in tables_elsewhere(tree, ctx.schema):
            evidence.setdefault("elsewhere", {})[node.sql(dialect=ctx.dialect)] = [t.name for t in found]
            if len(found) == 1:
                fixes.append({"op": "replace_table", "path": node_path(node), "expect": node.sql(dialect=ctx.dialect),
                              "schema": found[0].schema, "name": found[0].relname})
        return fixes


RULE = UnknownTable()
