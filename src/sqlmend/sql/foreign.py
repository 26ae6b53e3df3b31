"""A query written in another SQL dialect, read as that dialect and written in the database's own.

Users, agents and smaller models write ``SELECT TOP 3 ...``, ``ILIKE``, ``FETCH FIRST 5 ROWS ONLY``,
``UCASE(x)``, ``LEN(x)``, ``x::numeric``, ``CONCAT(a, b)``, ``CONTAINS(a, 'x')`` or ``YEAR(d)`` on a
database whose engine knows none of them. :func:`readings` reads the text in the target dialect
and then in each of :data:`READERS` (sqlglot), maps the functions sqlglot leaves for the target to
spell (:func:`map_functions`: ``YEAR(d)`` -> ``CAST(STRFTIME('%Y', d) AS INTEGER)`` on SQLite,
``CONTAINS(a, 'x')`` -> ``a LIKE '%x%'``, ``CONCAT`` -> ``||``) and writes each reading in the
target. Which reading runs is for the engine to say (the rule EX04 executes them).

A reading is offered only when it keeps everything the text names (:func:`keeps_text`): every
table, column and alias name, every literal, and as many SELECTs, joins, WHERE, GROUP BY, HAVING,
ORDER BY, set operations and row limits as the text writes. A dialect that misreads a keyword as
a name, or that needs a subquery to say what the text says, gives no reading: a transpilation
never drops a clause or a value, and never adds a table.

>>> [r.sql for r in readings("SELECT TOP 3 Name FROM country ORDER BY Population DESC", "sqlite")]
['SELECT Name FROM country ORDER BY Population DESC LIMIT 3']
>>> readings("SELECT Name FROM t WHERE YEAR(d) = 2024", "sqlite")[0].sql
"SELECT Name FROM t WHERE CAST(STRFTIME('%Y', d) AS INTEGER) = 2024"
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError, UnsupportedError
from sqlglot.tokens import TokenType

from sqlmend.errors import SqlError, SqlParseError
from sqlmend.sql.dialects import resolve
from sqlmend.sql.parse import parse

#: The dialects a failing query is read in after the target's own, in this order (the first
#: reading that runs is the one used; see the rule EX04).
READERS = ("postgres", "mysql", "tsql", "oracle", "snowflake", "bigquery", "duckdb", "sqlite",
           "spark", "trino", "redshift", "clickhouse")

#: The longest text read in other dialects (each reading parses the whole text again): 15x Spider's
#: longest query, gold or predicted.
MAX_READ_CHARS = 10_000

#: SQLite's strftime format of a date part (``EXTRACT(part FROM d)``, ``YEAR(d)``, ...).
_SQLITE_PARTS = {"YEAR": "%Y", "MONTH": "%m", "DAY": "%d", "HOUR": "%H", "MINUTE": "%M", "SECOND": "%S",
                 "DOY": "%j", "DAYOFYEAR": "%j", "DOW": "%w", "DAYOFWEEK": "%w"}
_PART_NODES = {exp.Year: "YEAR", exp.Month: "MONTH", exp.Day: "DAY"}

#: Token types that open a clause, and the tree nodes that carry it.
_CLAUSE_TOKENS = {
    TokenType.SELECT: "select", TokenType.WHERE: "where", TokenType.GROUP_BY: "group",
    TokenType.HAVING: "having", TokenType.ORDER_BY: "order", TokenType.JOIN: "join",
    TokenType.UNION: "setop", TokenType.INTERSECT: "setop", TokenType.EXCEPT: "setop",
    TokenType.LIMIT: "limit", TokenType.TOP: "limit", TokenType.FETCH: "limit",
}
_CLAUSE_NODES = {
    exp.Select: "select", exp.Where: "where", exp.Group: "group", exp.Having: "having",
    exp.Order: "order", exp.Join: "join", exp.SetOperation: "setop", exp.Limit: "limit", exp.Fetch: "limit",
}
#: Token types of names, and of literal values.
_NAME_TOKENS = {TokenType.VAR, TokenType.IDENTIFIER}
_VALUE_TOKENS = {TokenType.STRING, TokenType.NUMBER, TokenType.NATIONAL_STRING}
#: Words some tokenizers give as names that a dialect's grammar reads as keywords (``FETCH FIRST 5
#: ROWS ONLY``, ``NULLS LAST``, ``DATEPART(year, d)``): not names the reading must keep.
_SOFT_KEYWORDS = {"nulls", "only", "first", "last", "next", "rows", "row", "percent", "ties", "top",
                  "year", "month", "day", "hour", "minute", "second", "week", "quarter", "dow", "doy",
                  "epoch", "dayofweek", "dayofyear"}


@dataclass(frozen=True)
class Reading:
    """The query as one dialect reads it, written in the target dialect."""

    dialect: str  # the dialect it was read in (sqlglot's name)
    sql: str  # the query in the target dialect


def _like_pattern(value: str) -> str | None:
    """``%value%`` for a literal without LIKE wildcards or escapes (else None)."""
    return None if any(c in value for c in "%_\\") else f"%{value}%"


def _contains(node: exp.Expression, target: str) -> exp.Expression | None:
    """``CONTAINS(a, b)`` (Snowflake, and what users write): ``a LIKE '%b%'`` for a literal ``b``,
    else ``INSTR(a, b) > 0`` on SQLite / ``STRPOS(a, b) > 0`` elsewhere."""
    args = [node.this, node.expression] if isinstance(node, exp.Contains) else list(node.expressions)
    if len(args) != 2 or any(a is None for a in args):
        return None
    haystack, needle = args
    if isinstance(needle, exp.Literal) and needle.is_string:
        pattern = _like_pattern(needle.this)
        if pattern is not None:
            return exp.Like(this=haystack.copy(), expression=exp.Literal.string(pattern))
    find = "INSTR" if target == "sqlite" else "STRPOS"
    return exp.GT(this=exp.Anonymous(this=find, expressions=[haystack.copy(), needle.copy()]),
                  expression=exp.Literal.number(0))


def _sqlite_part(part: str, value: exp.Expression) -> exp.Expression | None:
    fmt = _SQLITE_PARTS.get(part.upper())
    if fmt is None:
        return None
    text = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(fmt), value.copy()])
    return exp.Cast(this=text, to=exp.DataType.build("INTEGER"))


def _concat(node: exp.Concat) -> exp.Expression | None:
    parts = [e.copy() for e in node.expressions]
    if len(parts) < 2:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = exp.DPipe(this=out, expression=p)
    return exp.Paren(this=out) if isinstance(node.parent, (exp.Binary, exp.Unary)) else out


def map_functions(tree: exp.Expression, target: str) -> exp.Expression:
    """Write functions the target engine lacks with the ones it has (in place; returns the root).

    On SQLite: ``YEAR/MONTH/DAY(d)`` and ``EXTRACT(part FROM d)`` become
    ``CAST(STRFTIME(fmt, d) AS INTEGER)``; ``CONCAT(a, b, ...)`` becomes ``a || b || ...`` (SQLite
    before 3.44 has no CONCAT). Everywhere: ``CONTAINS(a, 'x')`` becomes ``a LIKE '%x%'``.
    """
    target = resolve(target)

    def swap(node: exp.Expression) -> exp.Expression:
        new = None
        if isinstance(node, exp.Contains) or (isinstance(node, exp.Anonymous) and node.name.upper() == "CONTAINS"):
            new = _contains(node, target)
        elif target == "sqlite":
            if type(node) in _PART_NODES:
                new = _sqlite_part(_PART_NODES[type(node)], node.this)
            elif isinstance(node, exp.Extract) and isinstance(node.this, (exp.Var, exp.Identifier, exp.Column)):
                new = _sqlite_part(node.this.name, node.expression)
            elif isinstance(node, exp.Concat):
                new = _concat(node)
        return new if new is not None else node

    return tree.transform(swap, copy=False)


def _target_null_order(tree: exp.Expression, target: str) -> None:
    """Give every ORDER BY term the target's own place for NULLs (in place): a text that writes no
    NULLS FIRST/LAST means the database's default, not the default of the dialect it was read in."""
    ordering = sqlglot.Dialect.get_or_raise(target or None).NULL_ORDERING
    for node in tree.find_all(exp.Ordered):
        desc = bool(node.args.get("desc"))
        node.set("nulls_first", (ordering == "nulls_are_small" and not desc)
                 or (ordering == "nulls_are_large" and desc))


