"""What the framework integrations share: the Corrector they run on, and the error a runner raises for a
query that gave no rows."""

from __future__ import annotations

import os
from typing import Any

from sqlmend.api import Corrector
from sqlmend.errors import ConfigError, QueryError, ReadOnlyViolation, SqlmendError


def open_corrector(db: Corrector | str | os.PathLike, **settings: Any) -> Corrector:
    """The Corrector an integration runs on: ``db`` itself when it is one, else one opened on a path or URL.

    Args:
        db: a :class:`sqlmend.Corrector` (shared, kept open by its owner), or what it takes: a SQLite path,
            ``postgresql://...``, ``duckdb:///...``, ``mysql://...``.
        settings: :class:`sqlmend.Corrector`'s keyword arguments (``stages``, ``timeout``, ...), for a path or URL.

    Raises:
        ConfigError: ``db`` of another type, or settings beside a Corrector.
        DatabaseNotFoundError, DatabaseError: as :class:`sqlmend.Corrector`.
    """
    if isinstance(db, Corrector):
        if settings:
            raise ConfigError(f"settings ({', '.join(sorted(settings))}) go to the Corrector you pass, not beside it")
        return db
    if isinstance(db, (str, os.PathLike)):
        return Corrector(db, **settings)
    raise ConfigError(f"db is a sqlmend.Corrector, a path or a URL, got {type(db).__name__}")


def not_run(answer: dict[str, Any]) -> SqlmendError:
    """The error a runner raises for a query that gave no rows, its answer attached as ``.answer``.

    A refused text is a :class:`~sqlmend.errors.ReadOnlyViolation` (the finding EX03's message); a problem of
    the item (an empty SQL, a query past its limit) or of the run (the engine's error) a
    :class:`~sqlmend.errors.QueryError` with that text.
    """
    if answer["refused"]:
        message = next((f["message"] for f in answer["findings"] if f["code"] == "EX03"),
                       "refused: not one read-only query")
        exc: SqlmendError = ReadOnlyViolation(message)
    else:
        exc = QueryError(answer["error"] or answer["run_error"] or "the query did not run")
    exc.answer = answer  # type: ignore[attr-defined]
    return exc


def cut_error(answer: dict[str, Any], max_rows: int) -> SqlmendError:
    """The error a runner whose only answer is its rows raises for a result it would have to cut: the first
    rows alone would be a silent wrong answer (``.answer`` attached)."""
    limit = f"{max_rows:,} rows" if answer["truncated_by"] == "max_rows" else "its size limit"
    exc = QueryError(f"the result has more rows than the runner returns ({limit}): aggregate, filter or add a "
                     "LIMIT, or raise the runner's max_rows")
    exc.answer = answer  # type: ignore[attr-defined]
    return exc


__all__ = ["cut_error", "not_run", "open_corrector"]
