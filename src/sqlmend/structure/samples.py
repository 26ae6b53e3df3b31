"""A few sample values per column, read from the database (schema nodes of the QSS)."""

from __future__ import annotations

from typing import Any

from sqlmend.errors import DatabaseError

_TEXT_TYPES = ("char", "text", "clob", "string", "varchar", "")


def sample_values(db: Any, per_column: int = 2, text_only: bool = True, timeout: float = 5.0) -> dict[str, list[Any]]:
    """Return up to ``per_column`` distinct non-null values of each column.

    Args:
        db: an open database (``sqlmend.db.connect``).
        per_column: values kept per column.
        text_only: sample only text-like columns (numbers say little to a model).
        timeout: time limit per query, in seconds.

    Returns:
        ``{"table.column": [values]}``; a column whose query fails is left out.
    """
    out: dict[str, list[Any]] = {}
    for t in db.schema().tables:
        for c in t.columns:
            if text_only and not any(k in (c.type or "").lower() for k in _TEXT_TYPES if k) and c.type:
                continue
            name = db.quote(c.name)
            q = f"SELECT DISTINCT {name} FROM {db.relation(t.name)} WHERE {name} IS NOT NULL LIMIT {int(per_column)}"
            try:
                out[f"{t.name}.{c.name}"] = [r[0] for r in db.execute(q, timeout=timeout, max_rows=per_column).rows]
            except DatabaseError:
                continue
    return out
