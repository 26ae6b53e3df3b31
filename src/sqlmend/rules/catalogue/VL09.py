"""VL09: a LIKE pattern matches no row of its column, but one other column the query reads."""

from __future__ import annotations

from sqlmend.rules.base import Rule, RuleContext
from sqlmend.rules.literals import changes_result, column_in_scope
from sqlmend.rules.values import holds_text
from sqlmend.sql import ast
from sqlmend.types import Finding


class PatternInScope(Rule):
    """The pattern of a LIKE matches no row of the compared column, but rows of exactly one other column in scope.

    ``owners.street LIKE '%Virginia%'`` matches no street, while ``owners.state``
    holds 'Virginia': the query searched the wrong column. Reported when the
    pattern matches no row of its column, matches rows of exactly one other text
    column of the tables that SELECT reads (each read once), and the rewrite
    changes the query's result. Not for ``NOT LIKE``: a pattern that excludes
    nothing may be meant ("names without 'x'" can be all of them). Fix: apply
    the pattern to that column.

    Anti-pattern::

        SELECT first_name FROM Owners WHERE street LIKE '%Virginia%'

    Fixed::

        SELECT first_name FROM Owners WHERE state LIKE '%Virginia%'
    """

    code = "VL09"
    name = "value.pattern_in_scope"
    error_type = "value_error"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        analysis = ctx.analysis
        out = []
        for cmp in analysis.comparisons():
            ref = cmp.column
            if cmp.op != "like" or ref.status != "ok" or len(cmp.literals) != 1 or ref.select is None:
                continue
            if cmp.node.args.get("negate") or isinstance(cmp.node.parent, ast.Not):
                continue  # NOT LIKE that excludes nothing can be meant ("names without 'x'": all of them)
            pattern = analysis.as_literal(cmp.literals[0])
            if not isinstance(pattern, str) or not pattern.strip("%_ "):
                continue
            quoted = ast.Literal.string(pattern).sql(dialect=ctx.dialect)
            if ctx.probe.matches(ref.table, ref.column, "LIKE", quoted) is not False:
                continue
            sources = [s for s in analysis.sources(ref.select) if s.table]
            found = [(s, c.name) for s in sources for c in ctx.schema.table(s.table).columns
                     if (s.table, c.name.lower()) != (ref.table, ref.column.lower())
                     and holds_text(c) and ctx.probe.matches(s.table, c.name, "LIKE", quoted)]
            if len(found) != 1 or sum(s.table == found[0][0].table for s in sources) != 1:
                continue
            source, name = found[0]
            fixes = [column_in_scope(ctx, ref, source, name)]
            if not changes_result(ctx, fixes):
                continue
            out.append(self.finding(
                detail=f"({quoted} matches no {ref.table}.{ref.column}; {source.table}.{name} holds matches)",
                location=cmp.node.sql(dialect=ctx.dialect),
                schema_refs=[ref.table, f"{ref.table}.{ref.column}", f"{source.table}.{name}"],
                evidence={"pattern": pattern, "matches_as_written": 0, "holder": f"{source.table}.{name}",
                          "holder_sample": ctx.probe.sample(source.table, name, 5)},
                fixes=fixes))
        return out


RULE = PatternInScope()
