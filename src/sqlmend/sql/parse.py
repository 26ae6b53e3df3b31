"""Parse one SQL statement into a syntax tree; failures become :class:`SqlParseError`."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from sqlmend.errors import SqlParseError
from sqlmend.sql.dialects import resolve

#: key of ``tree.meta`` holding the text a tree was parsed from (used by ``render``)
ORIGINAL_KEY = "sqlmend_original"
#: key of ``tree.meta`` holding the dialect a tree was parsed with
DIALECT_KEY = "sqlmend_dialect"


#: The deepest tree :func:`parse` returns, in levels of nodes. Spider's deepest query (gold or
#: predicted, train and dev) has 17; far deeper trees make sqlglot's recursive walks (copy, render,
#: qualify) exceed Python's recursion limit or run for minutes, so such a text is kept as it is.
MAX_DEPTH = 200


def depth(tree: exp.Expression, stop: int | None = None) -> int:
    """The levels of nodes of ``tree`` (a lone node: 1), counted without recursion; the count
    stops a level past ``stop`` when given.

    >>> depth(parse("SELECT (1)"))
    3
    """
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, level = todo.pop()
        deepest = max(deepest, level)
        if stop is not None and deepest > stop:
            break
        todo.extend((child, level + 1) for child in node.iter_expressions())
    return deepest


#: Quoted strings and identifiers, and comments: the text where a parenthesis does not nest.
_UNNESTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|$)", re.S)


def nested_too_deeply(sql: str, limit: int = MAX_DEPTH) -> bool:
    """Whether the parentheses of ``sql`` (outside quotes and comments) nest past ``limit``: checked
    before sqlglot reads it, whose compiled parser overflows the C stack (a crash of the whole
    process, not an exception) on subqueries some thousands deep.

    >>> nested_too_deeply("SELECT ((1))", limit=2), nested_too_deeply("SELECT '((((' ", limit=2)
    (False, False)
    """
    if sql.count("(") <= limit:
        return False
    level = 0
    for match in re.finditer(r"[()]", _UNNESTED.sub("", sql)):
        level += 1 if match.group() == "(" else -1
        if level > limit:
            return True
    return False


def _position(sql: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    before = sql[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def parse(sql: str, dialect: str = "sqlite") -> exp.Expression:
    """Parse exactly one SQL statement.

    The returned tree remembers its text and dialect (``tree.meta``), so that
    :func:`sqlmend.sql.render` can give the original text back byte for byte
    when the tree was not changed.

    Args:
        sql: the SQL text; one statement, an optional trailing ``;`` and comments allowed.
        dialect: the dialect to read (``"sqlite"``, ``"postgres"``, ``"duckdb"``, ...).

    Returns:
        The root node of the tree.

    Raises:
        SqlParseError: the text is empty, does not parse, or holds more than one
            statement; ``line``/``col`` point at the problem when known.
    """
    if not isinstance(sql, str) or not sql.strip():
        raise SqlParseError("empty SQL", sql=sql if isinstance(sql, str) else "")
    read = resolve(dialect)
    if nested_too_deeply(sql):
        raise SqlParseError(f"cannot parse SQL: nested too deeply (more than {MAX_DEPTH} levels)", sql=sql)
    try:
        trees = sqlglot.parse(sql, read=read or None)
    except RecursionError:
        raise SqlParseError(f"cannot parse SQL: nested too deeply (more than {MAX_DEPTH} levels)",
                            sql=sql) from None
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        msg = err.get("description") or str(e)
        raise SqlParseError(f"cannot parse SQL: {msg}", sql=sql, line=err.get("line"),
                            col=err.get("col")) from e
    except TokenError as e:
        line = col = None
        # the tokenizer's message quotes the text read up to where it stopped
        text = str(e).split("'", 1)[1][:-1] if "'" in str(e) else ""
        if text and text in sql:
            line, col = _position(sql, sql.index(text) + len(text))
        raise SqlParseError(f"cannot tokenize SQL: {e}", sql=sql, line=line, col=col) from e
    statements = [t for t in trees if t is not None and not isinstance(t, exp.Semicolon)]
    if not statements:
        raise SqlParseError("no SQL statement (only comments or semicolons)", sql=sql)
    if len(statements) > 1:
        second = statements[1]
        start = _first_offset(second)
        line, col = _position(sql, start) if start is not None else (None, None)
        raise SqlParseError(f"expected one SQL statement, found {len(statements)}",
                            sql=sql, line=line, col=col)
    tree = statements[0]
    levels = depth(tree, MAX_DEPTH)
    if levels > MAX_DEPTH:
        raise SqlParseError(f"cannot parse SQL: nested too deeply (more than {MAX_DEPTH} levels)", sql=sql)
    tree.meta[ORIGINAL_KEY] = sql
    tree.meta[DIALECT_KEY] = read
    return tree


def _first_offset(tree: exp.Expression) -> int | None:
    """The smallest source offset recorded on any identifier of a tree, if any."""
    starts = [n.meta["start"] for n in tree.walk() if isinstance(n, exp.Expression) and "start" in n.meta]
    return min(starts) if starts else None
