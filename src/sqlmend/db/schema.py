"""Schema introspection shared by the catalogue-based engines (PostgreSQL, DuckDB, MySQL).

All expose ``information_schema.columns``; their key catalogues differ, so each
engine reads its own and hands the rows to :func:`assemble_schema`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlmend.types import Column, ForeignKey, Schema, Table


def columns_query(current: str = "current_schema()") -> str:
    """The query of the columns of the base tables of the current schema, in table and column order.

    Args:
        current: the engine's expression of the current schema (MySQL's is ``DATABASE()``).
    """
    return f"""
SELECT c.table_name, c.column_name, c.data_type, c.is_nullable
FROM information_schema.columns c
JOIN information_schema.tables t
  ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = {current} AND t.table_type = 'BASE TABLE'
ORDER BY c.table_name, c.ordinal_position
"""


#: :func:`columns_query` of PostgreSQL and DuckDB.
INFORMATION_SCHEMA_COLUMNS = columns_query()


def assemble_schema(dialect: str, columns: Iterable[Sequence], keys: Iterable[Sequence]) -> Schema:
    """Build a :class:`Schema` from catalogue rows.

    Args:
        dialect: the engine's dialect name.
        columns: ``(table, column, data_type, is_nullable)`` rows (``is_nullable`` is "YES"/"NO").
        keys: ``(kind, table, columns, ref_table, ref_columns)`` rows, ``kind`` being
            ``"primary"`` or ``"foreign"``.

    Returns:
        The schema (row counts are filled in by ``Database.schema()``).
    """
    tables: dict[str, Table] = {}
    for table, column, data_type, nullable in columns:
        t = tables.setdefault(table, Table(name=table))
        t.columns.append(Column(name=column, type=str(data_type).upper(), not_null=nullable == "NO"))
    for kind, table, key_columns, ref_table, ref_columns in keys:
        if table not in tables:
            continue
        if kind == "primary":
            tables[table].primary_key = list(key_columns)
            for name in key_columns:
                col = tables[table].column(name)
                if col is not None:
                    col.primary_key = True
        else:
            tables[table].foreign_keys.append(ForeignKey(
                table=table, columns=list(key_columns), ref_table=ref_table, ref_columns=list(ref_columns)))
    return Schema(tables=list(tables.values()), dialect=dialect)
