"""sqlmend in LlamaIndex's NL-to-SQL query engines: the SQL the engine's model writes passes through sqlmend
before it runs.

The engines (``NLSQLTableQueryEngine``, ``SQLTableRetrieverQueryEngine``, ``NLSQLRetriever``) take the database
as a ``SQLDatabase``, their documented extension point: the engine asks it for the tables' descriptions and
hands it the SQL to run. :class:`SqlmendSQLDatabase` is that database on sqlmend::

    from llama_index.core.query_engine import NLSQLTableQueryEngine
    from sqlmend.integrations.llamaindex import SqlmendSQLDatabase

    sql_database = SqlmendSQLDatabase("chinook.sqlite")     # or a sqlmend.Corrector, shared
    engine = NLSQLTableQueryEngine(sql_database=sql_database, llm=llm)
    response = engine.query("How many albums did AC/DC release?")
    response.metadata["sql_query"]          # the SQL that ran: sqlmend's correction of the model's
    response.metadata["sqlmend"]            # the whole answer: findings, what changed and why

Its ``run_sql`` corrects the SQL, then runs it read-only (:func:`sqlmend.mcpserver.tools.run_query`): the
rows go back to the engine as LlamaIndex's own database gives them (``result``, ``col_keys``), with
``sql_query`` the SQL that ran and ``sqlmend`` the answer. A text that is not one read-only query is
refused (:class:`~sqlmend.errors.ReadOnlyViolation`), a query that fails raises
:class:`~sqlmend.errors.QueryError`, as LlamaIndex's database raises for an invalid statement (the
engine shows it as ``Error: ...``). A result past ``max_rows`` or the answer's size limit is cut, and the
text the engine's model reads says so.

The question: LlamaIndex hands a database only the SQL. Engines announce each query through LlamaIndex's
instrumentation (``QueryStartEvent``, ``RetrievalStartEvent``); the database listens on the root dispatcher and
takes the question of the query running in the caller's context as sqlmend's evidence (none outside one).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.query import QueryEndEvent, QueryStartEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
from llama_index.core.utilities.sql_wrapper import SQLDatabase

from sqlmend.api import Corrector
from sqlmend.db.base import DEFAULT_MAX_ROWS
from sqlmend.errors import ConfigError, ReadOnlyViolation
from sqlmend.integrations.base import not_run, open_corrector
from sqlmend.mcpserver import tools
from sqlmend.mcpserver.rows import MAX_RUN_ROWS, RUN_BYTES, rows_limit

#: The question of the query running in this context (an engine's ``QueryStartEvent``), or None.
QUESTION: ContextVar[str | None] = ContextVar("sqlmend_question", default=None)


def _text(query: Any) -> str | None:
    text = getattr(query, "query_str", query)
    return text if isinstance(text, str) else None


class QuestionListener(BaseEventHandler):
    """Keeps the question of the query (or retrieval) running in the caller's context in :data:`QUESTION`."""

    @classmethod
    def class_name(cls) -> str:
        return "SqlmendQuestionListener"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, QueryStartEvent):
            QUESTION.set(_text(event.query))
        elif isinstance(event, RetrievalStartEvent):
            QUESTION.set(_text(event.str_or_query_bundle))
        elif isinstance(event, (QueryEndEvent, RetrievalEndEvent)):
            QUESTION.set(None)


_LISTENING = threading.Lock()


def listen() -> None:
    """Put a :class:`QuestionListener` on LlamaIndex's root dispatcher, once per process."""
    root = get_dispatcher()
    with _LISTENING:
        if not any(isinstance(h, QuestionListener) for h in root.event_handlers):
            root.add_event_handler(QuestionListener())


