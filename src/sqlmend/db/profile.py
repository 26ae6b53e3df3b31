"""Column profiles: rows, null fraction, distinct count, min/max and sample values."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlmend.types import ColumnProfile

if TYPE_CHECKING:
    from sqlmend.db.base import Database


def profile_column(db: Database, table: str, column: str, samples: int = 5,
                   timeout: float = 30.0) -> ColumnProfile:
    """Measure one column with two read queries.

    Args:
        db: an open database.
        table: the table, spelled as stored.
        column: the column, spelled as stored.
        samples: distinct non-null values to return (the most frequent first).
        timeout: seconds allowed per query.

    Returns:
        The profile; ``min``/``max`` are the engine's (SQLite orders mixed types
        numbers < text < blobs).

    Raises:
        QueryError, QueryTimeout: the engine failed the profile queries.
    """
    t, c = db.relation(table), db.quote(column)
    rows, non_null, distinct, low, high = db._query(
        f"SELECT COUNT(*), COUNT({c}), COUNT(DISTINCT {c}), MIN({c}), MAX({c}) FROM {t}",
        timeout=timeout)[0]
    sample_rows = db._query(
        f"SELECT {c} FROM {t} WHERE {c} IS NOT NULL GROUP BY {c} ORDER BY COUNT(*) DESC, {c} "
        f"LIMIT {int(samples)}", timeout=timeout) if samples > 0 else []
    rows = int(rows)
    return ColumnProfile(
        table=table,
        column=column,
        rows=rows,
        null_fraction=(rows - int(non_null)) / rows if rows else 0.0,
        distinct=int(distinct),
        min=low,
        max=high,
        samples=[r[0] for r in sample_rows],
    )
