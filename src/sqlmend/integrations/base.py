"""What the framework integrations share: the Corrector they run on, and the error a runner raises for a
query that gave no rows."""

from __future__ import annotations

import os
from typing import Any

from sqlmend.api import Corrector
from sqlmend.errors import ConfigError, QueryError, ReadOnlyViolation, SqlmendError


def open_corrector(db: Corrector | str | os.PathLike) -> Corrector:
    """The Corrector an integration runs on: ``db`` itself when it is one, else one opened on a path or URL
    with sqlmend's default stages (for other settings, make the Corrector and pass it).

    Args:
        db: a :class:`sqlmend.Corrector` (shared, kept open by its owner), or what it takes: a SQLite path,
            ``postgresql://...``, ``duckdb:///...``, ``mysql://...``.

    Raises:
        ConfigError: ``db`` of another type.
        DatabaseNotFoundError, DatabaseError: as :class:`sqlmend.Corrector`.
    """
    if isinstance(db, Corrector):
        return db
    if isinstance(db, (str, os.PathLike)):
        return Corrector(db)
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


__all__ = ["not_run", "open_corrector"]
