"""AT02: an unqualified column exists in more than one joined table."""

from __future__ import annotations

from sqlmend.sql.fixes import node_path
from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql import ast
from sqlmend.types import Finding


def _equated(select, name: str, aliases: set[str]) -> bool:
    """Whether inner-join conditions equate ``alias.name`` across all ``aliases``."""
    pairs = set()
    for join in select.args.get("joins") or []:
        if join.side or (join.kind or "").upper() not in ("", "INNER"):
            return False
        on = join.args.get("on")
        for eq in on.find_all(ast.EQ) if on is not None else []:
            a, b = eq.this, eq.expression
            if isinstance(a, ast.Column) and isinstance(b, ast.Column) \
                    and a.name.lower() == b.name.lower() == name:
                pairs.add(frozenset({a.table.lower(), b.table.lower()}))
    # connected components over the equalities must hold every alias
    group = {next(iter(aliases))}
    changed = True
    while changed:
        changed = False
        for p in pairs:
            if p & group and not p <= group:
                group |= p
                changed = True
    return aliases <= group


class AmbiguousColumn(Rule):
    """An unqualified column is owned by several tables of the SELECT; the engine refuses the query.

    When inner-join conditions equate the column across all those tables, every
    choice returns the same values: the fix qualifies it with the first one.

    Anti-pattern::

        SELECT document_id FROM documents JOIN paragraphs
        ON documents.document_id = paragraphs.document_id

    Fixed::

        SELECT documents.document_id FROM documents JOIN paragraphs
        ON documents.document_id = paragraphs.document_id
    """

    code = "AT02"
    name = "attribute.ambiguous_column"
    error_type = "attribute_mismatch"
    severity = "strict"
    fixable = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        kind, name = ctx.failure
        if kind != "ambiguous_column":
            return []
        analysis = ctx.analysis
        refs = [c for c in analysis.columns if c.status == "ambiguous"] if analysis.tree else []
        if not refs:
            return [self.finding(detail=f"({name})", location=name, evidence={"engine": ctx.exec_error})]
        out = []
        for ref in refs:
            owners = [s for s in ref.candidates if s.table]
            aliases = {s.alias for s in owners}
            fixes = []
            if len(owners) == len(ref.candidates) and _equated(ref.select, ref.node.name.lower(), aliases):
                fixes.append({"op": "qualify_column", "path": node_path(ref.node),
                              "expect": ref.node.sql(dialect=ctx.dialect),
                              "table": owners[0].node.alias_or_name})
            out.append(self.finding(
                detail=f"({ref.node.name} is in {', '.join(s.table or s.alias for s in ref.candidates)})",
                location=ref.node.sql(),
                schema_refs=[f"{s.table}.{s.columns.get(ref.node.name.lower(), ref.node.name)}"
                             for s in owners],
                evidence={"engine": ctx.exec_error,
                          "owners": [s.table or s.alias for s in ref.candidates],
                          "equated_by_join": bool(fixes)},
                fixes=fixes))
        return out


RULE = AmbiguousColumn()
