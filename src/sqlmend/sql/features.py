"""What a query is made of, for rules and detectors: tables, columns per clause, literals...

Every record keeps its AST node (``node``) so that a rule can point at it or build a
fix on it; ``scope`` numbers the SELECTs of the query in text order (0 = outermost).
With a schema, columns are resolved to their tables (``"table.column"``) as SQLite
does, and a double-quoted token that names no column is reported as the string
literal SQLite reads it as (``quoted_identifier=True``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from sqlmend.sql.clauses import clause_of
from sqlmend.sql.parse import DIALECT_KEY, ORIGINAL_KEY, parse
from sqlmend.sql.resolve import Resolver, is_double_quoted
from sqlmend.sql.schema import SchemaLike, as_mapping, table_key
from sqlmend.sql.scopes import ScopeInfo, analyse

#: comparison node -> operator name
_OPS: dict[type, str] = {
    exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=",
    exp.Like: "like", exp.ILike: "like", exp.Glob: "glob", exp.In: "in", exp.Between: "between",
    exp.Is: "is", exp.NullSafeEQ: "is", exp.NullSafeNEQ: "is not",
}
#: SQLite: LIKE ignores ASCII case; =, <, IN, GLOB... use BINARY collation (case-sensitive)
_CASE_INSENSITIVE = {"like", "not like"}


@dataclass
class TableRef:
    name: str  # the table (or CTE) name as written (``schema.name`` when qualified: ``sql.schema.table_key``)
    alias: str  # the alias in scope (the name itself when there is none)
    scope: int
    node: exp.Expression


@dataclass
class ColumnRef:
    column: str  # as written (case kept)
    table: str | None  # the real table, when known (alias resolved; schema lookup for bare names)
    clause: str  # select | from | join | where | group | having | order | limit | distinct | other
    scope: int
    node: exp.Expression

    @property
    def qualified(self) -> str:
        """``"table.column"`` lower-cased when the table is known, else the column."""
        return f"{self.table}.{self.column}".lower() if self.table else self.column.lower()


@dataclass
class LiteralRef:
    value: Any  # python value: str, int, float, None (NULL), bool
    text: str  # the SQL of the literal
    clause: str
    scope: int
    node: exp.Expression  # the Literal (or, for a double-quoted string, the Column node)
    column: ColumnRef | None = None  # the column it is compared to, if any
    op: str | None = None  # = != > >= < <= like "not like" glob in "not in" between is ...
    comparison: exp.Expression | None = None  # the predicate node
    case_sensitive: bool = True  # how SQLite compares it: LIKE ignores ASCII case, = does not
    quoted_identifier: bool = False  # written "like this": SQLite read a string since no column has the name


@dataclass
class AggregateRef:
    func: str  # count | sum | avg | min | max | ...
    distinct: bool
    column: ColumnRef | None  # None for COUNT(*) or an expression without a column
    clause: str
    scope: int
    node: exp.Expression


@dataclass
class JoinRef:
    table: TableRef
    kind: str  # inner | left | right | full | cross (no condition) | natural
    on: exp.Expression | None
    pairs: list[tuple[str, str]]  # equality conditions as ("table.column", "table.column")
    scope: int
    node: exp.Expression


@dataclass
class SubqueryRef:
    kind: str  # derived (in FROM) | in | exists | scalar
    clause: str
    scope: int  # the scope that contains it
    node: exp.Expression


@dataclass
class SelectInfo:
    """The modifiers of one SELECT."""

    scope: int
    distinct: bool
    group_by: list[exp.Expression]
    having: exp.Expression | None
    order_by: list[tuple[exp.Expression, bool]]  # (expression, descending)
    limit: int | None
    node: exp.Expression


@dataclass
class Features:
    """Everything :func:`features` found in a query (see the module docstring)."""

    tables: list[TableRef] = field(default_factory=list)
    columns: dict[str, list[ColumnRef]] = field(default_factory=dict)  # clause -> columns
    literals: list[LiteralRef] = field(default_factory=list)
    aggregates: list[AggregateRef] = field(default_factory=list)
    joins: list[JoinRef] = field(default_factory=list)
    subqueries: list[SubqueryRef] = field(default_factory=list)
    set_operations: list[str] = field(default_factory=list)  # union | union all | intersect | except
    selects: list[SelectInfo] = field(default_factory=list)  # scope order; [0] is the outermost SELECT

    @property
    def distinct(self) -> bool:
        """Whether the outermost SELECT has DISTINCT."""
        return bool(self.selects) and self.selects[0].distinct

    @property
    def group_by(self) -> list[exp.Expression]:
        return self.selects[0].group_by if self.selects else []

    @property
    def order_by(self) -> list[tuple[exp.Expression, bool]]:
        return self.selects[0].order_by if self.selects else []

    @property
    def limit(self) -> int | None:
        return self.selects[0].limit if self.selects else None

    @property
    def table_names(self) -> set[str]:
        """Lower-cased names of every table the query reads."""
        return {t.name.lower() for t in self.tables}

    def all_columns(self) -> list[ColumnRef]:
        """Every column of every clause."""
        return [c for cols in self.columns.values() for c in cols]


def features(tree: exp.Expression | str, schema: SchemaLike | None = None,
             dialect: str = "sqlite") -> Features:
    """Extract the features of a query (nodes are those of ``tree``, which is not changed).

    Args:
        tree: a tree from :func:`sqlmend.sql.parse` or SQL text.
        schema: the database schema; resolves bare columns to their tables and SQLite's
            double-quoted strings.
        dialect: the dialect of SQL text (trees keep the one they were parsed with).

    Returns:
        A :class:`Features`.
    """
    if isinstance(tree, str):
        tree = parse(tree, dialect)
    mapping = as_mapping(schema)
    sqlite = tree.meta.get(DIALECT_KEY, "sqlite") == "sqlite"
    original = tree.meta.get(ORIGINAL_KEY)
    infos = analyse(tree, mapping)
    resolver = Resolver(tree, mapping, infos)
    index = {id(info): i for i, info in enumerate(infos)}
    out = Features()
    col_refs: dict[int, ColumnRef] = {}
    for info in infos:
        n = index[id(info)]
        for alias, (node, table, _cols) in info.sources.items():
            if isinstance(node, exp.Table):
                out.tables.append(TableRef(name=table_key(node, mapping), alias=node.alias_or_name, scope=n, node=node))
        for col in info.columns:
            if col.is_star:
                continue
            table, known = resolver.binding(col)
            if mapping and sqlite and not known and not col.table and is_double_quoted(col.this, original):
                out.literals.append(LiteralRef(value=col.name, text=f"'{col.name}'", clause=clause_of(col),
                                               scope=n, node=col, quoted_identifier=True))
                continue
            ref = ColumnRef(column=col.name, table=table, clause=clause_of(col), scope=n, node=col)
            out.columns.setdefault(ref.clause, []).append(ref)
            col_refs[id(col)] = ref
        _select_info(info, n, out, resolver)
    _literals(tree, infos, index, out)
    _pair_literals(out, col_refs)
    _aggregates(tree, infos, index, col_refs, out)
    _subqueries(tree, infos, index, out)
    for node in tree.walk():
        if isinstance(node, exp.Union):
            out.set_operations.append("union" if node.args.get("distinct") else "union all")
        elif isinstance(node, (exp.Intersect, exp.Except)):
            out.set_operations.append(node.key)
    return out


def _owner(node: exp.Expression, infos: list[ScopeInfo], index: dict[int, int]) -> int:
    scopes = {id(info.expression): index[id(info)] for info in infos}
    parent = node.parent
    while parent is not None and id(parent) not in scopes:
        parent = parent.parent
    return scopes.get(id(parent), 0)


def _literal_value(lit: exp.Expression) -> Any:
    if isinstance(lit, exp.Null):
        return None
    if isinstance(lit, exp.Boolean):
        return bool(lit.this)
    if lit.is_string:
        return lit.this
    try:
        return int(lit.this)
    except ValueError:
        try:
            return float(lit.this)
        except ValueError:
            return lit.this


def _literals(tree, infos, index, out: Features) -> None:
    for lit in tree.find_all(exp.Literal, exp.Null):
        node = lit.parent if isinstance(lit.parent, exp.Neg) else lit
        value = _literal_value(lit)
        if node is not lit and isinstance(value, (int, float)):
            value = -value
        out.literals.append(LiteralRef(value=value, text=node.sql(), clause=clause_of(node),
                                       scope=_owner(node, infos, index), node=node))
    # text order where the parser recorded positions, else tree order
    order = {id(n): i for i, n in enumerate(tree.walk(bfs=False))}
    out.literals.sort(key=lambda r: (_start(r.node), order.get(id(r.node), -1)))


def _start(node: exp.Expression) -> int:
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    return min(starts) if starts else 1 << 30


def _pair_literals(out: Features, col_refs: dict[int, ColumnRef]) -> None:
    """Give each literal the comparison it is an operand of and the column on the other side."""
    for ref in out.literals:
        node, comparison = ref.node, None
        parent = node.parent
        while parent is not None:
            if type(parent) in _OPS:
                comparison = parent
                break
            if isinstance(parent, (exp.Tuple, exp.Paren, exp.Neg, exp.Cast)) or (
                    isinstance(parent, exp.Func) and not isinstance(parent, exp.AggFunc)):
                parent = parent.parent
                continue
            break
        if comparison is None:
            continue
        op = _OPS[type(comparison)]
        if isinstance(comparison.parent, exp.Not):
            op = f"not {op}"
        ref.op, ref.comparison = op, comparison
        ref.case_sensitive = op not in _CASE_INSENSITIVE
        subject = comparison.this
        if subject is node or node in list(subject.walk()):
            subject = comparison.args.get("expression")
        col = next((c for c in (subject.walk() if subject is not None else []) if isinstance(c, exp.Column)
                    and id(c) in col_refs), None)
        ref.column = col_refs.get(id(col)) if col is not None else None


def _aggregates(tree, infos, index, col_refs, out: Features) -> None:
    for agg in tree.find_all(exp.AggFunc):
        inner = agg.this
        distinct = isinstance(inner, exp.Distinct)
        col = next((c for c in agg.find_all(exp.Column) if id(c) in col_refs), None)
        out.aggregates.append(AggregateRef(func=agg.key, distinct=distinct,
                                           column=col_refs.get(id(col)) if col is not None else None,
                                           clause=clause_of(agg), scope=_owner(agg, infos, index), node=agg))


def _subqueries(tree, infos, index, out: Features) -> None:
    for sub in tree.find_all(exp.Subquery, exp.Exists):
        if isinstance(sub, exp.Subquery) and isinstance(sub.parent, exp.Exists):
            continue
        parent = sub.parent
        if isinstance(sub, exp.Exists):
            kind = "exists"
        elif isinstance(parent, (exp.From, exp.Join)):
            kind = "derived"
        elif isinstance(parent, exp.In):
            kind = "in"
        else:
            kind = "scalar"
        out.subqueries.append(SubqueryRef(kind=kind, clause=clause_of(sub),
                                          scope=_owner(sub, infos, index), node=sub))
    for sub in tree.find_all(exp.In):
        query = sub.args.get("query")
        if query is not None and not isinstance(query, exp.Subquery):
            out.subqueries.append(SubqueryRef(kind="in", clause=clause_of(sub),
                                              scope=_owner(sub, infos, index), node=query))
    out.subqueries.sort(key=lambda r: _start(r.node))


def _select_info(info: ScopeInfo, n: int, out: Features, resolver: Resolver) -> None:
    select = info.expression
    if not isinstance(select, (exp.Select, exp.SetOperation)):
        return
    group = select.args.get("group")
    order = select.args.get("order")
    limit = select.args.get("limit")
    limit_value = None
    if limit is not None:
        value = limit.args.get("expression")
        if isinstance(value, exp.Literal) and not value.is_string:
            limit_value = int(value.this)
    out.selects.append(SelectInfo(
        scope=n, distinct=bool(select.args.get("distinct")),
        group_by=list(group.expressions) if group is not None else [],
        having=(select.args["having"].this if select.args.get("having") is not None else None),
        order_by=[(o.this, bool(o.args.get("desc"))) for o in order.expressions] if order is not None else [],
        limit=limit_value, node=select))
    for join in select.args.get("joins") or []:
        table_node = join.this
        alias = table_node.alias_or_name.lower()
        ref = TableRef(name=table_key(table_node, resolver.mapping) if isinstance(table_node, exp.Table) else alias,
                       alias=table_node.alias_or_name, scope=n, node=table_node)
        on = join.args.get("on")
        kind = "natural" if join.method and join.method.lower() == "natural" else \
            (join.side or "").lower() or ("inner" if on is not None or join.args.get("using") else "cross")
        pairs = []
        for eq in (on.find_all(exp.EQ) if on is not None else []):
            left, right = eq.this, eq.expression
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                pairs.append((resolver.qualified(left), resolver.qualified(right)))
        out.joins.append(JoinRef(table=ref, kind=kind, on=on, pairs=pairs, scope=n, node=join))

