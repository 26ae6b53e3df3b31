"""Foreign keys between the two sides of a join condition, and the repair they prove.

Shared by the join rules (TB02 disjoint columns, TB03 off-key columns): when
exactly one single-column foreign key links the two tables and one side of the
condition is that key's column, the key names the column the other side must
be; the fix renames it (and is kept only if the new pair shares values).
"""

from __future__ import annotations

from typing import Any

from sqlmend.rules.analysis import ColumnPair
from sqlmend.rules.base import Rule
from sqlmend.sql.fixes import replace_column
from sqlmend.types import Finding, ForeignKey


def linking_keys(ctx: Any, pair: ColumnPair) -> list[ForeignKey]:
    """The single-column foreign keys between the two tables of a join condition.

    Args:
        ctx: the rule context.
        pair: the condition ``a.x = b.y``.

    Returns:
        The keys (either direction).
    """
    return keys_between(ctx, pair.left.table, pair.right.table)


def keys_between(ctx: Any, a: str, b: str) -> list[ForeignKey]:
    """The single-column foreign keys between tables ``a`` and ``b`` (either direction)."""
    tables = {a.lower(), b.lower()}
    return [fk for fk in ctx.schema.foreign_keys if len(fk.columns) == 1
            and {fk.table.lower(), fk.ref_table.lower()} == tables]


def on_key(pair: ColumnPair, fk: ForeignKey) -> bool:
    """Whether the condition pairs exactly the key's two columns."""
    ends = {(fk.table.lower(), fk.columns[0].lower()), (fk.ref_table.lower(), fk.ref_columns[0].lower())}
    sides = {(pair.left.table.lower(), pair.left.column.lower()),
             (pair.right.table.lower(), pair.right.column.lower())}
    return ends == sides


def describe(fk: ForeignKey) -> str:
    """``"t.c -> r.d"``."""
    return f"{fk.table}.{','.join(fk.columns)} -> {fk.ref_table}.{','.join(fk.ref_columns)}"


def key_fix(ctx: Any, pair: ColumnPair) -> list[dict]:
    """The fix the foreign key proves for a join condition (``[]`` when none is proven).

    Args:
        ctx: the rule context.
        pair: the condition.

    Returns:
        One ``replace_column`` fix, or nothing.
    """
    fks = linking_keys(ctx, pair)
    if len(fks) != 1:
        return []
    fk = fks[0]
    ends = {fk.table.lower(): fk.columns[0], fk.ref_table.lower(): fk.ref_columns[0]}
    for keep, change in ((pair.left, pair.right), (pair.right, pair.left)):
        if ends.get(keep.table.lower(), "").lower() != keep.column.lower():
            continue
        partner = ends.get(change.table.lower())
        if not partner or partner.lower() == change.column.lower():
            continue
        table = ctx.schema.table(change.table)
        column = table.column(partner) if table else None
        if column is None or not ctx.probe.joinable((keep.table, keep.column), (change.table, column.name)):
            continue
        return [replace_column(change.node, column.name, dialect=ctx.dialect)]
    return []


def cross_table_pairs(ctx: Any) -> list[ColumnPair]:
    """The join conditions ``a.x = b.y`` between two different tables of a query that ran.

    Args:
        ctx: the rule context.

    Returns:
        The conditions; none when the query failed (its data says nothing).
    """
    if ctx.exec_error is not None:
        return []
    return [p for p in ctx.analysis.column_pairs() if p.left.table.lower() != p.right.table.lower()]


def key_target(ctx: Any, table: str, column: str) -> tuple[str, str]:
    """The column a key column stands for: its foreign key's referenced column, else itself (lower-cased)."""
    for fk in ctx.schema.foreign_keys:
        if len(fk.columns) == 1 and fk.table.lower() == table.lower() \
                and fk.columns[0].lower() == column.lower():
            return (fk.ref_table.lower(), fk.ref_columns[0].lower())
    return (table.lower(), column.lower())


def key_root(ctx: Any, table: str, column: str) -> tuple[str, str]:
    """The column a key column finally stands for: its foreign keys followed to the end, a column of a
    composite key included (``attendance.course_id -> registrations.course_id -> courses.course_id``);
    lower-cased."""
    at, seen = (table.lower(), column.lower()), set()
    while at not in seen:
        seen.add(at)
        step = next(((fk.ref_table.lower(), fk.ref_columns[i].lower()) for fk in ctx.schema.foreign_keys
                     if fk.table.lower() == at[0] and len(fk.ref_columns) == len(fk.columns)
                     for i, c in enumerate(fk.columns) if c.lower() == at[1]), None)
        if step is None:
            break
        at = step
    return at


def is_key_column(ctx: Any, table: str, column: str) -> bool:
    """Whether a column is (part of) its table's primary key or an end of a foreign key."""
    t = ctx.schema.table(table)
    if t is not None and column.lower() in {c.lower() for c in t.primary_key}:
        return True
    return any((fk.table.lower() == table.lower() and column.lower() in {c.lower() for c in fk.columns})
               or (fk.ref_table.lower() == table.lower()
                   and column.lower() in {c.lower() for c in fk.ref_columns})
               for fk in ctx.schema.foreign_keys)


def key_path(ctx: Any, start: str, end: str) -> list[str]:
    """The shortest chain of tables that foreign keys link from ``start`` to ``end`` ([] when none).

    Args:
        ctx: the rule context.
        start: a table.
        end: another table.

    Returns:
        Table names (lower-cased), ``start`` first and ``end`` last.
    """
    adj: dict[str, set[str]] = {}
    for fk in ctx.schema.foreign_keys:
        a, b = fk.table.lower(), fk.ref_table.lower()
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    start, end = start.lower(), end.lower()
    previous: dict[str, str] = {start: ""}
    frontier = [start]
    while frontier and end not in previous:
        nxt = []
        for node in frontier:
            for other in sorted(adj.get(node, ())):
                if other not in previous:
                    previous[other] = node
                    nxt.append(other)
        frontier = nxt
    if end not in previous:
        return []
    path = [end]
    while previous[path[-1]]:
        path.append(previous[path[-1]])
    return path[::-1]


class PairRule(Rule):
    """A join rule: each equality between columns of two tables (:func:`cross_table_pairs`) on its own.

    Subclasses implement :meth:`check_pair`.
    """

    def check(self, ctx: Any) -> list[Finding]:
        return [f for pair in cross_table_pairs(ctx) if (f := self.check_pair(ctx, pair)) is not None]

    def check_pair(self, ctx: Any, pair: ColumnPair) -> Finding | None:
        """The finding on one column pair, or ``None``."""
        raise NotImplementedError

