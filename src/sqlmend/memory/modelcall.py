"""One structured model call for the memory stage, counted in a :class:`~sqlmend.llm.book.CallBook`.

Prompts are data files under ``memory/prompts/`` (``<name>.yaml``, read and
filled by :mod:`sqlmend.llm.prompts`). A model that answers garbage costs its call and yields
``None``: the caller then keeps the original SQL (architecture: "a stage that
receives garbage keeps the original SQL").
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from sqlmend.errors import ModelError
from sqlmend.llm import prompts
from sqlmend.llm.book import CallBook

#: Most tokens a memory call generates; calls are greedy (so that the llm cache answers a
#: repeated call, e.g. the same offline build in two ablations).
MAX_TOKENS = 256


def _jsonable(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=1, default=str)


def ask(backend: Any, name: str, answer_type: type[BaseModel], book: CallBook, stage: str = "solver",
        sql_schema: Any = None, sql_original: str | list[str] | None = None,
        **fields: Any) -> BaseModel | None:
    """Fill prompt ``name`` and ask the backend for an answer of type ``answer_type``.

    Args:
        backend: a model backend of :mod:`sqlmend.llm` (``chat``).
        name: the prompt file (``memory/prompts/<name>.yaml``: ``system`` and ``user``).
        answer_type: the pydantic model of the answer.
        book: the model-call book to count this call in.
        stage: the llm stage the call is logged under (recovery, judge, solver).
        sql_schema: the database (``types.Schema``) of the answer's ``sql`` field: a local
            model writes it under the grammar of one SELECT over that database.
        sql_original: the SQL the answer rewrites, or several (their FROMs make the grammar's scopes).
        **fields: values for the template's placeholders (non-strings as JSON).

    Returns:
        The parsed answer, or None when the model failed or answered garbage.
    """
    messages = prompts.messages(prompts.load("sqlmend.memory", name), **{k: _jsonable(v) for k, v in fields.items()})
    try:
        reply = book.ask(backend, messages, stage=stage, schema=answer_type, max_tokens=MAX_TOKENS,
                         sql_schema=sql_schema, sql_original=sql_original)
    except ModelError:  # counted by the book; garbage twice costs both calls
        return None
    parsed = reply if isinstance(reply, answer_type) else getattr(reply, "parsed", None)
    if isinstance(parsed, answer_type):
        return parsed
    raw = getattr(reply, "text", None) or (reply if isinstance(reply, str) else None)
    if raw:
        try:
            return answer_type.model_validate_json(raw)
        except ValueError:
            return None
    return None


def embed(backend: Any, texts: list[str], book: CallBook) -> list[list[float]] | None:
    """Embed texts with the backend, counting one call (:meth:`CallBook.embed_texts`)."""
    return book.embed_texts(backend, texts)
