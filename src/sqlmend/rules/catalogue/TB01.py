"""TB01: the query names a table the database does not have."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql.resolve import closest as closest_names
from sqlmend.types import Finding


class UnknownTable(Rule):
    """A table in FROM/JOIN does not exist in the database.

    When exactly one table of the schema matches the name as closely (case, another schema,
    separators, singular/plural, a dropped word, a bounded edit: :mod:`sqlmend.sql.names`), the fix
    renames every occurrence of it, aliases kept (``employees`` -> ``hr.employees``: read from the
    schema that holds it); a keyword written as a table name (``FROM order``, the engine's syntax
    error) is matched the same way.

    Anti-pattern::

        SELECT count(*) FROM singers

    Fixed::

        SELECT count(*) FROM singer
    """

    code = "TB01"
    name = "table.unknown"
    error_type = "table_mismatch"
    severity = "strict"
    fixable = True
    refused_only = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        kind, name = ctx.failure
        tables = [t.name for t in ctx.schema.tables]
        plan = ctx.names
        if not plan.tables:
            if kind != "unknown_table":
                return []
            closest = closest_names(name, tables) if name else []
            return [self.finding(detail=f"({name!r}; closest: {', '.join(closest)})", location=name,
                                 schema_refs=closest,
                                 evidence={"engine": ctx.exec_error, "table": name, "closest": closest})]
        out = []
        schemas = {"schemas": [c.describe() for c in plan.schema_choices[:5]], "tied": plan.schema_tied} \
            if plan.by_schema else {}
        for repair in plan.tables:
            closest = [repair.chosen.name] if repair.chosen else closest_names(repair.written, tables)
            keyword = "; a reserved word" if repair.keyword else ""
            tie = "; the schemas that hold it tie on the query's evidence: kept" \
                if plan.by_schema and plan.schema_tied and not repair.proven else ""
            out.append(self.finding(
                detail=f"({repair.describe()}{keyword}{tie})", location=repair.written, schema_refs=closest,
                evidence={"engine": ctx.exec_error, "table": repair.written, "closest": closest,
                          "matches": [m.describe() for m in repair.matches[:5]],
                          "reason": repair.reason or None, "keyword": repair.keyword, **schemas},
                fixes=plan.fixes(repair) if repair.proven else []))
        return out


RULE = UnknownTable()
