"""Schema introspection shared by the catalogue-based engines (PostgreSQL, DuckDB, MySQL), and the one
place that names a relation.

Every engine reads the relations the login can read (tables, views, materialized views) from every
schema it was asked for, with their comments, and hands catalogue rows to :func:`assemble_schema`.
That function gives each relation its key (:func:`assign_keys`): its plain name when an unqualified
name finds it along the engine's search path, else ``schema.name``; so a single-schema database has
the names it always had, and a relation of another schema is named the way a query must write it.
:func:`relation_sql` writes a key back as SQL (``"sales"."Orders"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlmend.db.base import sql_string
from sqlmend.errors import ConfigError
from sqlmend.types import Column, ForeignKey, Schema, Table

#: Table types of ``information_schema.tables`` and the relation kind each is (:data:`types.RELATION_KINDS`).
TABLE_TYPES = {"BASE TABLE": "table", "VIEW": "view", "SYSTEM VERSIONED": "table", "FOREIGN": "table",
               "LOCAL TEMPORARY": "table"}


def parse_schemas(value: str | Sequence[str] | None) -> list[str] | None:
    """A schema filter as a list: ``"sales,hr"`` or ``["sales", "hr"]``; None (or empty): no filter.

    >>> parse_schemas("sales, hr"), parse_schemas(None)
    (['sales', 'hr'], None)

    Raises:
        ConfigError: a name that is empty or not a string.
    """
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    names = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"schemas: expected schema names (e.g. schemas=sales,hr), got {value!r}")
        names.append(item.strip())
    return names or None


def schema_filter(column: str, schemas: Sequence[str] | None, default: str) -> str:
    """The WHERE condition that keeps the asked schemas: ``column IN (...)``, else ``default``."""
    return f"{column} IN ({', '.join(map(sql_string, schemas))})" if schemas else default


def assign_keys(tables: list[Table], search_path: Sequence[str]) -> None:
    """Give each relation its key (``Table.name``, in place): the plain name of the first relation of
    that name along ``search_path`` (what an unqualified name finds), ``schema.name`` for every other.

    The relations come with ``name`` set to their own name and ``schema`` to their schema.
    """
    found: dict[str, Table] = {}
    for schema in search_path:
        for t in tables:
            if t.schema == schema:
                found.setdefault(t.name.lower(), t)
    for t in tables:
        if t.schema and found.get(t.name.lower()) is not t:
            t.name, t.qualified = f"{t.schema}.{t.name}", True


def assemble_listing(dialect: str, relations: Iterable[Sequence], links: Iterable[Sequence],
                     search_path: Sequence[str]) -> Schema:
    """The relations of a catalogue by name (``Database.listing``), from catalogue rows.

    Args:
        dialect: the engine's dialect name.
        relations: ``(schema, table, kind, comment)`` rows, in the order the listing keeps.
        links: ``(schema, table, ref_schema, ref_table)`` rows, one per foreign key.
        search_path: the schemas an unqualified name is looked up in, in order.

    Returns:
        A schema whose tables have their keys (:func:`assign_keys`), kinds, comments and foreign keys
        (table names only), and no columns.
    """
    tables = {(s, t): Table(name=t, schema=s, kind=kind, comment=comment or "") for s, t, kind, comment in relations}
    assign_keys(list(tables.values()), search_path)
    for s, t, ref_schema, ref_table in links:
        table, ref = tables.get((s, t)), tables.get((ref_schema, ref_table))
        if table is not None and ref is not None:
            table.foreign_keys.append(ForeignKey(table=table.name, columns=[], ref_table=ref.name, ref_columns=[]))
    return Schema(tables=list(tables.values()), dialect=dialect, search_path=list(search_path))


def relation_filter(pairs: Sequence[tuple[str, str]], schema_column: str, table_column: str) -> str:
    """The WHERE condition that keeps the relations ``(schema, name)`` of ``pairs`` (a catalogue query read
    per relation).

    >>> relation_filter([("hr", "employees")], "n.nspname", "cl.relname")
    "(n.nspname, cl.relname) IN (('hr', 'employees'))"
    """
    values = ", ".join(f"({sql_string(s)}, {sql_string(t)})" for s, t in pairs)
    return f"({schema_column}, {table_column}) IN ({values})" if pairs else "false"


def assemble_schema(dialect: str, columns: Iterable[Sequence], keys: Iterable[Sequence],
                    search_path: Sequence[str], relations: Iterable[Sequence] = (),
                    listing: Schema | None = None) -> Schema:
    """Build a :class:`Schema` from catalogue rows.

    Args:
        dialect: the engine's dialect name.
        columns: ``(schema, table, column, data_type, is_nullable, comment)`` rows in table and column
            order (``is_nullable`` is "YES"/"NO"; ``comment`` None when there is none).
        keys: ``(kind, schema, table, columns, ref_schema, ref_table, ref_columns)`` rows, ``kind``
            being ``"primary"`` or ``"foreign"``.
        search_path: the schemas an unqualified name is looked up in, in order.
        relations: ``(schema, table, kind, comment)`` rows: each relation's kind (``table``, ``view``,
            ``materialized view``) and comment (a relation without a row is a table without one).
        listing: the catalogue's listing when the rows are those of some of its relations (read per
            relation): each relation, and each that a foreign key references, keeps the key it has there.

    Returns:
        The schema (row counts are filled in by ``Database.schema()``).
    """
    about = {(s, t): (kind, comment) for s, t, kind, comment in relations}
    tables: dict[tuple[str, str], Table] = {}
    for schema, table, column, data_type, nullable, comment in columns:
        t = tables.get((schema, table))
        if t is None:
            kind, about_table = about.get((schema, table), ("table", None))
            t = tables[(schema, table)] = Table(name=table, schema=schema, kind=kind, comment=about_table or "")
        t.columns.append(Column(name=column, type=str(data_type).upper(), not_null=nullable == "NO",
                                comment=comment or ""))
    refs: list[tuple[Table, ForeignKey, str]] = []  # a foreign key and its referenced table's schema
    for kind, schema, table, key_columns, ref_schema, ref_table, ref_columns in keys:
        t = tables.get((schema, table))
        if t is None:
            continue
        if kind == "primary":
            t.primary_key = list(key_columns)
            for name in key_columns:
                col = t.column(name)
                if col is not None:
                    col.primary_key = True
        else:
            fk = ForeignKey(table=table, columns=list(key_columns), ref_table=ref_table, ref_columns=list(ref_columns))
            t.foreign_keys.append(fk)
            refs.append((t, fk, ref_schema))
    known = {(t.schema, t.relname): t for t in listing.tables} if listing is not None else {}
    if listing is None:
        assign_keys(list(tables.values()), search_path)
    else:
        for t in tables.values():
            if (t.schema, t.name) in known:
                t.name, t.qualified = known[(t.schema, t.name)].name, known[(t.schema, t.name)].qualified
    for t, fk, ref_schema in refs:  # both ends named by their keys, once every relation has one
        ref = tables.get((ref_schema, fk.ref_table)) or known.get((ref_schema, fk.ref_table))
        if ref is not None:
            fk.ref_table = ref.name
        elif ref_schema and ref_schema not in search_path[:1]:  # a table left out (a schema filter)
            fk.ref_table = f"{ref_schema}.{fk.ref_table}"
        fk.table = t.name
    return Schema(tables=list(tables.values()), dialect=dialect, search_path=list(search_path))


def relation_sql(table: Table | str, quote) -> str:
    """A relation as a query writes it: ``quote(name)``, or ``quote(schema).quote(relname)`` for one
    whose key is qualified.

    Args:
        table: the schema's :class:`Table`, or a plain name.
        quote: the engine's identifier quoting (``Database.quote``).
    """
    if isinstance(table, str):
        return quote(table)
    if table.qualified:
        return f"{quote(table.schema)}.{quote(table.relname)}"
    return quote(table.name)
