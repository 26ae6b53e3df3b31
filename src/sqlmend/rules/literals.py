"""Literals the data disproves: a compared literal that matches no row of its column.

Shared by the value rules (VL01..VL05), computed once per query and kept in
``ctx.memo``. Whether a text literal occurs is asked of the value index where
that is exact (:func:`sqlmend.rules.values.index_decides`), else of the engine.

A literal written many times (an ``IN`` list that repeats a value, the same value in two places) is
checked once per column, and each distinct check draws :data:`LITERAL_COST` on the item's budget
(``RuleContext.spend``), so a query of a hundred thousand literals ends within the item's budget
with that reason instead of running on.
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
#: The item budget's charge for one distinct literal checked against its column, with what the
#: value rules then do with it (estimated seconds; ``sqlmend bench pathological``'s IN lists).
LITERAL_COST = 0.0002
#: A finding's location longer than this (a comparison with a long IN list) names the literal in
#: a shortened comparison instead of repeating the whole list in every finding.
MAX_LOCATION = 1000
#: Distinct literals of one query checked against their columns at most (Spider's queries have a
#: handful); the others are left unchecked and the static stage's trace says so (``bounded``).
MAX_LITERAL_CHECKS = 2000
#: A column compared with at least this many literals the index cannot decide has them checked by the
#: engine in one probe (:meth:`~sqlmend.rules.probe.Probe.matching`), not one probe each.
BATCH_LITERALS = 20


@dataclass
class AbsentLiteral:
    """A literal compared (``=``, ``<>``, ``IN``, ``NOT IN``) with a column that never holds it."""

    comparison: Comparison
    node: Any  # the literal node
    value: Any  # its Python value
    table: str
    column: str
    written: str = ""  # the comparison as written (rendered once per comparison; shortened when long)

    @property
    def path(self) -> str:
        return node_path(self.node)

    @property
    def location(self) -> str:
        """The comparison as written; a long one (an IN list) shortened around this literal."""
        text = self.written or self.comparison.node.sql()
        if not text.endswith(" values)") or len(text) <= MAX_LOCATION or "(... " not in text:
            return text
        shown = ("'" + self.value.replace("'", "''") + "'") if isinstance(self.value, str) else str(self.value)
        return text.replace("(... ", f"(... {shown} ... ", 1)


def _written(cmp: Comparison) -> str:
    """A comparison as its findings' location gives it: as written, or around the literal when long."""
    text = cmp.node.sql() if len(cmp.literals) <= MAX_LOCATION // 4 else ""  # a long list is not rendered
    if text and len(text) <= MAX_LOCATION:
        return text
    op = {"in": "IN", "not_in": "NOT IN"}.get(cmp.op, cmp.op.upper())
    return f"{cmp.column.node.sql()} {op} (... {len(cmp.literals):,} values)"


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
    checked: dict[tuple, bool] = {}  # (table, column, literal) -> absent: each distinct literal once
    unchecked = 0
    found: list[tuple[Comparison, Any, Any, tuple]] = []
    if analysis.tree is not None:
        asked: dict[tuple[str, str], list[tuple[tuple, Any, Any]]] = {}  # the engine's literals, by column
        for cmp in analysis.comparisons():
            ref = cmp.column
            if cmp.op not in EQUALITY_OPS or ref.status != "ok":
                continue
            for lit in cmp.literals:
                value = analysis.as_literal(lit)
                key = (ref.table, ref.column, ("s", value) if isinstance(value, str)
                       else ("n", type(value).__name__, value) if value is not None else ("x", lit.sql()))
                if key not in checked:
                    if len(checked) >= MAX_LITERAL_CHECKS:
                        unchecked += 1
                        continue
                    ctx.spend(LITERAL_COST, "literal checks")
                    if index_decides(ctx, ref.table, ref.column, value):
                        checked[key] = not ctx.values.contains(ref.table, ref.column, value)
                    else:
                        checked[key] = False  # until the engine says (below)
                        asked.setdefault((ref.table, ref.column), []).append((key, lit, value))
                found.append((cmp, lit, value, key))
        for (table, column), items in asked.items():
            matched = (ctx.probe.matching(table, column, [_literal_sql(ctx, lit, value) for _, lit, value in items])
                       if len(items) >= BATCH_LITERALS and ctx.probe.non_null_count(table, column) else None)
            for i, (key, lit, value) in enumerate(items):
                checked[key] = (i not in matched) if matched is not None else _absent(ctx, table, column, lit, value)
    written: dict[int, str] = {}
    for cmp, lit, value, key in found:
        if checked.get(key):
            if id(cmp) not in written:
                written[id(cmp)] = _written(cmp)
            out.append(AbsentLiteral(cmp, lit, value, cmp.column.table, cmp.column.column, written[id(cmp)]))
    if unchecked:
        ctx.note_bounded(f"{unchecked:,} literal(s) not checked against their columns: at most "
                         f"{MAX_LITERAL_CHECKS:,} distinct literals a query are")
    ctx.memo["absent"] = out
    return out


def _literal_sql(ctx: RuleContext, lit: Any, value: Any) -> str:
    """A literal as the probes write it (a string quoted again, anything else as the query wrote it)."""
    return lit.sql(dialect=ctx.dialect) if not isinstance(value, str) else "'" + value.replace("'", "''") + "'"


def _absent(ctx: RuleContext, table: str, column: str, lit: Any, value: Any) -> bool:
    """Whether no row of ``table`` holds ``value`` in ``column`` (a column with no values: False)."""
    if index_decides(ctx, table, column, value):
        return not ctx.values.contains(table, column, value)
    vi = ctx.values
    if vi is not None and isinstance(value, str) and vi.bounded(table, column):
        ctx.note_bounded(vi.bounded(table, column))
    if not ctx.probe.non_null_count(table, column):
        return False
    return ctx.probe.matches(table, column, "=", _literal_sql(ctx, lit, value)) is False


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
        out = []
        for absent in absent_literals(ctx):
            ctx.check_bounds()
            found = self.check_literal(ctx, absent)
            if found is not None:
                out.append(found)
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
