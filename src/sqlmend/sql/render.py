"""Turn trees back into SQL text, and SQL from one dialect into another."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError, UnsupportedError

from sqlmend.errors import SqlError, SqlParseError
from sqlmend.sql.dialects import resolve
from sqlmend.sql.parse import DIALECT_KEY, ORIGINAL_KEY, parse
from sqlmend.sql.resolve import quoted_strings_to_literals
from sqlmend.sql.schema import SchemaLike, as_mapping
from sqlmend.sql.scopes import analyse


def render(tree: exp.Expression, dialect: str = "sqlite", original: str | None = None,
           pretty: bool = False) -> str:
    """SQL text of a tree; the original text, byte for byte, when the tree is unchanged.

    "Unchanged" means: the tree equals the tree parsed from ``original`` (or, when
    ``original`` is not given, from the text the tree itself was parsed from).
    Equality is structural and exact (identifier case and literal values count).

    Args:
        tree: a tree from :func:`sqlmend.sql.parse` (possibly edited) or built by hand.
        dialect: the dialect to write.
        original: the text to return when nothing changed; defaults to the text
            remembered by :func:`parse`.
        pretty: write the SQL over several indented lines (only when it changed).

    Returns:
        The SQL text.
    """
    write = resolve(dialect)
    source = original if original is not None else tree.meta.get(ORIGINAL_KEY)
    if source is not None:
        read = tree.meta.get(DIALECT_KEY, write)
        if read == write:
            try:
                if parse(source, read) == tree:
                    return source
            except SqlParseError:
                pass
    return tree.sql(dialect=write or None, pretty=pretty)


#: Dialects where a subquery in FROM must have an alias (MySQL, MariaDB, PostgreSQL before 16); SQLite's
#: and DuckDB's need none.
_ALIASED_DERIVED_TABLES = ("mysql", "postgres")


def _name_derived_tables(tree: exp.Expression) -> None:
    """Give each unnamed subquery of a FROM or JOIN an alias (``derived_1``, ...): nothing refers to it."""
    taken = {t.alias_or_name.lower() for t in tree.find_all(exp.Table, exp.Subquery) if t.alias_or_name}
    n = 0
    for sub in list(tree.find_all(exp.Subquery)):
        if sub.alias or not isinstance(sub.parent, (exp.From, exp.Join)):
            continue
        n += 1
        while f"derived_{n}" in taken:
            n += 1
        sub.set("alias", exp.TableAlias(this=exp.to_identifier(f"derived_{n}")))


def transpile(sql: str, read: str = "sqlite", write: str = "postgres", pretty: bool = False,
              schema: SchemaLike | None = None) -> str:
    """Translate one SQL statement from one dialect to another.

    Args:
        sql: the SQL text (one statement).
        read: its dialect.
        write: the dialect to produce.
        pretty: write over several indented lines.
        schema: with ``read="sqlite"``, the database's schema: a double-quoted token that names no
            column is SQLite's string and is written as one (``"France"`` -> ``'France'``; without
            a schema it stays an identifier, as sqlglot reads it).

    A subquery in FROM without an alias (SQLite allows it) gets one for MySQL and PostgreSQL.

    Returns:
        The translated SQL.

    Raises:
        SqlParseError: the text does not parse in ``read``.
        SqlError: sqlglot cannot express the query in ``write``.
    """
    tree = parse(sql, read)
    mapping = as_mapping(schema) if schema is not None and resolve(read) == "sqlite" else None
    if mapping:
        quoted_strings_to_literals(analyse(tree, mapping), tree.meta.get(ORIGINAL_KEY, sql))
    if resolve(write) in _ALIASED_DERIVED_TABLES:
        _name_derived_tables(tree)
    try:
        return tree.sql(dialect=resolve(write) or None, pretty=pretty,
                        unsupported_level=sqlglot.ErrorLevel.RAISE)
    except (UnsupportedError, ParseError, TokenError) as e:
        raise SqlError(f"cannot write this query in {write}: {e}") from e


def restyle(sql: str, dialect: str = "sqlite", style: int = 0) -> str:
    """The same query written otherwise: other table aliases, keyword case and layout.

    What a model that knows the right answer writes: never the benchmark's text byte for
    byte. Aliases are renamed consistently (``T1`` -> ``a1``) wherever they are used; the
    result is the same query, but callers that need certainty still execute it.

    Args:
        sql: one statement.
        dialect: its dialect (and the one written).
        style: which writing (0: one line, upper-case keywords; 1: over several lines;
            2: lower-case keywords and functions); any integer, taken modulo 3.

    Returns:
        The rewritten text.

    Raises:
        SqlParseError: the text does not parse.
    """
    tree = parse(sql, dialect).copy()
    names: dict[str, str] = {}
    for alias in tree.find_all(exp.TableAlias):
        old = alias.name
        if old and old.lower() not in names:
            names[old.lower()] = f"a{len(names) + 1}"
        if old:
            alias.set("this", exp.to_identifier(names[old.lower()]))
    for col in tree.find_all(exp.Column):
        if col.table and col.table.lower() in names:
            col.set("table", exp.to_identifier(names[col.table.lower()]))
    write = resolve(dialect) or None
    style %= 3
    text = tree.sql(dialect=write, pretty=style == 1)
    if style == 2:
        text = tree.sql(dialect=write, normalize_functions="lower")
        text = _lower_keywords(text)
    return text


def _lower_keywords(text: str) -> str:
    """Lower-case the keywords of a SQL text, leaving quoted strings and identifiers alone."""
    from sqlglot.tokens import Tokenizer, TokenType

    out, last = [], 0
    try:
        tokens = Tokenizer().tokenize(text)
    except TokenError:
        return text
    for tok in tokens:
        if tok.token_type in (TokenType.STRING, TokenType.IDENTIFIER, TokenType.VAR, TokenType.NUMBER):
            continue
        start, end = tok.start, tok.end + 1
        out.append(text[last:start])
        out.append(text[start:end].lower())
        last = end
    out.append(text[last:])
    return "".join(out)
