"""One item's executed queries: each distinct query runs once per correction (:class:`ItemResults`).

A correction asks the same questions of the database many times: the static rules run the input and
check their fix with the guard, the static stage guards that fix again, the search executes the
rewritten query as its original, the model gate and the final guard run both once more. On a big
database each of those is a scan. The pipeline gives each item an :class:`ItemResults`
(``db.results``, set and cleared with ``db.budget``); every query of the item that goes through
:meth:`Database.execute <sqlmend.db.base.Database.execute>` or ``execute_parsed`` (the rules, their
probes, the search's candidates, the model gate, both guards, and any stage added later) is looked up
there first, keyed by its normalized text (:func:`sql_key`), and a query run is remembered with what
it gave: its rows, its error, or the limit that stopped it.

A remembered outcome answers a later call only where a fresh run would give the same answer, so that
the cache changes no output:

* rows fetched under a row cap serve any cap they cover (a smaller cap takes the first rows and says
  ``truncated``, as a fresh fetch of the same query would);
* a query that ran ``work`` units (SQLite) serves a later call under a limit that covers that work;
  under a smaller limit it fails as a fresh run would have (the engine's own limit error, at that
  limit: :meth:`Database._limit_error <sqlmend.db.base.Database._limit_error>`); engines that count no
  work compare the seconds it took;
* an engine error or a refusal (deterministic) is the answer to every later call; a limit error is
  the answer under the same or a smaller limit, and a larger one runs the query again.

A served call costs the item's budget nothing (no work was done) and reports the work of the run it
reuses (``ExecResult.work``, ``db.last_work()``), so the search's counted budget sees the same work
it saw before. The item's trace and the run's summary count both: ``executed`` (queries the engine
ran) and ``reused`` (calls answered here). A stage of its own (the consensus of alternatives, for one)
gets the same sharing by running its queries through ``ctx.db.execute``; ``ctx.results`` is this object.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace
from typing import Any

from sqlmend.errors import DatabaseError, MemoryLimitExceeded, QueryTimeout
from sqlmend.types import ExecResult

#: A quoted string or identifier (kept as written), or a run of whitespace (made one space).
_TOKEN = re.compile(r"('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\])|\s+")
#: Text where collapsing whitespace could change meaning: comments (``--``, ``/* */``, MySQL's ``#``),
#: backslash escapes, dollar quotes.
_UNSAFE = re.compile(r"--|/\*|#|\\|\$")


def sql_key(sql: str) -> str:
    """The normalized text a query is remembered by: runs of whitespace outside quotes made one space.

    Quotes (``'...'``, ``"..."``, backticks, ``[...]``) are kept as written; a text with a comment,
    a backslash, a ``#`` or a dollar sign is only stripped (collapsing could change what it means).

    >>> sql_key("SELECT  a\\n FROM t WHERE b = 'x  y' ")
    "SELECT a FROM t WHERE b = 'x  y'"
    """
    text = sql.strip()
    if _UNSAFE.search(text):
        return text
    return _TOKEN.sub(lambda m: m.group(1) or " ", text)


@dataclass
class _Outcome:
    """What one run of a query gave: rows (``result``) or an error, under ``limit`` and ``max_rows``."""

    limit: float
    max_rows: int
    work: int | None
    seconds: float
    result: ExecResult | None = None
    error: DatabaseError | None = None


class ItemResults:
    """The queries one item ran and what each gave (see the module doc); thread-safe.

    Attributes:
        executed: queries the engine ran for the item.
        reused: calls answered from what an earlier call ran.
    """

    def __init__(self) -> None:
        self._outcomes: dict[str, list[_Outcome]] = {}
        self._lock = threading.Lock()
        self.executed = 0
        self.reused = 0

    def queries(self) -> list[str]:
        """The distinct queries that ran (their :func:`sql_key`), in the order they first ran."""
        with self._lock:
            return [k for k, outcomes in self._outcomes.items()
                    if any(not getattr(o.error, "before_engine", False) for o in outcomes)]

    def counts(self) -> dict[str, int]:
        """``{"executed": ..., "reused": ...}`` for the item's trace and the run's summary."""
        return {"executed": self.executed, "reused": self.reused}

    def lookup(self, key: str, timeout: float, max_rows: int, db: Any) -> tuple[ExecResult, int | None] | None:
        """The answer a fresh run of ``key`` would give, when a remembered run decides it; else None.

        Args:
            key: the query's :func:`sql_key`.
            timeout: the call's own limit (seconds; work on an engine that counts it).
            max_rows: the call's row cap.
            db: the database (:meth:`~sqlmend.db.base.Database._work_units` and
                :meth:`~sqlmend.db.base.Database._limit_error` say what a limit would have done).

        Returns:
            ``(result, work)``: the answer and the work of the run it stands for; None: run the query.

        Raises:
            DatabaseError: the error a fresh run would raise (remembered, or a limit the remembered
                run's work passes); the work it stands for is its ``reused_work``.
        """
        with self._lock:
            outcomes = list(self._outcomes.get(key, ()))
        for o in outcomes:
            answer = self._answer(o, timeout, max_rows, db)
            if answer is None:
                continue
            with self._lock:
                self.reused += 1
            if isinstance(answer[0], DatabaseError):
                error, work = answer
                error.reused_work = work  # type: ignore[attr-defined]
                raise error
            return answer  # type: ignore[return-value]
        return None

    @staticmethod
    def _answer(o: _Outcome, timeout: float, max_rows: int, db: Any) -> tuple[Any, int | None] | None:
        if o.error is not None:
            if isinstance(o.error, MemoryLimitExceeded):  # the rows passed the cap: as many or more would too
                return (o.error, o.work) if max_rows >= o.max_rows and timeout >= o.limit else None
            if isinstance(o.error, QueryTimeout):  # stopped at its limit: the same or a smaller one stops it
                return db._limit_error(timeout) if timeout <= o.limit else None
            return o.error, o.work  # an engine error or a refusal does not depend on the limits
        # rows: the run must have finished within the call's limit ...
        units = db._work_units(timeout)
        if (o.work > units) if (units is not None and o.work is not None) else o.seconds > timeout:
            return db._limit_error(timeout)
        # ... and hold the rows the call fetches
        result = o.result
        assert result is not None
        if result.truncated and max_rows > o.max_rows:
            return None
        if max_rows >= len(result.rows):
            return replace(result, rows=list(result.rows)), o.work
        return replace(result, rows=result.rows[:max_rows], truncated=True), o.work

    def remember(self, key: str, limit: float, max_rows: int, work: int | None, seconds: float,
                 result: ExecResult | None = None, error: DatabaseError | None = None, engine: bool = True) -> None:
        """Remember one run of ``key`` under ``limit`` and ``max_rows``: its result or its error
        (``engine=False``: refused before the engine, not counted as executed)."""
        if error is not None and not engine:
            error.before_engine = True  # type: ignore[attr-defined]
        with self._lock:
            self.executed += engine
            self._outcomes.setdefault(key, []).append(
                _Outcome(limit, max_rows, work, seconds, result=result, error=error))
