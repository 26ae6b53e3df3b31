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

from dataclasses import dataclass, field

from rapidfuzz import fuzz, process
from sqlglot import exp

from sqlmend.errors import AmbiguousColumnError, UnknownColumnError, UnknownTableError
from sqlmend.sql.schema import SchemaLike, as_mapping, table_key
from sqlmend.sql.scopes import STAR, ScopeInfo, analyse


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


def quoted_strings_to_literals(infos: list[ScopeInfo], original: str | None) -> int:
    """SQLite's rule alone: a double-quoted token that names no column in scope becomes a string literal.

    Unlike :func:`resolve_columns` it raises on nothing (an unknown or ambiguous name stays as written),
    so that a query can be carried to another dialect (where ``"x"`` would be an identifier, or MySQL's
    string) with SQLite's meaning.

    Args:
        infos: the scopes of the query (:func:`sqlmend.sql.scopes.analyse`).
        original: the text the tree was parsed from.

    Returns:
        How many tokens became literals (the tree is changed in place).
    """
    converted = 0
    for info in infos:
        for col in info.columns:
            if col.table or col.is_star or not is_double_quoted(col.this, original):
                continue
            try:
                if _resolve_unqualified(col, info):
                    continue
            except AmbiguousColumnError:
                continue
            col.replace(exp.Literal.string(col.name))
            converted += 1
    return converted


def _resolve_qualified_star(col: exp.Column, info: ScopeInfo) -> None:
    alias = col.table.lower()
    if not any(alias in sc.sources for sc in info.chain()):
        raise UnknownTableError(f"no such table: {col.table} (in {col.table}.*)", column=col.table,
                                candidates=closest(alias, sorted(info.sources)))


# --- the resolver every layer above asks: which table does this column belong to? -----------


@dataclass
class Binding:
    """What one column resolves to (:meth:`Resolver.resolve`).

    ``status``: ``ok`` (a schema table's column), ``unknown`` (no source has it; for a
    qualified column: its table has no such column), ``ambiguous`` (two sources of one
    SELECT have it), ``derived`` (a column of a derived table or CTE), ``alias`` (a
    result alias of its SELECT), ``unknown_qualifier`` (the qualifier names no source
    in scope), ``unknown_table`` (its source is a table the schema does not have).
    """

    status: str
    table: str | None = None  # the schema table (lower case) for ok / unknown-with-qualifier
    alias: str | None = None  # the source alias (lower case) it resolved through
    scope: ScopeInfo | None = None  # the scope whose source it resolved to
    candidates: list[str] = field(default_factory=list)  # source aliases of an ambiguous name


