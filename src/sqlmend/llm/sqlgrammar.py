"""A grammar of one SELECT over a given database, for grammar-constrained SQL decoding.

PICARD (Scholak et al., EMNLP 2021) rejects, token by token, SQL that does not parse or
names an unknown table or column. Here the same guarantee comes from the grammar itself:
:func:`sql_lark` writes a Lark grammar (the dialect llguidance reads) of one SQLite
``SELECT`` whose table names are the schema's tables and whose column names are the
schema's columns (a ``table.column`` pair only when the column is that table's).
Decoding under it can only produce SQL that parses and names real columns.

The grammar is canonical, to keep a small model's choices few: upper-case keywords, one
space between tokens, ``, `` between list items, identifiers that need quoting in
backticks (so the SQL can sit in a JSON string unescaped), string literals in single
quotes without ``"`` or ``\\``. Covered: ``SELECT [DISTINCT]``, ``*``, expressions with
``+ - * /``, aggregates (``COUNT SUM AVG MIN MAX``, ``COUNT(*)``, ``DISTINCT``),
``FROM`` with ``JOIN ... ON`` and table aliases ``T1`` .. ``T9`` (column labels: a
lower-case word), sub-queries in ``FROM``/``IN``/comparisons, ``WHERE`` with ``AND OR NOT``,
comparisons, ``[NOT] IN``, ``[NOT] LIKE``, ``BETWEEN``, ``IS [NOT] NULL``, ``GROUP BY``,
``HAVING``, ``ORDER BY ... ASC|DESC``, ``LIMIT``, ``UNION [ALL] / INTERSECT / EXCEPT``.

A JSON schema marks a string property as such SQL with :func:`mark` (the key
:data:`SQL_KEY` holds the tables and columns, compact and JSON-able, so the mark travels
with the schema through the call log, the cache and the OpenAI protocol).

>>> from sqlmend.types import Column, Schema, Table
>>> s = Schema([Table("singer", [Column("name"), Column("Age")])])
>>> 'tbl_0: "singer"' in sql_lark(s)
True
"""

from __future__ import annotations

import json
import re
from typing import Any

from sqlmend.types import Column, Schema, Table

#: The JSON-schema key marking a string property as "one SELECT over these tables".
SQL_KEY = "x-sqlmend-sql"

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: SQLite keywords that cannot be bare identifiers (names that are get backticks).
_RESERVED = frozenset("""ADD ALL ALTER AND AS ASC BETWEEN BY CASE CHECK COLLATE COLUMN CONSTRAINT
CREATE CROSS DEFAULT DELETE DESC DISTINCT DROP ELSE END ESCAPE EXCEPT EXISTS FOREIGN FROM FULL GLOB
GROUP HAVING IN INDEX INNER INSERT INTERSECT INTO IS ISNULL JOIN LEFT LIKE LIMIT NATURAL NOT NOTNULL
NULL OF OFFSET ON OR ORDER OUTER PRIMARY REFERENCES RIGHT SELECT SET TABLE THEN TO UNION UNIQUE
UPDATE USING VALUES WHEN WHERE""".split())

#: Most repetitions of each list (select items, joins, AND-terms, ...). A greedy small model
#: otherwise repeats one condition until the token budget cuts the answer.
LIMITS = {"setops": 2, "items": 6, "joins": 4, "group": 3, "order": 3, "or": 3, "and": 4,
          "in": 6, "terms": 3}


def _upto(first: str, rest: str, n: int) -> str:
    """``first`` followed by at most ``n`` times ``rest``, as nested optionals.

    >>> _upto("a", '", " a', 2)
    'a (", " a (", " a)?)?'
    """
    tail = ""
    for _ in range(n):
        tail = f" ({rest}{tail})?"
    return first + tail


def _seq(item: str, sep: str, most: int) -> str:
    """At most ``most`` times ``item``, with ``sep`` between.

    >>> _seq("a", '" OR "', 2)
    'a (" OR " a)?'
    """
    return _upto(item, f"{sep} {item}", most - 1)


