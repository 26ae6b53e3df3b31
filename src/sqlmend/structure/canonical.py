"""One spelling for every SQL the detector sees.

Gold SQL, perturbed SQL and real predictions are written in different styles
(keyword case, spacing, Spider's double-quoted strings). A detector trained on
them would learn the style, not the error; :func:`canonical_sql` renders every
query the same way, with double-quoted "columns" that name no column in scope
turned into the string literals they are.
"""

from __future__ import annotations

from sqlmend import sql as sqlmod
from sqlmend.errors import SqlError
from sqlmend.sql import ast
from sqlmend.types import Schema


def scope_tables(sel) -> dict[str, str]:
    """``{alias or name (lower): table name}`` of the tables a SELECT reads directly (``schema.name`` where
    the query qualifies it, which ``Schema.table`` finds).

    Args:
        sel: an ``ast.Select`` node.

    Returns:
        The mapping.
    """
    out: dict[str, str] = {}
    for t in sel.find_all(ast.Table):
        if t.parent_select is sel and t.name:
            out[(t.alias or t.name).lower()] = sqlmod.table_name(t)
    return out


def is_string_like(node, schema: Schema) -> bool:
    """True for a string literal, or a double-quoted "column" naming no column of the tables in scope.

    Args:
        node: a tree node.
        schema: the database schema.

    Returns:
        Whether the node is a string value.
    """
    if isinstance(node, ast.Literal):
        return node.is_string
    if isinstance(node, ast.Column) and not node.table and node.this.args.get("quoted"):
        sel = node.parent_select
        tables = scope_tables(sel).values() if sel is not None else [t.name for t in schema.tables]
        return not any((tab := schema.table(t)) and tab.column(node.name) for t in tables)
    return False


def canonical_sql(text: str, schema: Schema | None = None, dialect: str = "sqlite") -> str:
    """Render a SQL in sqlmend's one style (the text itself when it does not parse).

    Args:
        text: the SQL.
        schema: when given, double-quoted names that are no column become string literals.
        dialect: the SQL dialect.

    Returns:
        The canonical text.
    """
    try:
        tree = sqlmod.parse(text, dialect=dialect)
    except SqlError:
        return " ".join(text.split())
    if schema is not None:
        for col in list(tree.find_all(ast.Column)):
            if is_string_like(col, schema):
                col.replace(ast.Literal.string(col.name))
    try:
        return tree.sql(dialect=dialect)
    except Exception:  # sqlglot cannot write some trees back; keep the text then
        return " ".join(text.split())
