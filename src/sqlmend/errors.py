"""One error hierarchy for sqlmend: every error we raise derives from :class:`SqlmendError`."""

from __future__ import annotations


class SqlmendError(Exception):
    """Base class of every error raised by sqlmend."""


class ConfigError(SqlmendError):
    """A setting, config file or command-line option is invalid."""


class InputError(SqlmendError):
    """An item's text cannot be used as it is given: not a string, or not valid Unicode (a lone
    surrogate, which no database, model or UTF-8 file takes). The item ends with this error."""


class DatasetError(SqlmendError):
    """A dataset or prediction file cannot be read, or does not match its dataset."""


class OutputError(SqlmendError):
    """A run's output (its checkpoint) cannot be written: the disk is full, or the file is not
    writable. Nothing is written half; a re-run resumes from what was written."""


# --- SQL -----------------------------------------------------------------


class SqlError(SqlmendError):
    """A problem with a SQL text itself (before it reaches a database)."""


class SqlParseError(SqlError):
    """The SQL does not parse. ``line``/``col`` are 1-based when known."""

    def __init__(self, message: str, sql: str = "", line: int | None = None, col: int | None = None):
        super().__init__(message)
        self.sql = sql
        self.line = line
        self.col = col


class FixError(SqlError):
    """A fix cannot be applied (unknown operation, stale path, conflicting fixes)."""


class QualifyError(SqlError):
    """Columns could not be qualified against the schema (itself a finding)."""

    def __init__(self, message: str, column: str = "", candidates: list[str] | None = None):
        super().__init__(message)
        self.column = column
        self.candidates = candidates or []


class UnknownColumnError(QualifyError):
    """A column names nothing in the tables in scope."""


class AmbiguousColumnError(QualifyError):
    """An unqualified column exists in more than one table in scope."""


class UnknownTableError(QualifyError):
    """A table names nothing in the schema."""


# --- databases -----------------------------------------------------------


class DatabaseError(SqlmendError):
    """A database could not be opened or a query failed."""


class DatabaseNotFoundError(DatabaseError):
    """The named database does not exist."""


class ReadOnlyViolation(DatabaseError):
    """The statement is not a single read-only SELECT/WITH, and was refused."""


class QueryTimeout(DatabaseError):
    """A query ran past its time limit and was interrupted."""

    def __init__(self, message: str, timeout: float | None = None):
        super().__init__(message)
        self.timeout = timeout


class WorkLimitExceeded(QueryTimeout):
    """A query ran past its work limit (counted by the engine, e.g. SQLite VM instructions) and was
    interrupted: the same query stops at the same point on an idle machine and a busy one."""

    def __init__(self, message: str, timeout: float | None = None, work: int | None = None):
        super().__init__(message, timeout=timeout)
        self.work = work


class MemoryLimitExceeded(QueryTimeout):
    """A query's result, or one value in it, passed the memory limit and was stopped
    (:data:`sqlmend.db.base.MAX_RESULT_BYTES`, :data:`~sqlmend.db.base.MAX_VALUE_BYTES`, the engine's
    own memory limit): like a time limit, it says the query is too big to answer, not that it is wrong."""


class QueryError(DatabaseError):
    """The engine rejected or failed the query (syntax, unknown name, type, ...)."""

    def __init__(self, message: str, engine_message: str = ""):
        super().__init__(message)
        self.engine_message = engine_message or message


class ItemAborted(SqlmendError):
    """Something stopped the item's correction: it ends the item with this clear error. Outside the
    item's input (a safety net, the database going away) a re-run of the batch completes it; a query
    past the item's limits (:class:`ItemLimitExceeded`) ends the same way again.

    Not a :class:`DatabaseError`, so that no stage takes it for a failing candidate or query and
    gives another answer: every stage and catch-all lets it through (``except ItemAborted: raise``).
    """


class ItemLimitExceeded(ItemAborted):
    """The item's input query passed its own limit (work, time or memory), or the item's queries and
    checks together used up its one budget (:class:`sqlmend.db.base.WorkBudget`): the item ends at once
    with this clear reason and the input is kept. A property of the input, not of the machine (on
    SQLite the limits count work): a re-run gives the same, so it is not retried."""


class DeadlineExceeded(ItemAborted):
    """A wall-clock safety net fired ("timed out"): a query past its own, or the item past its
    wall-clock deadline (:class:`sqlmend.db.base.WorkBudget`); the machine is far slower than the
    counted limits assume. The input is kept; a re-run of a batch retries the item."""


class ItemCancelled(ItemAborted):
    """Whoever asked for the item stopped waiting (the service's or the MCP server's deadline passed):
    its work stops at the next unit of work (:meth:`sqlmend.db.base.WorkBudget.cancel`), so that the
    threads serve the next requests. The input is kept."""


class DatabaseUnavailable(ItemAborted):
    """The database file failed a query, not the query itself: locked by a writer past the busy
    timeout, or rewritten or damaged under the reader."""


# --- models --------------------------------------------------------------


class ModelError(SqlmendError):
    """A language-model backend failed."""


class ModelTimeout(ModelError):
    """A model call ran past its time limit."""


class StructuredOutputError(ModelError):
    """A model's answer did not match the requested schema, even after a retry.

    ``attempts``, ``tokens_in`` and ``tokens_out`` are what every attempt cost together
    (the calls were made and paid for even though the answer is unusable).
    """

    def __init__(self, message: str, raw: str = "", attempts: int = 1, tokens_in: int = 0,
                 tokens_out: int = 0):
        super().__init__(message)
        self.raw = raw
        self.attempts = attempts
        self.tokens_in = tokens_in
        self.tokens_out = tokens_out


class CassetteMiss(ModelError):
    """A replay backend in strict mode has no recording for this call."""
