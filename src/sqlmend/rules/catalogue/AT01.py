"""AT01: a column names nothing in the tables it is read from."""

from __future__ import annotations

from sqlmend.sql.fixes import node_path, replace_column
from sqlmend.rules.base import Rule, RuleContext
from sqlmend.sql.resolve import closest as closest_names
from sqlmend.types import Finding


class UnknownColumn(Rule):
    """A column does not exist in the table(s) it is read from; the engine refuses the query.

    When the query qualifies the column with one source but exactly one other
    source of the same SELECT has a column of that name, that source is the
    one meant: the fix requalifies the column. Otherwise, when exactly one column
    of the sources in scope matches the name as closely (case, separators, singular/plural, the
    table's name as a prefix, ``_id``, a bounded edit: :mod:`sqlmend.sql.names`), or is the only
    one storing the literal the column is compared with, the fix renames it (every occurrence).

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
    refused_only = True

    def check(self, ctx: RuleContext) -> list[Finding]:
        kind, name = ctx.failure
        plan = ctx.names
        if kind != "unknown_column" and not plan.columns:
            return []
        analysis = ctx.analysis
        unknown = [c for c in analysis.columns if c.status in ("unknown", "unknown_qualifier")
                   and analysis.as_literal(c.node) is None] if analysis.tree is not None else []
        by_path = {p: r for r in plan.columns for p in r.paths}
        if not unknown and not plan.columns:
            return [self.finding(detail=f"({name})", location=name, evidence={"engine": ctx.exec_error})]
        out, seen = [], set()
        for ref in unknown:
            col = ref.node
            path = node_path(col)
            seen.add(path)
            sources = analysis.sources(ref.select) if ref.select is not None else []
            in_scope = [(s.alias, s.columns[col.name.lower()]) for s in sources if col.name.lower() in s.columns]
            holders = [f"{t.name}.{c.name}" for t in ctx.schema.tables for c in t.columns
                       if c.name.lower() == col.name.lower()]
            names = [c for s in sources for c in s.columns.values()]
            closest = closest_names(col.name, names)
            fixes = []
            if col.table and len(in_scope) == 1 and in_scope[0][0] != col.table.lower():
                alias, real = in_scope[0]
                fixes.append(replace_column(col, real, next(s.node.alias_or_name for s in sources
                                                              if s.alias == alias), ctx.dialect))
            repair = by_path.get(path)
            if not fixes and repair is not None and repair.proven:
                fixes = plan.fixes(repair)
            evidence = {"engine": ctx.exec_error, "column": col.sql(), "in_scope": in_scope,
                        "tables_with_column": holders, "closest_in_scope": closest}
            if repair is not None:
                evidence.update(matches=[m.describe() for m in repair.matches[:5]], stored=repair.stored,
                                reason=repair.reason or None)
            named = f"; {repair.describe()}" if repair is not None else ""
            out.append(self.finding(
                detail=f"({col.sql()}; in scope: {', '.join(a + '.' + c for a, c in in_scope) or 'none'}"
                       f"; tables with it: {', '.join(holders) or 'none'}{named})",
                location=col.sql(), schema_refs=holders, evidence=evidence, fixes=fixes))
        for repair in plan.columns:  # columns unknown once the tables are renamed
            if repair.paths[0] in seen:
                continue
            out.append(self.finding(
                detail=f"({repair.describe()})", location=repair.written,
                schema_refs=[f"{repair.chosen.owner}.{repair.chosen.name}"] if repair.chosen else [],
                evidence={"engine": ctx.exec_error, "column": repair.written,
                          "matches": [m.describe() for m in repair.matches[:5]], "stored": repair.stored,
                          "reason": repair.reason or None},
                fixes=plan.fixes(repair) if repair.proven else []))
        return out


RULE = UnknownColumn()
