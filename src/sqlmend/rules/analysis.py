"""What the rules read from one query: its tree, the table each column belongs to, its comparisons.

The analysis works on the tree as parsed (not a normalized copy), so that a
finding can point at the very node a fix replaces: :func:`node_path` gives a
node's address, which the fix engine (:mod:`sqlmend.sql.fixes`) follows in a fresh parse.

Column resolution is :meth:`sqlmend.sql.Resolver.resolve` (SQL's scoping: a
column belongs to the sources of the nearest SELECT, then to those of the
enclosing SELECTs (correlated subqueries). An unqualified name that more than
one source of the same SELECT owns is *ambiguous*; one that no source owns is
*unknown*).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmend import sql
from sqlmend.errors import SqlParseError
from sqlmend.sql import ast
from sqlmend.types import Schema


@dataclass
class Source:
    """A table or derived table in a SELECT's FROM/JOIN."""

    alias: str  # the name the query uses for it (lower-cased)
    table: str | None  # the schema table, or None for a derived table / unknown table
    columns: dict[str, str]  # lower-cased column name -> column name as the schema spells it
    node: Any  # the Table or Subquery node
    join: Any = None  # the Join node that brings it in (None for FROM)
    known: bool = True  # False: a table the schema does not have


@dataclass
class ColumnRef:
    """One column written in the query, and what it resolves to."""

    node: Any  # ast.Column
    status: str  # ok | unknown | ambiguous | derived | alias | unknown_qualifier | unknown_table
    table: str | None = None  # schema table
    column: str | None = None  # schema column name
    alias: str | None = None  # the source alias it resolved through
    candidates: list[Source] = field(default_factory=list)  # sources of an ambiguous name
    select: Any = None  # the SELECT whose scope it is written in

    @property
    def ref(self) -> str:
        return f"{self.table}.{self.column}" if self.table and self.column else self.node.sql()


@dataclass
class Comparison:
    """``column <op> literal`` (op: eq, neq, in, not_in, gt, gte, lt, lte, like)."""

    column: ColumnRef
    op: str
    literals: list[Any]  # ast.Literal nodes (a Neg-wrapped number is kept as the Neg node)
    node: Any  # the comparison node


@dataclass
class ColumnPair:
    """``a.x = b.y`` between two columns of different sources (a join condition)."""

    left: ColumnRef
    right: ColumnRef
    node: Any  # the EQ node
    in_join: bool  # written in a JOIN ... ON (else in WHERE)


_OPS = {ast.EQ: "eq", ast.NEQ: "neq", ast.GT: "gt", ast.GTE: "gte", ast.LT: "lt",
        ast.LTE: "lte", ast.Like: "like"}
_FLIP = {"gt": "lt", "lt": "gt", "gte": "lte", "lte": "gte"}


def literal_value(node: Any) -> Any:
    """The Python value of a literal node (``Neg`` of a number included); ``None`` if not literal."""
    if isinstance(node, ast.Neg) and isinstance(node.this, ast.Literal) and not node.this.is_string:
        value = literal_value(node.this)
        return -value if value is not None else None
    if not isinstance(node, ast.Literal):
        return None
    if node.is_string:
        return node.this
    text = node.this
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


def _from_of(select: Any) -> Any:
    return select.args.get("from_") or select.args.get("from")


