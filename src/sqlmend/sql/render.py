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
