"""Scopes of a query: which sources each SELECT sees, and which columns each one owns."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.scope import Scope, traverse_scope

from sqlmend.sql.schema import table_key

STAR = "*"  # marks a source whose columns are unknown (a derived table selecting *)


@dataclass
class ScopeInfo:
    """One SELECT (or set operation) of a query and what it sees."""

    scope: Scope
    parent: ScopeInfo | None
    #: alias (lower-cased) -> (Table/Subquery node, schema table key (``sql.schema.table_key``) or None,
    #: column names or {STAR})
    sources: dict[str, tuple[exp.Expression, str | None, set[str]]] = field(default_factory=dict)
    columns: list[exp.Column] = field(default_factory=list)  # the columns written in this scope

    @property
    def expression(self) -> exp.Expression:
        return self.scope.expression

    def chain(self):
        """This scope, then each enclosing one."""
        info: ScopeInfo | None = self
        while info is not None:
            yield info
            info = info.parent

    def output_names(self, aliases_only: bool = False) -> set[str]:
        """The names of this scope's result columns, lower-cased.

        Args:
            aliases_only: only names given by ``AS`` (for a SELECT; a set operation's
                names are always those of its first SELECT).
        """
        expr = self.expression
        if aliases_only and isinstance(expr, exp.Select):
            return {s.alias.lower() for s in expr.selects if isinstance(s, exp.Alias)}
        return {n.lower() for n in getattr(expr, "named_selects", [])}


def source_columns(node, mapping: dict[str, dict[str, str]]) -> set[str]:
    """Column names a source offers (lower-cased); ``{STAR}`` when unknown."""
    if isinstance(node, Scope):
        expr = node.expression
        if any(isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star)
               for s in getattr(expr, "selects", [])):
            return {STAR}
        return {n.lower() for n in getattr(expr, "named_selects", [])}
    if isinstance(node, exp.Table):
        return set(mapping.get(table_key(node, mapping).lower(), {})) or {STAR}
    return {STAR}


def analyse(tree: exp.Expression, mapping: dict[str, dict[str, str]]) -> list[ScopeInfo]:
    """Scopes of a tree in text order (outer before inner), each with its sources and own columns.

    Args:
        tree: the query.
        mapping: the lower-cased schema (see :func:`sqlmend.sql.schema.as_mapping`).

    Returns:
        One :class:`ScopeInfo` per scope, the root first, then in the order they are written.
    """
    order = {id(node): i for i, node in enumerate(tree.walk(bfs=False))}
    scopes = sorted(traverse_scope(tree), key=lambda sc: order.get(id(sc.expression), -1))
    by_expr: dict[int, ScopeInfo] = {}
    infos: list[ScopeInfo] = []
    for scope in scopes:
        info = ScopeInfo(scope=scope, parent=None)
        by_expr[id(scope.expression)] = info
        infos.append(info)
    for info in infos:
        parent = info.scope.parent
        info.parent = by_expr.get(id(parent.expression)) if parent is not None else None
        try:
            selected = info.scope.selected_sources
        except OptimizeError:  # an alias used twice in one FROM: the last of them is the one read
            selected = {alias: (src, src) for alias, src in info.scope.sources.items()
                        if isinstance(src, exp.Table)}
        for alias, (node, src) in selected.items():
            if not isinstance(node, exp.Table) and isinstance(node.parent, exp.Subquery):
                node = node.parent  # a derived table: the node that carries the alias
            # node: the Table or Subquery written in FROM/JOIN; src: a Table or a Scope (CTE, derived)
            table = table_key(src, mapping) if isinstance(src, exp.Table) else None
            info.sources[alias.lower()] = (node, table, source_columns(src, mapping))
    for col in tree.find_all(exp.Column):
        owner = col.parent
        while owner is not None and id(owner) not in by_expr:
            owner = owner.parent
        if owner is not None:
            by_expr[id(owner)].columns.append(col)
    return infos
