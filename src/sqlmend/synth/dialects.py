"""Gold queries written the way users, agents and smaller models write them: another dialect's
spelling, a literal in another form than the column stores, a model's raw answer.

Each :class:`Variant` pairs the query a user means (``reference``: the gold, or the gold with one
condition added when the gold has nothing of the kind) with what they wrote (``sql``). Three
families (:data:`KINDS`):

* ``dialect``: the gold in T-SQL, MySQL, PostgreSQL or Oracle (sqlglot), or one construct spelt as
  another dialect spells it: ``TOP n``, ``FETCH FIRST n ROWS ONLY``, ``ILIKE``, ``UCASE``, ``LEN``,
  ``x::numeric``, ``CONCAT``, ``CONTAINS``, ``YEAR(d)``;
* ``literal``: ``= NULL`` / ``!= NULL`` for IS [NOT] NULL, ``TRUE``/``FALSE`` for a stored text flag
  ('T'/'F'...), a date in another format than the column stores, a value without its accents, a
  year compared as a number with the text ``strftime`` returns;
* ``raw``: the gold in a markdown fence, after or before a sentence; and, as a check that nothing
  unsafe gets through, a fence holding the gold and a write (``raw write``: must stay refused).

Added conditions use the database's own data (a column holding NULLs, a stored date, flag or
accented value of a table the gold reads), so the reference returns other rows than the gold and
the variant, as written, is wrong. Whether it is, is for the database to say (``sqlmend bench
dialects``). The random choices come from ``rng``; the same seed gives the same variants.
"""

from __future__ import annotations

import random
import re
from datetime import datetime
import unicodedata
from dataclasses import dataclass
from typing import Any

from sqlmend import sql
from sqlmend.errors import SqlError
from sqlmend.rules.dates import date_part, in_format, sortable, stored_format
from sqlmend.rules.values import stored_flag
from sqlmend.sql import ast
from sqlmend.sql.dialects import resolve
from sqlmend.sql.fixes import find_node, node_path

#: The kinds of each family, in report order.
KINDS = {
    "dialect": ("T-SQL", "MySQL", "PostgreSQL", "Oracle", "TOP", "FETCH FIRST", "ILIKE", "UCASE", "LEN",
                "::numeric", "CONCAT", "CONTAINS", "YEAR"),
    "literal": ("= NULL", "!= NULL", "TRUE/FALSE", "date range", "date equality", "accents", "text = number"),
    "raw": ("fence sql", "fence", "prose before", "prose after", "prose and fence", "raw write"),
}
#: Whole-gold transpilations: kind -> sqlglot dialect.
_WHOLE = {"T-SQL": "tsql", "MySQL": "mysql", "PostgreSQL": "postgres", "Oracle": "oracle"}
#: Formats a date literal is rewritten in (the stored one is ISO, year first).
DATE_FORMATS = ("%Y/%m/%d", "%m/%d/%Y", "%B %d, %Y", "%d.%m.%Y")
_PLACEHOLDER = "sqlmend_variant_placeholder"
#: Kinds an engine's own dialect spells so: not another dialect's spelling there (PostgreSQL's ILIKE is
#: its case-insensitive LIKE, its ``::numeric`` an exact number, its CONCAT skips NULLs).
NATIVE = {"postgres": frozenset({"PostgreSQL", "ILIKE", "::numeric", "CONCAT", "FETCH FIRST"}),
          "duckdb": frozenset({"ILIKE", "::numeric", "CONCAT", "FETCH FIRST"})}


@dataclass(frozen=True)
class Variant:
    """A query as written (``sql``) and the query it means (``reference``)."""

    family: str
    kind: str
    reference: str
    sql: str


def _outer(tree: Any) -> Any:
    """The outermost SELECT of a query (None for a set operation)."""
    return tree if isinstance(tree, ast.Select) else None


def _render(tree: Any, dialect: str) -> str:
    return tree.sql(dialect=resolve(dialect) or None)


def _with_text(tree: Any, node: Any, text: str, dialect: str) -> str:
    """The query with ``node`` written as ``text`` (a spelling the dialect's writer would not produce)."""
    copy = tree.copy()
    target = find_node(copy, node_path(node))
    target.replace(ast.column(_PLACEHOLDER))
    return _render(copy, dialect).replace(_PLACEHOLDER, text)


def _with_node(tree: Any, node: Any, new: Any) -> Any:
    copy = tree.copy()
    find_node(copy, node_path(node)).replace(new)
    return copy


def _added(tree: Any, condition: Any) -> Any:
    """The query with ``condition`` added to its outermost WHERE (AND)."""
    copy = tree.copy()
    return copy.where(condition, copy=False)


