"""The schema as the SQL layer needs it: lower-cased ``{table: {column: type}}``."""

from __future__ import annotations

from collections.abc import Mapping

from sqlmend.types import Schema

SchemaLike = Schema | Mapping[str, Mapping[str, str]]


def as_mapping(schema: SchemaLike | None) -> dict[str, dict[str, str]]:
    """Lower-cased ``{table: {column: type}}`` (SQL identifiers are case-insensitive).

    Args:
        schema: a :class:`sqlmend.types.Schema`, a ``{table: {column: type}}`` mapping or ``None``.

    Returns:
        The mapping, column order kept; empty for ``None``.
    """
    if schema is None:
        return {}
    raw = schema.mapping() if isinstance(schema, Schema) else schema
    return {str(t).lower(): {str(c).lower(): (str(ty) or "TEXT") for c, ty in cols.items()}
            for t, cols in raw.items()}