def _core(r: str) -> str:
    """The schema-independent rules (tables and columns come from :func:`sql_lark`)."""
    n = LIMITS
    dir_ = f'{r}_expr (" ASC" | " DESC")?'
    return "\n".join([
        f"{r}: " + _upto(f"{r}_select", f"{r}_setop {r}_select", n["setops"]) + f" {r}_order? {r}_limit?",
        f'{r}_setop: " UNION " | " UNION ALL " | " INTERSECT " | " EXCEPT "',
        f'{r}_select: "SELECT " "DISTINCT "? {r}_items " FROM " {r}_from {r}_where? {r}_group? {r}_having?',
        f"{r}_items: " + _upto(f"{r}_item", f'", " {r}_item', n["items"]),
        f'{r}_item: "*" | {r}_expr (" AS " {r}_label)?',
        f"{r}_from: " + _upto(f"{r}_source", f'{r}_join {r}_source (" ON " {r}_cond)?', n["joins"]),
        f'{r}_join: " JOIN " | " LEFT JOIN " | " INNER JOIN " | ", "',
        f'{r}_source: {r}_table (" AS " {r}_alias)? | "(" {r} ")" (" AS " {r}_alias)?',
        f'{r}_where: " WHERE " {r}_cond',
        f'{r}_group: " GROUP BY " ' + _seq(f"{r}_expr", '", "', n["group"]),
        f'{r}_having: " HAVING " {r}_cond',
        f'{r}_order: " ORDER BY " ' + _seq(dir_, '", "', n["order"]),
        f'{r}_limit: " LIMIT " {r}_int',
        f"{r}_cond: " + _seq(f"{r}_conj", '" OR "', n["or"]),
        f"{r}_conj: " + _seq(f"{r}_neg", '" AND "', n["and"]),
        f'{r}_neg: "NOT "? {r}_pred',
        f"{r}_pred: {r}_expr",
        f"    | {r}_expr {r}_cmp {r}_expr",
        f'    | {r}_expr " NOT"? " IN (" ({r} | ' + _seq(f"{r}_literal", '", "', n["in"]) + ') ")"',
        f'    | {r}_expr " NOT"? " LIKE " {r}_string',
        f'    | {r}_expr " BETWEEN " {r}_expr " AND " {r}_expr',
        f'    | {r}_expr " IS " "NOT "? "NULL"',
        f'    | "(" {r}_cond ")"',
        f'{r}_cmp: " = " | " != " | " < " | " <= " | " > " | " >= "',
        f"{r}_expr: " + _seq(f"{r}_term", '(" + " | " - ")', n["terms"]),
        f"{r}_term: " + _seq(f"{r}_atom", '(" * " | " / ")', n["terms"]),
        f'{r}_atom: {r}_column | {r}_literal | {r}_agg | "(" {r} ")"',
        f'{r}_agg: {r}_fn "(" "DISTINCT "? {r}_expr ")" | "COUNT" "(" "*" ")"',
        f'{r}_fn: "COUNT" | "SUM" | "AVG" | "MIN" | "MAX"',
        f'{r}_literal: {r}_number | {r}_string | "NULL"',
        f"{r}_number: /-?[0-9]{{1,12}}(\\.[0-9]{{1,6}})?/",
        f"{r}_int: /[1-9][0-9]{{0,5}}/",
        f"{r}_string: /'([^'\"\\\\\\x00-\\x1f]|''){{0,80}}'/",
        f"{r}_alias: /T[1-9]/",
        f"{r}_label: /[a-z][a-z0-9_]{{0,15}}/",
    ])


def ident(name: str, dialect: str = "sqlite") -> str:
    """An identifier as the grammar writes it: bare when it can be, else quoted.

    SQLite quotes in backticks; other dialects in double quotes, escaped for the JSON
    string the SQL is decoded in (``\\"``).

    Args:
        name: a table or column name.
        dialect: the database's dialect.

    Returns:
        The SQL spelling.

    >>> ident("name"), ident("Official ratings"), ident("order")
    ('name', '`Official ratings`', '`order`')
    """
    if _PLAIN.match(name) and name.upper() not in _RESERVED:
        return name
    if dialect == "sqlite":
        return "`" + name.replace("`", "``") + "`"
    return '\\"' + name.replace('"', '\\"\\"') + '\\"'


