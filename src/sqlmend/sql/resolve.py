"""Resolve every column name as SQLite does, before qualification.

* An unqualified name binds to a source of the nearest enclosing SELECT that has it
  (then outer SELECTs, for correlated subqueries), or to a result alias of its own
  SELECT. Two sources of the same SELECT that both have it: ambiguous.
* SQLite's compatibility rule: a **double-quoted** token that names no column in
  scope is a string literal (Spider's gold writes ``WHERE city = "Aberdeen"``).
  A double-quoted token that names a column stays a column; ``[x]`` and `` `x` ``
  are never strings.
* Names are case-insensitive.

Failures raise the :class:`~sqlmend.errors.QualifyError` subclasses with the closest
candidates, since an unknown or ambiguous column is itself a finding.
"""

from __future__ import annotations

from rapidfuzz import fuzz, process
from sqlglot import exp

from sqlmend.errors import AmbiguousColumnError, UnknownColumnError, UnknownTableError
from sqlmend.sql.scopes import STAR, ScopeInfo


def closest(name: str, choices: list[str], limit: int = 3) -> list[str]:
    """The choices most similar to ``name`` (compared on their last dotted part).

    Args:
        name: the unknown name.
        choices: candidate names, e.g. ``"table.column"``.
        limit: at most this many.

    Returns:
        The best candidates, best first (score >= 50 of 100).
    """
    keys = {c: c.rsplit(".", 1)[-1].lower() for c in choices}
    found = process.extract(name.lower(), keys, scorer=fuzz.WRatio, limit=limit, score_cutoff=50)
    return [c for _, _, c in found]


def is_double_quoted(ident: exp.Expression, original: str | None) -> bool:
    """Whether an identifier was written in double quotes (not ``[x]`` / backticks)."""
    if not isinstance(ident, exp.Identifier) or not ident.quoted:
        return False
    start = ident.meta.get("start")
    if original is None or start is None or start >= len(original):
        return True  # a hand-built tree: sqlglot writes quoted identifiers with "
    return original[start] == '"'


def _visible(info: ScopeInfo) -> list[str]:
    return sorted({f"{table or alias}.{c}" for sc in info.chain()
                   for alias, (_, table, cols) in sc.sources.items() for c in cols if c != STAR})


def _using_names(select: exp.Expression) -> set[str]:
    names: set[str] = set()
    for join in select.args.get("joins") or []:
        names |= {u.name.lower() for u in join.args.get("using") or []}
    return names


def _in_order_by(col: exp.Column, info: ScopeInfo) -> bool:
    node = col.parent
    while node is not None and node is not info.expression:
        if isinstance(node, exp.Order):
            return True
        node = node.parent
    return False


def check_tables(infos: list[ScopeInfo], mapping: dict[str, dict[str, str]]) -> None:
    """Raise :class:`UnknownTableError` for a table that is neither in the schema nor a CTE."""
    for info in infos:
        for alias, (node, table, _cols) in info.sources.items():
            if table is not None and table.lower() not in mapping:
                raise UnknownTableError(f"no such table: {table}", column=table,
                                        candidates=closest(table, list(mapping)))


def _resolve_unqualified(col: exp.Column, info: ScopeInfo) -> bool:
    """True when the name binds; raises when it is ambiguous."""
    name = col.name.lower()
    if _in_order_by(col, info) and name in info.output_names():
        return True  # SQLite: ORDER BY looks at result aliases first
    for sc in info.chain():
        exact = [a for a, (_, _, cols) in sc.sources.items() if name in cols]
        if len(exact) > 1 and name not in _using_names(sc.expression):
            tables = [f"{sc.sources[a][1] or a}.{name}" for a in exact]
            raise AmbiguousColumnError(f"ambiguous column name: {col.name} (in {', '.join(tables)})",
                                       column=col.name, candidates=tables)
        if exact or any(STAR in cols for _, _, cols in sc.sources.values()):
            return True
        if sc is info and name in info.output_names(aliases_only=True):
            return True
    return False


def _resolve_qualified(col: exp.Column, info: ScopeInfo) -> None:
    alias, name = col.table.lower(), col.name.lower()
    for sc in info.chain():
        if alias in sc.sources:
            _, table, cols = sc.sources[alias]
            if name not in cols and STAR not in cols:
                choices = [f"{table or alias}.{c}" for c in cols]
                raise UnknownColumnError(f"no such column: {col.table}.{col.name}",
                                         column=f"{col.table}.{col.name}",
                                         candidates=closest(name, choices))
            return
    choices = sorted({a for sc in info.chain() for a in sc.sources})
    raise UnknownTableError(f"no such table or alias in scope: {col.table} (in {col.table}.{col.name})",
                            column=col.table, candidates=closest(alias, choices))


def resolve_columns(infos: list[ScopeInfo], original: str | None, sqlite: bool = True) -> int:
    """Check every column of every scope; turn SQLite's double-quoted strings into literals.

    Args:
        infos: the scopes of the query (:func:`sqlmend.sql.scopes.analyse`), root first.
        original: the text the tree was parsed from (tells ``"x"`` from ``[x]``), or ``None``.
        sqlite: apply SQLite's double-quoted-string rule.

    Returns:
        How many double-quoted tokens became string literals (the tree is changed in place).

    Raises:
        UnknownColumnError: a name binds to nothing in scope.
        AmbiguousColumnError: a name binds to two sources of the same SELECT.
        UnknownTableError: a qualifier names no table or alias in scope.
    """
    converted = 0
    for info in infos:
        for col in info.columns:
            if col.is_star or isinstance(col.this, exp.Star):
                if col.table:
                    _resolve_qualified_star(col, info)
                continue
            if col.table:
                _resolve_qualified(col, info)
                continue
            if _resolve_unqualified(col, info):
                continue
            if sqlite and is_double_quoted(col.this, original):
                col.replace(exp.Literal.string(col.name))
                converted += 1
                continue
            raise UnknownColumnError(f"no such column: {col.name}", column=col.name,
                                     candidates=closest(col.name, _visible(info)))
    return converted


def _resolve_qualified_star(col: exp.Column, info: ScopeInfo) -> None:
    alias = col.table.lower()
    if not any(alias in sc.sources for sc in info.chain()):
        raise UnknownTableError(f"no such table: {col.table} (in {col.table}.*)", column=col.table,
                                candidates=closest(alias, sorted(info.sources)))
