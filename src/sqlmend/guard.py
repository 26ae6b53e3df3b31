"""The validate-or-retain guard (MIRA §3.3.3): keep a rewrite only when it is proven harmless to try.

Every stage of sqlmend that rewrites SQL passes its candidate through
:func:`validate`. The candidate is kept only if it

1. is non-empty,
2. differs from the input (ignoring whitespace),
3. parses as one read-only ``SELECT`` / ``WITH`` query (set operations included),
4. executes on the database within the time limit,
5. returns at least one column, and
6. returns a result different from the input's (a candidate with the same
   observed result is a no-op).

Otherwise the input is returned unchanged, and the verdict says why.

>>> from sqlmend.db import connect                      # doctest: +SKIP
>>> with connect("concert_singer.sqlite") as db:        # doctest: +SKIP
...     validate(db, "SELECT name FROM singer WHERE age = '52'",
...              "SELECT name FROM singer WHERE age = 52").accepted
True
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlmend import sql
from sqlmend.errors import QueryError, QueryTimeout, ReadOnlyViolation, SqlError
from sqlmend.types import ExecResult, GuardVerdict


def _squash(text: str) -> str:
    return " ".join(text.split()).rstrip(";").strip()


def read_only_problem(text: str, dialect: str = "sqlite", extra: frozenset[str] = frozenset()) -> str | None:
    """Say why a SQL text is not one read-only SELECT/WITH query, or return ``None`` if it is.

    Args:
        text: the SQL text.
        dialect: the sqlglot dialect to parse it with.
        extra: functions allowed beside the dialect's list (a function the list does not know is left
            to the database, which asks its engine).

    Returns:
        ``None`` for a single read-only query, else a short reason.
    """
    return _read_only_tree(text, dialect, extra)[1]


def _read_only_tree(text: str, dialect: str, extra: frozenset[str] = frozenset()) -> tuple[Any, str | None]:
    """Parse ``text`` once: ``(tree, None)`` for one read-only query, else ``(None, reason)``."""
    try:
        tree = sql.parse(text, dialect=dialect)  # refuses several statements
    except SqlError as exc:
        return None, f"does not parse as one statement: {exc}"
    try:
        sql.check_read_only_tree(tree, dialect, extra)
    except ReadOnlyViolation as exc:
        return None, f"is not a read-only SELECT/WITH query: {exc}"
    return tree, None


def _canon(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def same_result(a: ExecResult, b: ExecResult, ordered: bool = False) -> bool:
    """Return True when two results are observably the same.

    Rows are compared as multisets (``ordered=False``) or as sequences; the
    number of columns must match, column names do not matter.

    Args:
        a: one result.
        b: the other result.
        ordered: compare row order too (the query has a top-level ORDER BY).

    Returns:
        Whether the results are the same.
    """
    if len(a.columns) != len(b.columns):
        return False
    rows_a = [tuple(_canon(v) for v in r) for r in a.rows]
    rows_b = [tuple(_canon(v) for v in r) for r in b.rows]
    if ordered:
        return rows_a == rows_b
    try:
        return Counter(rows_a) == Counter(rows_b)
    except TypeError:  # unhashable values
        return sorted(map(repr, rows_a)) == sorted(map(repr, rows_b))


def validate(
    db: Any,
    original_sql: str,
    candidate_sql: str | None,
    timeout: float = 30.0,
    *,
    max_rows: int = 10_000,
    original_result: ExecResult | None = None,
    original_error: str | None = None,
) -> GuardVerdict:
    """Decide whether a candidate rewrite replaces the input (validate-or-retain, MIRA §3.3.3).

    Args:
        db: an open database (``sqlmend.db.connect``): ``dialect`` and ``execute``.
        original_sql: the SQL the stage received.
        candidate_sql: the rewrite it proposes.
        timeout: seconds each query may run.
        max_rows: row cap for each execution.
        original_result: the input's result when the caller already has it.
        original_error: why the input failed to execute, when the caller already knows.

    Returns:
        A :class:`~sqlmend.types.GuardVerdict`: ``accepted`` with the candidate
        as ``sql``, or rejected with the input as ``sql`` and the reason.
    """

    def reject(reason: str) -> GuardVerdict:
        return GuardVerdict(accepted=False, reason=reason, sql=original_sql)

    if candidate_sql is None or not candidate_sql.strip():
        return reject("empty candidate")
    if _squash(candidate_sql) == _squash(original_sql):
        return reject("candidate identical to input")
    dialect = getattr(db, "dialect", "sqlite")
    tree, problem = _read_only_tree(candidate_sql, dialect, getattr(db, "allow_functions", frozenset()))
    if problem:
        return reject(f"candidate {problem}")
    try:
        cand = db.execute(candidate_sql, timeout=timeout, max_rows=max_rows)
    except QueryTimeout:
        return reject(f"candidate timed out after {timeout:g} s")
    except ReadOnlyViolation as exc:
        return reject(f"candidate refused as not read-only: {exc}")
    except QueryError as exc:
        return reject(f"candidate failed: {exc.engine_message}")
    if not cand.columns:
        return reject("candidate returns no columns")

    if original_result is None and original_error is None:
        try:
            original_result = db.execute(original_sql, timeout=timeout, max_rows=max_rows)
        except (QueryTimeout, QueryError, ReadOnlyViolation) as exc:
            original_error = str(exc) or type(exc).__name__
    if original_result is None:
        return GuardVerdict(True, f"accepted: input failed ({original_error}), candidate executes",
                            candidate_sql)
    if same_result(original_result, cand, ordered=tree.args.get("order") is not None):
        return reject("result unchanged (no-op)")
    return GuardVerdict(True, "accepted: candidate executes and changes the result", candidate_sql)