class QueryAnalysis:
    """A parsed query with its columns resolved against a schema.

    Args:
        text: the SQL text.
        schema: the database schema.
        dialect: the sqlglot dialect of the text.
    """

    def __init__(self, text: str, schema: Schema, dialect: str = "sqlite"):
        self.text = text
        self.schema = schema
        self.dialect = dialect
        self.parse_error: SqlParseError | None = None
        self.tree: Any = None
        try:
            self.tree = sql.parse(text, dialect=dialect)
        except SqlParseError as exc:
            self.parse_error = exc
            return
        self._sources: dict[int, list[Source]] = {}
        self._resolver = sql.Resolver(self.tree, schema)
        self.columns: list[ColumnRef] = [self._resolve(c) for c in self.tree.find_all(ast.Column)
                                         if not isinstance(c.this, ast.Star)]
        self._by_node = {id(c.node): c for c in self.columns}

    # --- sources -------------------------------------------------------------

    def sources(self, select: Any) -> list[Source]:
        """The sources of one SELECT, in FROM/JOIN order."""
        key = id(select)
        if key not in self._sources:
            out: list[Source] = []
            frm = _from_of(select)
            items = ([(frm.this, None)] if frm is not None else []) + [
                (j.this, j) for j in select.args.get("joins") or []]
            for node, join in items:
                out.append(self._source(node, join))
            self._sources[key] = out
        return self._sources[key]

    def _source(self, node: Any, join: Any) -> Source:
        alias = (node.alias_or_name or "").lower()
        if isinstance(node, ast.Table):
            table = self.schema.table(sql.table_key(node, self._resolver.mapping))
            if table is None:
                return Source(alias, None, {}, node, join, known=False)
            return Source(alias, table.name, {c.name.lower(): c.name for c in table.columns},
                          node, join)
        inner = node.this if isinstance(node, ast.Subquery) else None
        names = getattr(inner, "named_selects", []) if inner is not None else []
        return Source(alias, None, {n.lower(): n for n in names}, node, join)

    def select_of(self, node: Any) -> Any:
        """The SELECT whose scope a node is written in (``None`` outside any)."""
        return node.find_ancestor(ast.Select)

    def _resolve(self, col: Any) -> ColumnRef:
        """A column's resolution, by the one scope-aware resolver (:meth:`sqlmend.sql.Resolver.resolve`),
        expressed with this query's sources (schema spellings, FROM/JOIN order)."""
        first = self.select_of(col)
        b = self._resolver.resolve(col)
        if b.status in ("unknown", "unknown_qualifier") and b.scope is None:
            return ColumnRef(col, b.status, alias=b.alias, select=first)
        sources = self.sources(b.scope.expression) if isinstance(b.scope.expression, ast.Select) else []
        if b.status == "ambiguous":
            return ColumnRef(col, b.status, candidates=[s for s in sources if s.alias in b.candidates], select=first)
        src = next((s for s in sources if s.alias == b.alias), None)
        if b.status == "ok" and src is not None:
            return ColumnRef(col, "ok", src.table, src.columns[col.name.lower()], src.alias, select=first)
        if b.status == "unknown" and src is not None:
            return ColumnRef(col, "unknown", src.table, None, src.alias, select=first)
        return ColumnRef(col, b.status, alias=b.alias, select=first)

    def ref(self, node: Any) -> ColumnRef | None:
        """The resolution of a Column node of this tree."""
        return self._by_node.get(id(node))

    # --- comparisons -----------------------------------------------------------

    def as_literal(self, node: Any) -> Any:
        """The value of a literal node, or ``None``.

        In SQLite a double-quoted name that no column has is a string
        (``name = "Aberdeen"``), so such a "column" counts as a string literal.
        """
        value = literal_value(node)
        if value is not None or self.dialect != "sqlite" or not isinstance(node, ast.Column):
            return value
        ref = self.ref(node)
        if (isinstance(node.this, ast.Identifier) and node.this.quoted and not node.table
                and ref is not None and ref.status == "unknown"):
            return node.name
        return None

    def _is_value(self, node: Any) -> bool:
        return self.as_literal(node) is not None

    def comparisons(self) -> list[Comparison]:
        """Every ``column <op> literal`` of the query (both orientations, IN lists included; found once,
        a new list each call)."""
        if self.tree is None:
            return []
        if getattr(self, "_comparisons", None) is None:
            self._comparisons = self._find_comparisons()
        return list(self._comparisons)

    def _find_comparisons(self) -> list[Comparison]:
        out: list[Comparison] = []
        for node in self.tree.walk():
            op = _OPS.get(type(node))
            if op:
                left, right = node.this, node.expression
                if self._is_value(left) and isinstance(right, ast.Column):
                    left, right, op = right, left, _FLIP.get(op, op)
                if isinstance(left, ast.Column) and self._is_value(right) and self.ref(left):
                    out.append(Comparison(self.ref(left), op, [right], node))
            elif isinstance(node, ast.In) and isinstance(node.this, ast.Column) and self.ref(node.this):
                items = node.expressions
                if items and all(self._is_value(i) for i in items):
                    negated = isinstance(node.parent, ast.Not)
                    out.append(Comparison(self.ref(node.this), "not_in" if negated else "in",
                                          list(items), node))
        return out

    def column_pairs(self) -> list[ColumnPair]:
        """Every ``a.x = b.y`` between columns of two different sources of one SELECT."""
        if self.tree is None:
            return []
        out = []
        for node in self.tree.find_all(ast.EQ):
            a, b = node.this, node.expression
            if not (isinstance(a, ast.Column) and isinstance(b, ast.Column)):
                continue
            ra, rb = self.ref(a), self.ref(b)
            if not (ra and rb and ra.status == rb.status == "ok") or ra.alias == rb.alias:
                continue
            out.append(ColumnPair(ra, rb, node, node.find_ancestor(ast.Join) is not None))
        return out
