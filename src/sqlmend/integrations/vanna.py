"""sqlmend in Vanna 2.0: a ``SqlRunner`` that corrects the SQL its agent writes, then runs it read-only.

Vanna's ``RunSqlTool`` takes its database as a ``SqlRunner`` (``run_sql(args, context) -> DataFrame``).
:class:`SqlmendRunner` is one on sqlmend; :class:`ConversationQuestion`, a ``ToolContextEnricher``, gives it
the user's question from the conversation, as sqlmend's evidence::

    from vanna import Agent, ToolRegistry
    from vanna.tools import RunSqlTool
    from sqlmend.integrations.vanna import ConversationQuestion, SqlmendRunner

    tools = ToolRegistry()
    tools.register_local_tool(RunSqlTool(sql_runner=SqlmendRunner("chinook.sqlite")), access_groups=[])
    store = MemoryConversationStore()
    agent = Agent(llm_service=llm, tool_registry=tools, user_resolver=..., agent_memory=...,
                  conversation_store=store, context_enrichers=[ConversationQuestion(store)])

The DataFrame holds the rows of the SQL that ran (sqlmend's correction of the model's, or the SQL itself when
nothing is proven wrong); ``df.attrs["sqlmend"]`` is the whole answer (findings, what changed and why). A
text that is not one read-only query is refused (:class:`~sqlmend.errors.ReadOnlyViolation`) and a query
that fails raises :class:`~sqlmend.errors.QueryError`: ``RunSqlTool`` reports either to the model as an error.
A DataFrame is the runner's only answer, with no room to say that rows were left out, so a result larger than
``max_rows`` (or 64 MB) is an error that says so, never its first rows alone.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

import pandas as pd
from vanna.capabilities.sql_runner import RunSqlToolArgs, SqlRunner
from vanna.core.enricher import ToolContextEnricher
from vanna.core.tool import ToolContext

from sqlmend.api import Corrector
from sqlmend.db.base import DEFAULT_MAX_ROWS, MAX_RESULT_BYTES
from sqlmend.errors import QueryError, SqlmendError
from sqlmend.integrations.base import not_run, open_corrector
from sqlmend.mcpserver import tools
from sqlmend.mcpserver.rows import rows_limit

#: The key of ``ToolContext.metadata`` that holds the user's question (:class:`ConversationQuestion` sets it).
QUESTION_KEY = "question"


class SqlmendRunner(SqlRunner):
    """A Vanna ``SqlRunner`` that corrects each query with sqlmend, then runs it read-only.

    Args:
        db: a :class:`sqlmend.Corrector` (shared, kept open by its owner), or a SQLite path or database URL
            (a Corrector is opened on it with sqlmend's default stages).
        max_rows: the most rows a result may have (more: an error, not the first rows).
        correct: correct each query before it runs (False: run it as given, still read-only).
        on_answer: called with each query's sqlmend answer (a log of what was corrected and why).

    Raises:
        ConfigError: ``max_rows`` not from 1 to 10,000; as :func:`sqlmend.integrations.base.open_corrector`.
        DatabaseNotFoundError: as :func:`sqlmend.integrations.base.open_corrector`.
    """

    def __init__(self, db: Corrector | str | os.PathLike, *, max_rows: int = DEFAULT_MAX_ROWS, correct: bool = True,
                 on_answer: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.corrector = open_corrector(db)
        self.max_rows, self.correct, self.on_answer = rows_limit(max_rows, most=DEFAULT_MAX_ROWS), correct, on_answer

    def answer(self, sql: str, question: str | None = None) -> dict[str, Any]:
        """sqlmend's answer for one query (:func:`sqlmend.mcpserver.tools.run_query`), told to ``on_answer``."""
        body = tools.run_query(self.corrector, sql, question, correct=self.correct, max_rows=self.max_rows,
                               max_bytes=MAX_RESULT_BYTES)
        if self.on_answer is not None:
            self.on_answer(body)
        return body

    async def run_sql(self, args: RunSqlToolArgs, context: ToolContext) -> pd.DataFrame:
        """Correct ``args.sql`` (the question: ``context.metadata["question"]``), run it read-only.

        Returns:
            The rows of the SQL that ran, its answer in ``attrs["sqlmend"]``.

        Raises:
            ReadOnlyViolation: the text is not one read-only query (never run).
            QueryError: the query failed, the correction's error, or a result past ``max_rows``.
        """
        question = (context.metadata or {}).get(QUESTION_KEY)
        body = await asyncio.to_thread(self.answer, args.sql, question if isinstance(question, str) else None)
        if not body["ran"]:
            raise not_run(body)
        if body["truncated"]:
            raise cut_error(body, self.max_rows)
        frame = pd.DataFrame(body["rows"], columns=body["columns"])
        frame.attrs["sqlmend"] = body
        return frame


def cut_error(answer: dict[str, Any], max_rows: int) -> SqlmendError:
    """The error for a result the runner would have to cut: its first rows alone would be a silent wrong
    answer (``.answer`` attached)."""
    limit = f"{max_rows:,} rows" if answer["truncated_by"] == "max_rows" else "its size limit"
    exc = QueryError(f"the result has more rows than the runner returns ({limit}): aggregate, filter or add a "
                     "LIMIT, or raise the runner's max_rows")
    exc.answer = answer  # type: ignore[attr-defined]
    return exc


class ConversationQuestion(ToolContextEnricher):
    """Puts the user's latest message of the conversation in ``context.metadata["question"]`` for
    :class:`SqlmendRunner` (the evidence sqlmend checks a query against).

    Args:
        store: the agent's ``ConversationStore`` (the one given to ``Agent(conversation_store=...)``).
    """

    def __init__(self, store: Any) -> None:
        self.store = store

    async def enrich_context(self, context: ToolContext) -> ToolContext:
        conversation = await self.store.get_conversation(context.conversation_id, context.user)
        asked = [m.content for m in (conversation.messages if conversation else []) if m.role == "user" and m.content]
        if asked:
            context.metadata[QUESTION_KEY] = asked[-1]
        return context


__all__ = ["QUESTION_KEY", "ConversationQuestion", "SqlmendRunner", "cut_error"]