class SqlmendSQLDatabase(SQLDatabase):
    """A LlamaIndex ``SQLDatabase`` on sqlmend: descriptions from sqlmend's schema, every query corrected, then
    run read-only.

    Args:
        db: a :class:`sqlmend.Corrector` (shared, kept open by its owner), or a SQLite path or database URL
            (a Corrector is opened on it with sqlmend's default stages).
        include_tables: the tables the engine may see (default: all); unknown names are an error.
        ignore_tables: tables it may not see.
        max_rows: rows a query's answer holds at most (it also stops at 64 KB; the text says when cut).
        correct: correct each query before it runs (False: run it as given, still read-only).
        on_answer: called with each query's sqlmend answer (a log of what was corrected and why).

    Raises:
        ConfigError: an unknown table in ``include_tables`` or ``ignore_tables``, both given, a bad ``db`` or
            ``max_rows``.
        DatabaseNotFoundError, DatabaseError: as :class:`sqlmend.Corrector`.
    """

    def __init__(self, db: Corrector | str | os.PathLike, *, include_tables: Iterable[str] | None = None,
                 ignore_tables: Iterable[str] | None = None, max_rows: int = MAX_RUN_ROWS, correct: bool = True,
                 on_answer: Callable[[dict[str, Any]], Any] | None = None) -> None:
        # LlamaIndex's constructor reflects a SQLAlchemy engine; this database is sqlmend's, read-only
        self.corrector = open_corrector(db)
        names = [t.name for t in self.corrector.schema().tables]
        include, ignore = set(include_tables or ()), set(ignore_tables or ())
        if include and ignore:
            raise ConfigError("give include_tables or ignore_tables, not both")
        unknown = sorted((include | ignore) - set(names))
        if unknown:
            raise ConfigError(f"tables not in the database: {', '.join(unknown)} (it has {', '.join(names)})")
        self._usable = [n for n in names if (n in include if include else n not in ignore)]
        self.max_rows, self.correct, self.on_answer = rows_limit(max_rows, most=DEFAULT_MAX_ROWS), correct, on_answer
        listen()

    @property
    def engine(self) -> Any:
        raise ConfigError("SqlmendSQLDatabase has no SQLAlchemy engine: it reads through sqlmend, read-only")

    @property
    def metadata_obj(self) -> Any:
        raise ConfigError("SqlmendSQLDatabase has no SQLAlchemy metadata: see get_single_table_info")

    @property
    def dialect(self) -> str:
        """The database's SQL dialect (``sqlite``, ``postgres``, ``duckdb``, ``mysql``)."""
        return self.corrector.dialect

    def get_usable_table_names(self) -> list[str]:
        """The tables the engine may see, sorted."""
        return sorted(self._usable)

    def _table(self, table_name: str) -> dict[str, Any]:
        if table_name not in self._usable:
            known = ", ".join(self.get_usable_table_names())
            raise ConfigError(f"unknown table {table_name!r}: the tables are {known}")
        body = tools.describe_schema({self.corrector.db_id: self.corrector}, self.corrector.db_id)
        return next(t for t in body["tables"] if t["name"] == table_name)

    def get_table_columns(self, table_name: str) -> list[dict[str, Any]]:
        """A table's columns: ``name``, ``type``, ``comment`` (as SQLAlchemy's inspector names them)."""
        return [{"name": c["name"], "type": c["type"], "comment": c.get("comment")}
                for c in self._table(table_name)["columns"]]

    def get_single_table_info(self, table_name: str) -> str:
        """A table as the engine's prompt shows it (LlamaIndex's wording), with a few stored values of each
        text column: literals must match them exactly."""
        t = self._table(table_name)
        columns = []
        for c in t["columns"]:
            values = f", values like {', '.join(repr(v) for v in c['values'])}" if c.get("values") else ""
            text = f"{c['name']} ({c['type']}{values})"
            columns.append(text + (f": '{c['comment']}'" if c.get("comment") else ""))
        info = f"Table '{table_name}' has columns: {', '.join(columns)}"
        if t.get("comment"):
            info += f", with comment: ({t['comment']})"
        keys = [f"{fk['columns']} -> {fk['ref_table']}.{fk['ref_columns']}" for fk in t["foreign_keys"]]
        return info + (f", and foreign keys: {', '.join(keys)}" if keys else "") + "."

    def insert_into_table(self, table_name: str, data: dict) -> None:
        raise ReadOnlyViolation("SqlmendSQLDatabase is read-only: it never writes")

    def run_sql(self, command: str) -> tuple[str, dict[str, Any]]:
        """Correct ``command`` (the question: :data:`QUESTION`), run it read-only, answer as LlamaIndex does.

        Returns:
            The rows as text for the engine's model (a last line when the answer was cut), and ``result``
            (tuples), ``col_keys``, ``sql_query`` (the SQL that ran) and ``sqlmend`` (the answer).

        Raises:
            ReadOnlyViolation: the text is not one read-only query (never run).
            QueryError: the query failed, or the correction's error (an empty SQL, a time limit).
        """
        answer = tools.run_query(self.corrector, command, QUESTION.get(), correct=self.correct,
                                 max_rows=self.max_rows, max_bytes=RUN_BYTES)
        if self.on_answer is not None:
            self.on_answer(answer)
        if not answer["ran"]:
            raise not_run(answer)
        result = [tuple(row) for row in answer["rows"]]
        text = str(result)
        if answer["truncated"]:
            text += f"\n(the first {answer['row_count']} rows: the result has more)"
        return text, {"result": result, "col_keys": answer["columns"], "sql_query": answer["sql"],
                      "sqlmend": answer}


__all__ = ["QUESTION", "QuestionListener", "SqlmendSQLDatabase", "listen"]
