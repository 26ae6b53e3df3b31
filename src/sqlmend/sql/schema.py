"""The schema as the SQL layer needs it: lower-cased ``{table: {column: type}}``, and the one place that
tells which schema table a table written in a query is.

A table's key is its plain name, or ``schema.name`` for a relation the engine's search path does not
find by its plain name (:class:`sqlmend.types.Table`). A query names a table ``t`` or ``s.t``
(a third part, a catalog or database, is left aside): :func:`table_key` gives the key of the table it
reads, ``s.t`` being the key itself or, for a table whose key is its plain name, that name.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from sqlmend.types import Schema, Table

SchemaLike = Schema | Mapping[str, Mapping[str, str]]


class Relations(dict):
    """``{table key (lower case): {column (lower case): type}}`` with the other spelling of each table the
    search path finds by its plain name: ``aliases`` ``{"schema.name": "name"}`` (lower case), and
    ``parts`` ``{key: (schema, name)}`` of the tables whose key is qualified."""

    def __init__(self, *args, aliases: Mapping[str, str] | None = None,
                 parts: Mapping[str, tuple[str, str]] | None = None, **kw) -> None:
        super().__init__(*args, **kw)
        self.aliases: dict[str, str] = dict(aliases or {})
        self.parts: dict[str, tuple[str, str]] = dict(parts or {})


def as_mapping(schema: SchemaLike | None) -> Relations:
    """Lower-cased ``{table: {column: type}}`` (SQL identifiers are case-insensitive).

    Args:
        schema: a :class:`sqlmend.types.Schema`, a ``{table: {column: type}}`` mapping or ``None``.

    Returns:
        The mapping, column order kept; empty for ``None``. From a Schema it knows the schema-qualified
        spelling of every table (:class:`Relations`).
    """
    if schema is None:
        return Relations()
    if isinstance(schema, Relations):
        return schema
    raw = schema.mapping() if isinstance(schema, Schema) else schema
    out = Relations({str(t).lower(): {str(c).lower(): (str(ty) or "TEXT") for c, ty in cols.items()}
                     for t, cols in raw.items()})
    if isinstance(schema, Schema):
        for t in schema.tables:
            if t.qualified:
                out.parts[t.name.lower()] = (t.schema.lower(), t.relname.lower())
            elif t.schema:
                out.aliases.setdefault(t.full_name.lower(), t.name.lower())
    return out


def table_name(node: exp.Table) -> str:
    """The name a table of a query is written with: ``schema.name`` when qualified, else ``name``
    (case kept; a catalog part is left aside)."""
    return f"{node.db}.{node.name}" if node.db else node.name


def table_key(node: exp.Table, mapping: Mapping[str, object] | None) -> str:
    """The schema table a table of a query reads: its key in ``mapping`` (lower case) for ``schema.name``
    written for a table whose key is its plain name, else the name as written (:func:`table_name`)."""
    name = table_name(node)
    if node.db:
        return getattr(mapping, "aliases", {}).get(name.lower(), name)
    return name


def qualified_mapping(mapping: Relations) -> dict[str, dict[str, dict[str, str]]] | None:
    """``{schema: {name: {column: type}}}`` for sqlglot's qualifier when some key is schema-qualified
    (None: every key is a plain name, and the flat mapping serves)."""
    if not mapping.parts:
        return None
    plain = {key: schema_name.split(".", 1)[0] for schema_name, key in mapping.aliases.items()}
    out: dict[str, dict[str, dict[str, str]]] = {}
    for key, columns in mapping.items():
        schema, name = mapping.parts.get(key) or (plain.get(key, ""), key)
        out.setdefault(schema, {})[name] = columns
    return out


def identifier(name: str, dialect: str = "sqlite") -> exp.Identifier:
    """A name the schema stores, as an identifier that reads it back in ``dialect``: quoted on PostgreSQL
    when it is not all lower case (an unquoted name is folded there), else as sqlglot writes any name."""
    if dialect == "postgres" and name != name.lower():
        return exp.to_identifier(name, quoted=True)
    return exp.to_identifier(name)


def table_node(table: Table | str, dialect: str = "sqlite") -> exp.Table:
    """A schema table as a query's table (``FROM`` / ``JOIN``): ``schema.name`` for one whose key is
    qualified, names quoted where ``dialect`` needs it (:func:`identifier`)."""
    if isinstance(table, str):
        return exp.to_table(table)
    if table.qualified:
        return exp.Table(this=identifier(table.relname, dialect), db=identifier(table.schema, dialect))
    if dialect == "postgres" and table.name != table.name.lower():
        return exp.Table(this=identifier(table.name, dialect))
    return exp.to_table(table.name)


def quote_built_names(tree: exp.Expression, schema: Schema) -> int:
    """On PostgreSQL, quote the names an edit wrote into ``tree`` that the schema stores in mixed case
    (``"Status"``, ``"Orders"``): unquoted, PostgreSQL would fold them to lower case and miss them.

    A name the query itself wrote keeps its spelling (a parsed identifier carries its position); only one
    an edit built (a repair generator's column, a joined table) is quoted, in place.

    Returns:
        How many identifiers were quoted.
    """
    if schema.dialect != "postgres":
        return 0
    stored = {t.relname for t in schema.tables} | {t.schema for t in schema.tables} | {
        c.name for t in schema.tables for c in t.columns}
    mixed = {name for name in stored if name and name != name.lower()}
    quoted = 0
    for ident in tree.find_all(exp.Identifier) if mixed else ():
        if not ident.quoted and "start" not in ident.meta and ident.name in mixed:
            ident.set("quoted", True)
            quoted += 1
    return quoted