def _source_tables(select: Any, schema: Any) -> list[tuple[str, str]]:
    """``(schema table, name the query uses)`` of the outermost SELECT's FROM and JOIN tables."""
    frm = select.args.get("from_") or select.args.get("from")
    nodes = ([frm.this] if frm is not None else []) + [j.this for j in select.args.get("joins") or []]
    out = []
    for node in nodes:
        if isinstance(node, ast.Table) and schema.table(node.name) is not None:
            out.append((schema.table(node.name).name, node.alias_or_name))
    return out


def _literal_sql(value: Any) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def strip_accents(text: str) -> str:
    """``text`` without its accents ('Zürich' -> 'Zurich')."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


class _Columns:
    """What the data says about the columns of the tables a gold reads (asked once per column)."""

    def __init__(self, db: Any, schema: Any, values: Any):
        self.db, self.schema, self.values = db, schema, values

    def text_values(self, table: str, column: str) -> list[str]:
        if self.values is None or self.values.is_partial(table, column):
            return []
        return self.values.values(table, column)

    def date_format(self, table: str, column: str) -> str | None:
        fmt = stored_format(self.text_values(table, column))
        return fmt if fmt is not None and sortable(fmt) else None

    def has_nulls(self, table: str, column: str) -> bool:
        q = self.db.quote
        try:
            rows = self.db.execute(f"SELECT 1 FROM {q(table)} WHERE {q(column)} IS NULL LIMIT 1", timeout=5,
                                   max_rows=1).rows
        except SqlError:
            return False
        except Exception:  # a database error: the column is not used
            return False
        return bool(rows)


def _pick(rng: random.Random, items: list) -> Any:
    return items[rng.randrange(len(items))] if items else None


def _dialect_variants(tree: Any, gold: str, schema: Any, dialect: str, rng: random.Random) -> list[Variant]:
    out: list[Variant] = []
    for kind, write in _WHOLE.items():
        try:
            text = sql.transpile(gold, read=dialect, write=write, schema=schema)
        except SqlError:
            continue
        out.append(Variant("dialect", kind, gold, text))
    select = _outer(tree)
    limit = select.args.get("limit") if select is not None else None
    if limit is not None and not select.args.get("offset") and isinstance(limit.expression, ast.Literal):
        n = limit.expression.this
        bare = select.copy()
        bare.set("limit", None)
        text = _render(bare, dialect)
        out.append(Variant("dialect", "TOP", gold, re.sub(r"^SELECT (DISTINCT )?", lambda m: f"SELECT {m.group(1) or ''}"
                                                          f"TOP {n} ", text, count=1)))
        out.append(Variant("dialect", "FETCH FIRST", gold, f"{text} FETCH FIRST {n} ROWS ONLY"))
    like = next((n for n in tree.find_all(ast.Like) if not n.args.get("negate") and not isinstance(n.parent, ast.Not)),
                None)
    if like is not None:
        a, b = (_render(like.this, dialect), _render(like.expression, dialect))
        out.append(Variant("dialect", "ILIKE", gold, _with_text(tree, like, f"{a} ILIKE {b}", dialect)))
        pattern = like.expression
        if isinstance(pattern, ast.Literal) and pattern.is_string and re.fullmatch(r"%[^%_]+%", pattern.this):
            out.append(Variant("dialect", "CONTAINS", gold,
                               _with_text(tree, like, f"CONTAINS({a}, {_literal_sql(pattern.this[1:-1])})", dialect)))
    if select is not None:
        columns = [e for e in select.expressions if isinstance(e, ast.Column)]
        if columns:
            col = _pick(rng, columns)
            inner = _render(col, dialect)
            upper = _with_node(tree, col, ast.Upper(this=col.copy()))
            out.append(Variant("dialect", "UCASE", _render(upper, dialect),
                               _with_text(tree, col, f"UCASE({inner})", dialect)))
            length = _with_node(tree, col, ast.Length(this=col.copy()))
            out.append(Variant("dialect", "LEN", _render(length, dialect), _with_text(tree, col, f"LEN({inner})", dialect)))
        if len(columns) >= 2 and not select.args.get("group"):
            a, b = columns[:2]
            joined = select.copy()
            pair = ast.DPipe(this=ast.DPipe(this=a.copy(), expression=ast.Literal.string(" ")), expression=b.copy())
            joined.set("expressions", [pair, *[e.copy() for e in select.expressions if e is not a and e is not b]])
            written = select.copy()
            written.set("expressions", [ast.column(_PLACEHOLDER), *[e.copy() for e in select.expressions
                                                                    if e is not a and e is not b]])
            concat = f"CONCAT({_render(a, dialect)}, ' ', {_render(b, dialect)})"
            out.append(Variant("dialect", "CONCAT", _render(joined, dialect),
                               _render(written, dialect).replace(_PLACEHOLDER, concat)))
        agg = next((n for n in select.find_all(ast.Avg, ast.Sum) if isinstance(n.this, ast.Column)), None)
        if agg is not None:
            cast = _with_node(tree, agg.this, ast.Cast(this=agg.this.copy(), to=ast.DataType.build("REAL")))
            out.append(Variant("dialect", "::numeric", _render(cast, dialect),
                               _with_text(tree, agg.this, f"{_render(agg.this, dialect)}::numeric", dialect)))
    return out


def _year_condition(column: Any, year: str, as_number: bool, dialect: str) -> Any:
    text = f"SELECT 1 WHERE strftime('%Y', {column.sql(dialect='sqlite')}) = {year if as_number else repr(year)}"
    return sql.parse(text, "sqlite").args["where"].this


def _literal_variants(tree: Any, schema: Any, cols: _Columns, dialect: str, rng: random.Random) -> list[Variant]:
    out: list[Variant] = []
    select = _outer(tree)
    if select is None:
        return out
    tables = _source_tables(select, schema)
    joined = bool(select.args.get("joins"))

    def col(table_name: str, column: str) -> Any:
        return ast.column(column, table=table_name if joined else None)

    # = NULL / != NULL: a column of a table the gold reads that holds NULLs
    nullable = [(t, n, c.name) for t, n in tables for c in schema.table(t).columns if cols.has_nulls(t, c.name)]
    if nullable:
        t, n, c = _pick(rng, nullable)
        target = col(n, c)
        for kind, test, op in (("= NULL", ast.Is(this=target.copy(), expression=ast.Null()), "="),
                               ("!= NULL", ast.Not(this=ast.Is(this=target.copy(), expression=ast.Null())), "!=")):
            written = _added(tree, ast.column(_PLACEHOLDER))
            out.append(Variant("literal", kind, _render(_added(tree, test), dialect),
                               _render(written, dialect).replace(_PLACEHOLDER, f"{_render(target, dialect)} {op} NULL")))
    # TRUE / FALSE: a compared flag of the gold, else a flag column of a table it reads
    analysis_flags = []
    for node in tree.find_all(ast.EQ):
        lit = node.expression
        if isinstance(node.this, ast.Column) and isinstance(lit, ast.Literal) and lit.is_string:
            owner = next((t for t, n in tables if schema.table(t).column(node.this.name) is not None
                          and (not node.this.table or node.this.table.lower() == n.lower())), None)
            stored = cols.text_values(owner, node.this.name) if owner else []
            if stored and lit.this in (stored_flag(stored, True), stored_flag(stored, False)):
                analysis_flags.append((node, lit.this == stored_flag(stored, True)))
    if analysis_flags:
        node, truth = analysis_flags[0]
        out.append(Variant("literal", "TRUE/FALSE", _render(tree, dialect),
                           _render(_with_node(tree, node.expression, ast.Boolean(this=truth)), dialect)))
    else:
        flags = [(t, n, c.name) for t, n in tables for c in schema.table(t).columns
                 if stored_flag(cols.text_values(t, c.name), True) and stored_flag(cols.text_values(t, c.name), False)]
        if flags:
            t, n, c = _pick(rng, flags)
            truth = rng.random() < 0.5
            stored = stored_flag(cols.text_values(t, c), truth)
            reference = _added(tree, ast.EQ(this=col(n, c), expression=ast.Literal.string(stored)))
            written = _added(tree, ast.EQ(this=col(n, c), expression=ast.Boolean(this=truth)))
            out.append(Variant("literal", "TRUE/FALSE", _render(reference, dialect), _render(written, dialect)))
    # dates: a column of a table the gold reads storing dates as year-first text
    dated = [(t, n, c.name, fmt) for t, n in tables for c in schema.table(t).columns
             for fmt in [cols.date_format(t, c.name)] if fmt]
    if dated:
        t, n, c, fmt = _pick(rng, dated)
        stored = sorted(cols.text_values(t, c))
        value = stored[rng.randrange(len(stored))]
        day = datetime.strptime(value, fmt)
        shape = DATE_FORMATS[rng.randrange(len(DATE_FORMATS))]
        bound = in_format(day, date_part(fmt))
        reference = _added(tree, ast.GTE(this=col(n, c), expression=ast.Literal.string(bound)))
        written = _added(tree, ast.GTE(this=col(n, c), expression=ast.Literal.string(in_format(day, shape))))
        out.append(Variant("literal", "date range", _render(reference, dialect), _render(written, dialect)))
        time_part = fmt[len(date_part(fmt)):]
        eq_shape = DATE_FORMATS[rng.randrange(len(DATE_FORMATS))] + (time_part.replace("T", " ") if time_part else "")
        reference = _added(tree, ast.EQ(this=col(n, c), expression=ast.Literal.string(value)))
        written = _added(tree, ast.EQ(this=col(n, c), expression=ast.Literal.string(in_format(day, eq_shape))))
        out.append(Variant("literal", "date equality", _render(reference, dialect), _render(written, dialect)))
        year = str(day.year)
        reference = _render(_added(tree, _year_condition(col(n, c), year, False, dialect)), dialect)
        out.append(Variant("literal", "text = number", reference,
                           _render(_added(tree, _year_condition(col(n, c), year, True, dialect)), dialect)))
        written = _added(tree, ast.EQ(this=ast.column(_PLACEHOLDER), expression=ast.Literal.number(year)))
        out.append(Variant("dialect", "YEAR", reference,
                           _render(written, dialect).replace(_PLACEHOLDER, f"YEAR({_render(col(n, c), dialect)})")))
    # accents: a compared value of the gold with accents, else an accented value of a column it reads
    accented = [lit for lit in tree.find_all(ast.Literal) if lit.is_string and strip_accents(lit.this) != lit.this
                and isinstance(lit.parent, (ast.EQ, ast.In))]
    if accented:
        lit = accented[0]
        out.append(Variant("literal", "accents", _render(tree, dialect),
                           _render(_with_node(tree, lit, ast.Literal.string(strip_accents(lit.this))), dialect)))
    else:
        values = [(t, n, c.name, v) for t, n in tables for c in schema.table(t).columns
                  for v in cols.text_values(t, c.name)[:2000] if strip_accents(v) != v and len(v) < 60]
        if values:
            t, n, c, v = _pick(rng, values)
            reference = _added(tree, ast.EQ(this=col(n, c), expression=ast.Literal.string(v)))
            written = _added(tree, ast.EQ(this=col(n, c), expression=ast.Literal.string(strip_accents(v))))
            out.append(Variant("literal", "accents", _render(reference, dialect), _render(written, dialect)))
    return out


def _raw_variants(gold: str, schema: Any) -> list[Variant]:
    one_line = " ".join(gold.split())
    table = schema.tables[0].name if schema.tables else "t"
    return [
        Variant("raw", "fence sql", gold, f"```sql\n{gold};\n```"),
        Variant("raw", "fence", gold, f"```\n{gold}\n```"),
        Variant("raw", "prose before", gold, f"Here is the SQL query that answers the question:\n{one_line};"),
        Variant("raw", "prose after", gold, f"{gold};\n\nThis query returns the rows the question asks for."),
        Variant("raw", "prose and fence", gold, "To answer this we read the tables below.\n\n"
                f"```sql\n{gold}\n```\n\nThe result lists the answer."),
        Variant("raw", "raw write", gold, f"```sql\n{gold};\nDELETE FROM {table};\n```"),
    ]


def variants(gold: str, db: Any, rng: random.Random, dialect: str = "sqlite",
             families: tuple[str, ...] = tuple(KINDS)) -> list[Variant]:
    """Every variant of ``gold`` (written in ``dialect``) that the gold and ``db``'s data allow.

    Args:
        gold: the gold query, in the database's dialect.
        db: the open database (its schema, value index and NULLs are read).
        rng: the source of the random choices.
        dialect: the database's dialect.
        families: the families to make (see :data:`KINDS`).

    Returns:
        The variants, in :data:`KINDS` order within each family; none when the gold does not parse.
    """
    try:
        tree = sql.parse(gold, dialect)
    except SqlError:
        return []
    schema = db.schema()
    out: list[Variant] = []
    if "dialect" in families:
        out += _dialect_variants(tree, gold, schema, dialect, rng)
    if "literal" in families:
        try:
            values = db.value_index()
        except Exception:  # no index: the literal kinds that need the data are left out
            values = None
        out += _literal_variants(tree, schema, _Columns(db, schema, values), dialect, rng)
    if "raw" in families:
        out += _raw_variants(gold, schema)
    order = {k: i for ks in KINDS.values() for i, k in enumerate(ks)}
    native = NATIVE.get(resolve(dialect), frozenset())
    return sorted((v for v in out if v.kind not in native), key=lambda v: (list(KINDS).index(v.family), order[v.kind]))


__all__ = ["DATE_FORMATS", "KINDS", "NATIVE", "Variant", "strip_accents", "variants"]
