"""Literals the data disproves: a compared literal that matches no row of its column.

Shared by the value rules (VL01..VL05), computed once per query and kept in
``ctx.memo``. Whether a text literal occurs is asked of the value index where
that is exact (:func:`sqlmend.rules.values.index_decides`), else of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any, ClassVar

from sqlmend import guard
from sqlmend.errors import SqlError
from sqlmend.rules import engine
from sqlmend.rules.analysis import Comparison
from sqlmend.sql.fixes import node_path, replace_column
from sqlmend.rules.base import Rule, RuleContext
from sqlmend.rules.values import index_decides, spellings
from sqlmend.types import Finding

#: Operators whose literal must occur in the column for the comparison to mean anything.
EQUALITY_OPS = {"eq": "=", "neq": "=", "in": "=", "not_in": "="}


@dataclass
class AbsentLiteral:
    """A literal compared (``=``, ``<>``, ``IN``, ``NOT IN``) with a column that never holds it."""

    comparison: Comparison
    node: Any  # the literal node
    value: Any  # its Python value
    table: str
    column: str

    @property
    def path(self) -> str:
        return node_path(self.node)

    @property
    def location(self) -> str:
        return self.comparison.node.sql()


def absent_literals(ctx: RuleContext) -> list[AbsentLiteral]:
    """Every literal compared for equality with a column where no row holds it.

    Args:
        ctx: the rule context.

    Returns:
        The absent literals, in query order (a column with no values at all is skipped).
    """
    if "absent" in ctx.memo:
        return ctx.memo["absent"]
    out: list[AbsentLiteral] = []
    analysis = ctx.analysis
    if analysis.tree is not None:
        for cmp in analysis.comparisons():
            ref = cmp.column
            if cmp.op not in EQUALITY_OPS or ref.status != "ok":
                continue
            for lit in cmp.literals:
                value = analysis.as_literal(lit)
                if _absent(ctx, ref.table, ref.column, lit, value):
                    out.append(AbsentLiteral(cmp, lit, value, ref.table, ref.column))
    ctx.memo["absent"] = out
    return out


def _absent(ctx: RuleContext, table: str, column: str, lit: Any, value: Any) -> bool:
    """Whether no row of ``table`` holds ``value`` in ``column`` (a column with no values: False)."""
    if index_decides(ctx, table, column, value):
        return not ctx.values.contains(table, column, value)
    if not ctx.probe.non_null_count(table, column):
        return False
    literal_sql = (lit.sql(dialect=ctx.dialect) if not isinstance(value, str)
                   else "'" + value.replace("'", "''") + "'")
    return ctx.probe.matches(table, column, "=", literal_sql) is False


def replacement_fix(ctx: RuleContext, absent: AbsentLiteral, stored: Any) -> dict:
    """The fix (as data) that puts the stored value in place of an absent literal."""
    return {"op": "replace_literal", "path": absent.path,
            "expect": absent.node.sql(dialect=ctx.dialect), "value": stored}


def changes_result(ctx: RuleContext, fixes: list[dict]) -> bool:
    """Whether applying ``fixes`` changes the query's result (else the mismatch is moot).

    Args:
        ctx: the rule context.
        fixes: literal replacements as data.

    Returns:
        True when the rewrite passes the validate-or-retain guard (it runs and its
        result differs from the query's).
    """
    try:
        candidate = engine.apply(ctx.sql, fixes, dialect=ctx.dialect)
    except SqlError:
        return False
    result = ctx.exec_result
    verdict = guard.validate(ctx.db, ctx.sql, candidate, timeout=ctx.timeout,
                             original_result=None if result is None or result.truncated else result,
                             original_error=ctx.exec_error)
    return verdict.accepted


def literal_finding(rule: Any, absent: AbsentLiteral, detail: str, evidence: dict[str, Any],
                    fixes: list[dict] | None = None, also: Iterable[str] = ()) -> Finding:
    """A value rule's finding on one absent literal (located at it, naming its column).

    Args:
        rule: the rule reporting it.
        absent: the literal no row holds.
        detail: specifics appended to the rule's message.
        evidence: what the data showed (the literal itself is added).
        fixes: fixes as data, when proven.
        also: further ``table.column`` references (where the value is stored instead).

    Returns:
        The finding.
    """
    return rule.finding(detail=detail, location=absent.location,
                        schema_refs=[absent.table, f"{absent.table}.{absent.column}", *also],
                        evidence={"literal": absent.value, **evidence}, fixes=fixes)


def unless_moot(ctx: RuleContext, findings: list[Finding]) -> list[Finding]:
    """Keep literal replacements only when, together, they change the query's result.

    When the stored values give the same answer the mismatch is moot here, and
    nothing is reported.
    """
    if findings and not changes_result(ctx, [f.fixes[0] for f in findings]):
        return []
    return findings


def misplaced(ctx: RuleContext, absent: AbsentLiteral) -> bool:
    """A text literal whose column holds no spelling of it (so it may belong to another column)."""
    value = absent.value
    return (isinstance(value, str) and bool(value.strip())
            and not spellings(ctx, absent.table, absent.column, value))


def scope_reads(ctx: RuleContext, absent: AbsentLiteral) -> dict[str, list[Any]]:
    """The schema tables the literal's own SELECT reads: ``{table (lower-cased): [its sources]}``."""
    select = absent.comparison.column.select
    reads: dict[str, list[Any]] = {}
    for source in ctx.analysis.sources(select) if select is not None else []:
        if source.table:
            reads.setdefault(source.table.lower(), []).append(source)
    return reads


def column_in_scope(ctx: RuleContext, ref: Any, source: Any, column: str) -> dict:
    """The fix that makes the column ``ref`` (a :class:`~sqlmend.rules.analysis.ColumnRef`) read ``column``
    of ``source`` (a source of its SELECT), qualified as that source when the query qualified it or
    its SELECT reads more than one source."""
    node = ref.node
    qualify = bool(node.table) or len(ctx.analysis.sources(ref.select)) > 1
    return replace_column(node, column, source.node.alias_or_name if qualify else None, ctx.dialect)


class LiteralRule(Rule):
    """A value rule: each literal that no row holds (:func:`absent_literals`) is judged on its own.

    Subclasses implement :meth:`check_literal`; one whose fixes replace literals sets
    ``replaces = True``, and its findings stand only when, together, they change the result.
    """

    replaces: ClassVar[bool] = False

    def check(self, ctx: RuleContext) -> list[Finding]:
        out = [f for absent in absent_literals(ctx) if (f := self.check_literal(ctx, absent)) is not None]
        return unless_moot(ctx, out) if self.replaces else out

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        """The finding on one absent literal, or ``None``."""
        raise NotImplementedError


class SpellingRule(LiteralRule):
    """A value rule whose literal is one stored spelling away (:func:`sqlmend.rules.values.spellings`).

    Reported when the column holds exactly one other spelling of the literal and
    :meth:`takes` accepts it (VL01: letter case only; VL06: surrounding spaces);
    the fix uses the stored spelling.
    """

    replaces = True
    source: ClassVar[str] = "value index"  # how the stored spelling was found (the finding's evidence)

    def takes(self, literal: str, stored: str) -> bool:
        """Whether this rule reports a literal stored as ``stored``."""
        raise NotImplementedError

    def check_literal(self, ctx: RuleContext, absent: AbsentLiteral) -> Finding | None:
        if not isinstance(absent.value, str):
            return None
        found = spellings(ctx, absent.table, absent.column, absent.value)
        if len(found) != 1 or not self.takes(absent.value, found[0]):
            return None
        stored = found[0]
        return literal_finding(
            self, absent, f"({absent.table}.{absent.column} holds {stored!r}, not {absent.value!r})",
            {"stored": stored, "matches_as_written": 0, "source": self.source},
            fixes=[replacement_fix(ctx, absent, stored)])
