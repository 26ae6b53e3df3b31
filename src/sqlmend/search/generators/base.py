"""What every repair generator shares: the per-query inputs, the record, the exhaustive edit loop.

A generator is the repair direction of an injection operator
(:mod:`sqlmend.synth.operators`): it looks at the same places of the tree
(:mod:`sqlmend.synth.nodes`) but, instead of sampling one edit, it yields every
edit it can make there, each on its own copy of the tree, with a short label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterator

from sqlmend import taxonomy
from sqlmend.sql import ast, table_name
from sqlmend.sql.schema import table_node
from sqlmend.structure.canonical import scope_tables
from sqlmend.structure.linking import name_links, value_candidates
from sqlmend.synth.nodes import table_of, type_class
from sqlmend.types import Schema

Tree = ast.Expression
#: What a generator yields: an edited copy of the tree and a label of the edit.
Candidate = tuple[Tree, str]


@dataclass
class SearchInput:
    """What generators may read about one query besides its tree.

    ``value_index`` is the database's value index (``db.value_index()``), or
    None (the generators of stored values then yield nothing; condition_add still compares
    the question's numbers). ``max_per_node`` caps the
    alternatives a generator offers at one location (best ranked first).
    """

    question: str
    schema: Schema
    value_index: Any = None
    evidence: str = ""
    max_per_node: int = 4
    extra: dict[str, Any] = field(default_factory=dict)
    dialect: str = "sqlite"  # the database's (sqlglot's name)

    @cached_property
    def link_scores(self) -> dict[str, float]:
        """``{"table.column" or "table" (lower case): best name-link score}`` of the question."""
        out: dict[str, float] = {}
        for link in name_links(f"{self.question} {self.evidence}", self.schema):
            key = link.target.lower()
            out[key] = max(out.get(key, 0.0), link.score)
        return out

    @cached_property
    def linked_tables(self) -> set[str]:
        """The keys of :attr:`link_scores` that name a table (``hr.employees`` holds a dot too)."""
        return {k for k in self.link_scores if "." not in k or self.schema.table(k) is not None}

    @cached_property
    def literals(self) -> list[str]:
        """Phrases of the question that may be cell values (quoted, capitalized, numbers)."""
        return value_candidates(self.question)

    def column_score(self, table: str, column: str) -> float:
        """How strongly the question names ``table.column`` (0 when it does not)."""
        return self.link_scores.get(f"{table}.{column}".lower(), 0.0)

    def ranked_columns(self, tables: dict[str, str], exclude: set[str] = frozenset(),
                       like: tuple[str, str] | None = None, linked_only: bool = False) -> list[tuple[str, str, str]]:
        """Columns of the tables in scope, the ones the question names first.

        Args:
            tables: ``{alias (lower): table}`` of a SELECT (``structure.canonical.scope_tables``).
            exclude: ``"table.column"`` (lower case) to leave out.
            like: ``(table, column)``: columns of its table and type class come before others.
            linked_only: only columns the question names (by name link).

        Returns:
            ``(alias, table, column)`` triples, at most ``max_per_node``.
        """
        scored = []
        for alias, table in tables.items():
            tab = self.schema.table(table)
            if tab is None:
                continue
            for col in tab.columns:
                key = f"{tab.name}.{col.name}".lower()
                if key in exclude:
                    continue
                score = self.column_score(tab.name, col.name)
                if linked_only and score <= 0:
                    continue
                near = 0.0
                if like is not None:
                    same_table = tab.name.lower() == like[0].lower()
                    mine = self.schema.table(like[0])
                    me = mine.column(like[1]) if mine else None
                    same_type = me is not None and type_class(me.type) == type_class(col.type)
                    near = 0.2 * same_table + 0.1 * same_type
                scored.append((score + near, alias, tab.name, col.name))
        scored.sort(key=lambda s: -s[0])
        return [(a, t, c) for _, a, t, c in scored[: self.max_per_node]]


@dataclass(frozen=True)
class Generator:
    """A repair generator: every candidate edit of one kind, at every place it applies."""

    name: str
    error_types: tuple[str, ...]  # taxonomy ids it repairs
    generate: Callable[[Tree, SearchInput], Iterator[Candidate]]
    doc: str = ""

    def __post_init__(self) -> None:
        for t in self.error_types:
            taxonomy.get(t)

    def __call__(self, tree: Tree, inp: SearchInput) -> Iterator[Candidate]:
        return self.generate(tree, inp)


def each_edit(tree: Tree, locate: Callable[[Tree], list], options: Callable[[Any], list[tuple[Any, str]]],
              apply: Callable[[Any, Any], Any]) -> Iterator[Candidate]:
    """Yield one edited copy of ``tree`` per located node and per option at that node.

    Args:
        tree: the query's tree (never modified).
        locate: ``tree -> nodes`` (deterministic, so the i-th node of a copy is the i-th of the tree).
        options: ``node -> [(option, label)]`` read on the original tree.
        apply: ``(node of the copy, option) -> result``: False when it could not edit,
            the new root when it replaced the root node, True when it edited in place.
    """
    nodes = locate(tree)
    for i, node in enumerate(nodes):
        for option, label in options(node):
            copy = tree.copy()
            targets = locate(copy)
            if i >= len(targets):
                continue
            done = apply(targets[i], option)
            if done is False:
                continue
            yield (done if isinstance(done, ast.Expression) else copy), label


def qualifier(sel: ast.Select, alias: str, table: str) -> str | None:
    """How a new column of ``alias`` should be qualified in ``sel`` (None: unqualified is fine)."""
    scope = scope_tables(sel)
    if len(scope) <= 1 and not any(isinstance(c, ast.Column) and c.table for c in sel.find_all(ast.Column)):
        return None
    for t in sel.find_all(ast.Table):
        if t.parent_select is sel and (t.alias or t.name).lower() == alias:
            return t.alias or t.name
    return table.rpartition(".")[2]  # a schema-qualified table is named by its own name


def column_swaps(inp: Any, label: str) -> Callable[[Any], list[tuple[Any, str]]]:
    """Options replacing a located ``(column, select, table)`` by another column in scope.

    The question's names rank first (``inp.ranked_columns``); ``label`` names the clause
    in each option's description (``select column a -> t.b``).
    """

    def options(item: Any) -> list[tuple[Any, str]]:
        col, sel, table = item
        picked = inp.ranked_columns(scope_tables(sel), exclude={f"{table}.{col.name}".lower()},
                                    like=(table, col.name))
        return [((a, t, c), f"{label} column {col.sql()} -> {t}.{c}") for a, t, c in picked]

    return options


def swap_column(item: Any, option: Any) -> bool:
    """Apply a :func:`column_swaps` option: the column, qualified as the scope needs."""
    col, sel, _ = item
    alias, table, column = option
    col.replace(ast.column(column, table=qualifier(sel, alias, table) if col.table or len(scope_tables(sel)) > 1
                           else None))
    return True


def fk_pairs(schema: Schema) -> Iterator[tuple[str, str, str, str]]:
    """Each foreign key in both directions: ``(table, column, other table, other column)``."""
    for fk in schema.foreign_keys:
        yield fk.table, fk.columns[0], fk.ref_table, fk.ref_columns[0]
        yield fk.ref_table, fk.ref_columns[0], fk.table, fk.columns[0]


def read_as(sel: ast.Select, table: str) -> list[str]:
    """How ``sel`` itself names each of its reads of ``table`` (the alias, else the name)."""
    return [t.alias or t.name for t in sel.find_all(ast.Table)
            if t.parent_select is sel and table_name(t).lower() == table.lower()]


def join_on(left: str | None, column: str, right: str, other: str) -> ast.EQ:
    """``left.column = right.other`` built as a tree (a name sqlglot's own dialect reads as a keyword,
    such as orchestra's table ``show``, would not parse back from text)."""
    left, right = (t.rpartition(".")[2] if t else t for t in (left, right))  # a schema table by its own name
    return ast.EQ(this=ast.column(column, table=left), expression=ast.column(other, table=right))


def add_join(sel: ast.Select, table: str, on: ast.EQ, schema: Schema) -> None:
    """Join ``table`` to ``sel``; an unqualified column of a table already read that the new table
    also has is qualified first (so it keeps its meaning); one no table read has is left to the new table."""
    tab = schema.table(table)
    spelled = {table_name(t): t.alias or t.name for t in sel.find_all(ast.Table) if t.parent_select is sel}
    for col in list(sel.find_all(ast.Column)):
        if col.table or col.parent_select is not sel or not tab.column(col.name):
            continue
        owner = table_of(col, sel, schema)
        if owner in spelled:
            col.set("table", ast.to_identifier(spelled[owner]))
    sel.join(table_node(tab, schema.dialect), on=on.copy(), copy=False)