def _tokens(text: str, dialect: str) -> list | None:
    try:
        return sqlglot.Dialect.get_or_raise(dialect or None).tokenize(text)
    except (TokenError, ValueError):
        return None


def _text_parts(text: str, dialect: str) -> tuple[Counter, set[str], list[str]] | None:
    """What a text writes, by its tokens in ``dialect``: clause counts, names (not functions), values."""
    tokens = _tokens(text, dialect)
    if tokens is None:
        return None
    clauses: Counter = Counter()
    names: set[str] = set()
    values: list[str] = []
    for i, tok in enumerate(tokens):
        kind = _CLAUSE_TOKENS.get(tok.token_type)
        if kind:
            clauses[kind] += 1
        elif tok.token_type in _NAME_TOKENS:
            nxt = tokens[i + 1].token_type if i + 1 < len(tokens) else None
            if nxt != TokenType.L_PAREN and tok.text.lower() not in _SOFT_KEYWORDS:
                names.add(tok.text.lower())  # (a function's name may be spelt otherwise in the target)
        elif tok.token_type in _VALUE_TOKENS:
            values.append(tok.text)
    return clauses, names, values


def clause_counts(tree: exp.Expression) -> Counter:
    """How many SELECTs, WHEREs, joins, GROUP BYs, HAVINGs, ORDER BYs, set operations and row limits
    a tree holds (``{"select": 2, "where": 1, ...}``)."""
    found: Counter = Counter()
    for node in tree.walk():
        for cls, kind in _CLAUSE_NODES.items():
            if isinstance(node, cls):
                found[kind] += 1
                break
    return found