def _lit(text: str) -> str:
    """A Lark string literal."""
    return json.dumps(text, ensure_ascii=False)


def _alts(words: list[str]) -> str:
    return " | ".join(_lit(w) for w in words) if words else '"NULL"'


def sql_lark(schema: Schema, rule: str = "sql") -> str:
    """Lark rules of one SELECT over ``schema``; ``rule`` is the start rule's name.

    Every rule is named ``rule`` or ``rule_*``, so the rules can be added to a bigger
    grammar (see :func:`sqlmend.llm.constrained.answer_lark`). Tables without columns
    are left out.

    Args:
        schema: the database's tables and columns.
        rule: the name of the rule that derives the whole SELECT.

    Returns:
        Lark grammar text (no ``start`` rule).
    """
    tables = [t for t in schema.tables if t.columns]
    lines = [_core(rule)]
    d = schema.dialect
    all_columns = sorted({ident(c.name, d) for t in tables for c in t.columns})
    lines.append(f"{rule}_table: " + " | ".join(f"{rule}_tbl_{i}" for i in range(len(tables))
                                                 ) if tables else f'{rule}_table: "sqlite_master"')
    qualified = [f'{rule}_tbl_{i} "." {rule}_cols_{i}' for i in range(len(tables))]
    lines.append(f"{rule}_column: {rule}_anycol | {rule}_alias \".\" {rule}_anycol"
                 + "".join(f" | {q}" for q in qualified))
    lines.append(f"{rule}_anycol: {_alts(all_columns)}")
    for i, t in enumerate(tables):
        lines.append(f"{rule}_tbl_{i}: {_lit(ident(t.name, d))}")
        lines.append(f"{rule}_cols_{i}: {_alts(sorted({ident(c.name, d) for c in t.columns}))}")
    return "\n".join(lines) + "\n"


def spec(schema: Schema) -> dict[str, Any]:
    """The compact, JSON-able form of a schema stored under :data:`SQL_KEY`.

    Args:
        schema: the database schema.

    Returns:
        ``{"dialect": ..., "tables": {table: [column, ...]}}``.
    """
    return {"dialect": schema.dialect,
            "tables": {t.name: [c.name for c in t.columns] for t in schema.tables}}


def from_spec(value: dict[str, Any]) -> Schema:
    """Inverse of :func:`spec`.

    Args:
        value: what :func:`spec` returned.

    Returns:
        A :class:`~sqlmend.types.Schema` (column types unknown).
    """
    tables = [Table(str(name), [Column(str(c)) for c in cols])
              for name, cols in (value.get("tables") or {}).items()]
    return Schema(tables, dialect=str(value.get("dialect") or "sqlite"))


def mark(json_schema: dict, schema: Schema, field: str = "sql") -> dict:
    """A copy of ``json_schema`` whose string property ``field`` must be one SELECT over ``schema``.

    Args:
        json_schema: an object schema with a string property ``field``.
        schema: the database schema.
        field: the property holding the SQL.

    Returns:
        The marked schema (the input is not changed).

    Raises:
        ValueError: the schema has no such string property.
    """
    out = json.loads(json.dumps(json_schema))
    prop = (out.get("properties") or {}).get(field)
    if not isinstance(prop, dict) or prop.get("type") != "string":
        raise ValueError(f"the JSON schema has no string property {field!r} to constrain to SQL")
    prop[SQL_KEY] = spec(schema)
    return out


def marked(json_schema: Any) -> bool:
    """True when some property of the schema carries :data:`SQL_KEY`."""
    if isinstance(json_schema, dict):
        return SQL_KEY in json_schema or any(marked(v) for v in json_schema.values())
    if isinstance(json_schema, list):
        return any(marked(v) for v in json_schema)
    return False


def unmark(json_schema: Any) -> Any:
    """A copy of the schema without :data:`SQL_KEY` marks (what a plain JSON-schema consumer gets)."""
    if isinstance(json_schema, dict):
        return {k: unmark(v) for k, v in json_schema.items() if k != SQL_KEY}
    if isinstance(json_schema, list):
        return [unmark(v) for v in json_schema]
    return json_schema