class Resolver:
    """Which table each column of one query belongs to, scope by scope.

    The one column/alias resolver of sqlmend: rules, memory and refine ask it
    instead of keeping alias maps of their own. A qualifier is looked up in the
    column's own SELECT, then in the enclosing ones (correlated subqueries), so a
    subquery that reuses an alias (``T1``) or a column name resolves to its own
    table, not to the outer query's.

    Args:
        tree: the parsed query (not changed).
        schema: the database schema; without one, an unqualified column binds to
            the only table of its SELECT (see :meth:`table_of`).
        infos: the scopes when the caller has already analysed the tree.

    >>> from sqlmend.sql.parse import parse
    >>> tree = parse("SELECT T1.name FROM singer AS T1 WHERE T1.id IN "
    ...              "(SELECT T1.singer_id FROM singer_in_concert AS T1)")
    >>> r = Resolver(tree)
    >>> [r.column_name(c) for c in tree.find_all(exp.Column)]
    ['singer.name', 'singer.id', 'singer_in_concert.singer_id']
    """

    def __init__(self, tree: exp.Expression, schema: SchemaLike | None = None, infos: list[ScopeInfo] | None = None):
        self.tree = tree
        self.mapping = as_mapping(schema)
        self.infos = infos if infos is not None else analyse(tree, self.mapping)
        self._by_expr = {id(info.expression): info for info in self.infos}
        self._by_col = {id(col): info for info in self.infos for col in info.columns}

    def scope_of(self, node: exp.Expression) -> ScopeInfo | None:
        """The scope (SELECT) a node is written in; ``None`` outside every scope."""
        info = self._by_col.get(id(node))
        while info is None and node is not None:
            info = self._by_expr.get(id(node))
            node = node.parent
        return info

    def binding(self, col: exp.Column) -> tuple[str | None, bool]:
        """``(table, binds)``: the table as the query writes it (a derived table's alias
        for its columns), or None when unknown; ``binds``: the name binds to a source or
        result alias in scope (False: no source has it, or no scope holds the column)."""
        info = self.scope_of(col)
        name = col.name.lower()
        for sc in (info.chain() if info is not None else ()):
            if col.table:
                hit = sc.sources.get(col.table.lower())
                if hit:
                    return (hit[1] or col.table), True
                continue
            exact = [(a, t) for a, (_, t, cols) in sc.sources.items() if name in cols]
            if exact:
                alias, table = exact[0]
                return (table or alias), True
            if any(STAR in cols for _, _, cols in sc.sources.values()) or name in sc.output_names(True):
                return None, True
        return (col.table or None), not self.mapping

    def resolve(self, col: exp.Column) -> Binding:
        """Resolve a column as SQL scoping does, with a :class:`Binding` status.

        The column's own SELECT first, then each enclosing one (correlated
        subqueries); an unqualified name that several sources of one SELECT own
        is ambiguous. Needs the schema for ``ok`` / ``unknown`` / ``unknown_table``.
        """
        name, qualifier = col.name.lower(), (col.table or "").lower()
        info = self.scope_of(col)
        for sc in (info.chain() if info is not None else ()):
            if qualifier:
                hit = sc.sources.get(qualifier)
                if hit is None:
                    continue
                return self._through(qualifier, hit, name, sc, qualified=True)
            owners = [a for a, (_, table, cols) in sc.sources.items()
                      if name in cols or (table is not None and table.lower() not in self.mapping)
                      or (table is None and STAR in cols)]
            if len(owners) == 1:
                return self._through(owners[0], sc.sources[owners[0]], name, sc, qualified=False)
            if len(owners) > 1:
                return Binding("ambiguous", scope=sc, candidates=owners)
            if name in sc.output_names():
                return Binding("alias", scope=sc)
        if qualifier:
            return Binding("unknown_qualifier", alias=qualifier)
        return Binding("unknown")

    def _through(self, alias: str, source: tuple, name: str, sc: ScopeInfo, qualified: bool) -> Binding:
        _, table, cols = source
        if table is not None and table.lower() not in self.mapping:
            return Binding("unknown_table", alias=alias, scope=sc)
        if table is None:
            return Binding("derived", alias=alias, scope=sc)
        status = "ok" if name in cols or not qualified and STAR in cols else "unknown"
        return Binding(status, table.lower(), alias, sc)

    def table_of(self, col: exp.Column) -> str | None:
        """The table of a column (as written, case kept); an unqualified column that no
        schema column decides belongs to the only table of its own SELECT."""
        table, _ = self.binding(col)
        if table is None and not col.table:
            info = self.scope_of(col)
            tables = {t for _, t, _ in (info.sources.values() if info is not None else ())}
            if len(tables) == 1 and None not in tables:
                table = next(iter(tables))
        return table

    def column_name(self, col: exp.Column) -> str:
        """``"table.column"`` lower-cased (:meth:`table_of`), or the bare column name."""
        table = self.table_of(col)
        return f"{table}.{col.name}".lower() if table else col.name.lower()

    def qualified(self, col: exp.Column) -> str:
        """``"table.column"`` lower-cased for a qualified column whose qualifier is in
        scope, else the column name (what a join condition names)."""
        if col.table:
            info = self.scope_of(col)
            for sc in (info.chain() if info is not None else ()):
                hit = sc.sources.get(col.table.lower())
                if hit:
                    return f"{hit[1] or col.table}.{col.name}".lower()
        return col.name.lower()

    def qualifier(self, table: str, at: exp.Expression | None = None) -> str | None:
        """The name a query uses for ``table`` where ``at`` is written (its alias, else
        the table name), searching its scope and then the enclosing ones; without
        ``at``, the first source of any scope, in text order. None: not read there."""
        table = table.lower()
        info = self.scope_of(at) if at is not None else None
        scopes = list(info.chain()) if info is not None else self.infos
        for sc in scopes:
            for _alias, (node, name, _cols) in sc.sources.items():
                if name is not None and name.lower() == table:
                    return node.alias_or_name
        return None

    def tables(self) -> dict[str, str]:
        """``{alias or name (lower case): table name as written}`` of every table read,
        in every scope (also each table's own name, lower case)."""
        out: dict[str, str] = {}
        for t in self.tree.find_all(exp.Table):
            if t.name:
                key = table_key(t, self.mapping)
                out[t.alias_or_name.lower()] = key
                out[key.lower()] = key
        return out