def keeps_text(text: str, dialect: str, tree: exp.Expression, target: str | None = None) -> bool:
    """Whether ``tree`` (a reading of ``text`` in ``dialect``, functions mapped) keeps what the text
    writes: the same number of each clause, every name that is no function's, every literal (a
    string may be contained in a longer one: ``CONTAINS(a, 'x')`` -> ``LIKE '%x%'``).

    With ``target``, a token the target's tokenizer reads as a name must stay a name too (MySQL reads
    ``"x"`` as a string, the target may read it as a column: such a reading would hide an unknown
    column behind a constant)."""
    parts = _text_parts(text, dialect)
    if parts is None:
        return False
    clauses, names, values = parts
    if target is not None and resolve(target) != dialect:
        own = _text_parts(text, resolve(target))
        if own is not None:
            names = names | own[1]
    if +clause_counts(tree) != +clauses:
        return False
    written = {i.name.lower() for i in tree.find_all(exp.Identifier)} | {
        v.name.lower() for v in tree.find_all(exp.Var)}
    if not names <= written:
        return False
    strings = [lit.this for lit in tree.find_all(exp.Literal) if lit.is_string]
    numbers = {_number(lit.this) for lit in tree.find_all(exp.Literal) if not lit.is_string}
    for value in values:
        number = _number(value)
        if number is not None and number in numbers:
            continue
        if not any(value in s for s in strings):
            return False
    return True


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _read(text: str, dialect: str, target: str) -> exp.Expression:
    """``text`` parsed in ``dialect``, its functions mapped for ``target`` and, unless it writes NULLS
    FIRST/LAST, its ORDER BY terms given the target's own place for NULLs."""
    tree = map_functions(parse(text, dialect), target)
    if not any(t.text.upper() == "NULLS" for t in _tokens(text, dialect) or []):
        _target_null_order(tree, target)
    return tree


def readings(text: str, target: str = "sqlite") -> list[Reading]:
    """The query read in the target dialect and in each of :data:`READERS`, written in the target.

    Args:
        text: one SQL statement.
        target: the database's dialect.

    Returns:
        Distinct readings, the target's own first, that differ from ``text`` and keep what it writes
        (:func:`keeps_text`); [] when no dialect reads it so, or the text is longer than
        :data:`MAX_READ_CHARS`.
    """
    target = resolve(target)
    if len(text) > MAX_READ_CHARS:
        return []
    out: list[Reading] = []
    seen = {" ".join(text.split()).rstrip(";").strip()}
    for dialect in (target, *(d for d in READERS if d != target)):
        try:
            tree = _read(text, dialect, target)
            written = tree.sql(dialect=target, unsupported_level=sqlglot.ErrorLevel.RAISE)
        except (SqlParseError, UnsupportedError, ParseError, TokenError, ValueError):
            continue
        if written in seen or not keeps_text(text, dialect, tree, target):
            continue
        seen.add(written)
        out.append(Reading(dialect, written))
    return out


def transpiled(text: str, read: str, target: str) -> str:
    """``text`` read in ``read`` and written in ``target``, as :func:`readings` writes it.

    Raises:
        SqlParseError: the text does not parse in ``read``.
        SqlError: sqlglot cannot write it in ``target``.
    """
    try:
        return _read(text, resolve(read), resolve(target)).sql(dialect=resolve(target),
                                                               unsupported_level=sqlglot.ErrorLevel.RAISE)
    except (UnsupportedError, ParseError, TokenError, ValueError) as exc:
        raise SqlError(f"cannot write this query in {target}: {exc}") from exc


__all__ = ["MAX_READ_CHARS", "READERS", "Reading", "clause_counts", "keeps_text", "map_functions", "readings", "transpiled"]
