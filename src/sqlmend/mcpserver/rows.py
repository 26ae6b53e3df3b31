"""A query's result as an answer an agent or an application can hold: JSON-ready values, its rows
bounded in count and in bytes, and a text rendering for a model to read.

The database already caps what a query may fetch (``max_rows``, and 64 MB: :data:`sqlmend.db.base.MAX_RESULT_BYTES`);
an answer is smaller still, as it goes into a model's context: at most ``max_rows`` rows (:data:`RUN_ROWS`
unless asked, never more than :data:`MAX_RUN_ROWS`) and :data:`RUN_BYTES` of values, counted as the
result cap counts them (:func:`sqlmend.db.base.row_bytes`). A cut answer says so (``truncated``,
``truncated_by``), so no caller takes the first rows for the whole result::

    >>> from sqlmend.types import ExecResult
    >>> bounded(ExecResult(["Name"], [("Joe",), ("Tim",), ("Ann",)], truncated=False), max_rows=2)
    {'columns': ['Name'], 'rows': [['Joe'], ['Tim']], 'row_count': 2, 'truncated': True, 'truncated_by': 'max_rows'}
"""

from __future__ import annotations

import math
from typing import Any

from sqlmend.db.base import row_bytes
from sqlmend.errors import ConfigError
from sqlmend.types import ExecResult

#: Rows an answer holds unless the caller asks for another number (``max_rows``).
RUN_ROWS = 100
#: The most rows an answer may hold.
MAX_RUN_ROWS = 1000
#: The most bytes of values an answer holds (text lengths, 8 a number: :func:`~sqlmend.db.base.row_bytes`).
RUN_BYTES = 64 * 1024


def rows_limit(max_rows: Any, most: int = MAX_RUN_ROWS) -> int:
    """``max_rows`` checked: a whole number from 1 to ``most`` (None: :data:`RUN_ROWS`).

    Raises:
        ConfigError: anything else, naming the range.
    """
    if max_rows is None:
        return RUN_ROWS
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= most:
        raise ConfigError(f"max_rows must be a whole number from 1 to {most}, got {max_rows!r}")
    return max_rows


def jsonable(value: Any) -> Any:
    """A value of a result row as JSON holds it: text, numbers, true/false and null as they are; a blob as
    ``<blob: N bytes>``; a float that is not finite, a date, a decimal or anything else as its text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<blob: {len(bytes(value))} bytes>"
    iso = getattr(value, "isoformat", None)
    return iso() if callable(iso) else str(value)


def bounded(result: ExecResult, max_rows: int = RUN_ROWS, max_bytes: int = RUN_BYTES) -> dict[str, Any]:
    """The rows of ``result`` an answer holds: JSON-ready, at most ``max_rows`` of them and ``max_bytes``.

    Args:
        result: what the database returned (fetched with ``max_rows`` or more).
        max_rows: rows kept at most.
        max_bytes: bytes of values kept at most; the first row past it is left out with all after it.

    Returns:
        ``columns``, ``rows`` (lists of values), ``row_count`` (rows kept), ``truncated`` (the result
        has more rows than kept) and ``truncated_by`` (``"max_rows"``, ``"max_bytes"`` or None).
    """
    rows: list[list[Any]] = []
    size = 0
    cut = None
    for row in result.rows:
        if len(rows) == max_rows:
            cut = "max_rows"
            break
        values = [jsonable(v) for v in row]
        size += row_bytes(tuple(values))
        if size > max_bytes:
            cut = "max_bytes"
            break
        rows.append(values)
    if cut is None and result.truncated:
        cut = "max_rows"
    return {"columns": list(result.columns), "rows": rows, "row_count": len(rows), "truncated": cut is not None,
            "truncated_by": cut}


def table_text(body: dict[str, Any]) -> str:
    """Rows of an answer for a reader: the column names, then a line per row (values apart by `` | ``),
    then how many and whether more exist."""
    lines = [" | ".join(body["columns"])]
    lines += [" | ".join("NULL" if v is None else str(v) for v in row) for row in body["rows"]]
    count = f"{body['row_count']} row" + ("" if body["row_count"] == 1 else "s")
    if body["truncated"]:
        why = "the answer's size limit" if body["truncated_by"] == "max_bytes" else "max_rows"
        count += f" shown; the result has more ({why}): aggregate, filter or add a LIMIT"
    return "\n".join([*lines, count])


__all__ = ["MAX_RUN_ROWS", "RUN_BYTES", "RUN_ROWS", "bounded", "jsonable", "rows_limit", "table_text"]
