"""Model-call bookkeeping: the one place that counts a stage's calls, tokens and prompts.

A :class:`~sqlmend.llm.base.ChatResult` carries the tokens of one call
(:class:`~sqlmend.llm.base.Usage`); a :class:`CallBook` adds calls up over a stage run
(refinement, a baseline, the memory stage) or a phase (MIRA's offline construction),
whether they answered, answered garbage or failed:

* an answer costs its ``attempts`` (2 when structured output needed its retry) and tokens;
* a :class:`~sqlmend.errors.StructuredOutputError` costs every call made before it;
* another :class:`~sqlmend.errors.ModelError` costs one call and no tokens.

>>> book = CallBook()
>>> from sqlmend.llm.base import ChatResult, Usage
>>> book.count(ChatResult("{}", Usage(10, 3), attempts=2))
>>> (book.chat, book.calls, book.tokens_in, book.tokens_out)
(2, 2, 10, 3)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sqlmend.errors import ModelError, StructuredOutputError
from sqlmend.llm.base import spent


@dataclass
class CallBook:
    """Calls (chat and embed), tokens and, optionally, the prompts of one stage run or phase.

    Args:
        keep_prompts: record each chat call's messages and answer in :attr:`prompts`
            (a stage's trace shows them); off for long offline phases.
    """

    chat: int = 0
    embed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    prompts: list[dict[str, Any]] = field(default_factory=list)
    keep_prompts: bool = True

    @property
    def calls(self) -> int:
        """Every model call: chat and embed."""
        return self.chat + self.embed

    def count(self, outcome: Any) -> None:
        """Add what one chat call cost, from its answer or the error raised instead.

        Args:
            outcome: a ``ChatResult``, a StructuredOutputError, or another exception
                (a failed call: one call, no tokens).
        """
        if isinstance(outcome, BaseException) and not isinstance(outcome, StructuredOutputError):
            self.chat += 1
            return
        calls, tokens_in, tokens_out = spent(outcome)
        self.chat += calls
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out

    def add(self, other: "CallBook") -> None:
        """Add another book's counts (and prompts) to this one."""
        self.chat += other.chat
        self.embed += other.embed
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        if self.keep_prompts:
            self.prompts.extend(other.prompts)

    def ask(self, backend: Any, messages: list[dict[str, str]], *, stage: str,
            schema: type[BaseModel] | None = None, max_tokens: int = 512, role: str = "",
            sql_schema: Any = None, sql_original: str | list[str] | None = None, temperature: float = 0.0,
            seed: int | None = None) -> Any:
        """Make one chat call through the llm layer (greedy unless told), counting and recording it.

        Args:
            backend: a backend from ``sqlmend.llm`` (``chat(messages, options, schema, stage)``).
            messages: the conversation.
            stage: the stage name logged with the call.
            schema: a pydantic model class for structured output, or None for text.
            max_tokens: most tokens to generate.
            role: what the call is for, in the trace ("localize", "refine", "round 2", ...).
            sql_schema: the database (``types.Schema``) the answer's ``sql`` field is for:
                local models then write it under that database's SQL grammar.
            sql_original: with ``sql_schema``: the SQL being rewritten (its FROM makes the
                grammar's scopes, :func:`sqlmend.llm.sqlgrammar.scopes`).
            temperature: the sampling temperature (0: greedy).
            seed: the sampling seed (a seeded call is deterministic, so the cache answers it again).

        Returns:
            The backend's ``ChatResult`` (``.text``, ``.parsed``, ``.usage``).

        Raises:
            ModelError: the backend failed (StructuredOutputError for garbage); counted.
        """
        entry: dict[str, Any] = {"role": role or stage, "messages": messages}
        if self.keep_prompts:
            self.prompts.append(entry)
        extra = {"sql_schema": sql_schema} if sql_schema is not None and schema is not None else {}
        if extra and sql_original:
            extra["sql_original"] = sql_original
        try:
            options = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed}
            res = backend.chat(messages, options, schema=schema,
                               stage=stage, **extra)
        except Exception as exc:  # a ModelError, or a failure below the llm layer: counted, then raised
            self.count(exc)
            entry["error"] = f"{type(exc).__name__}: {exc}"
            raise
        self.count(res)
        entry["answer"] = getattr(res, "text", "")
        return res

    def embed_texts(self, backend: Any, texts: list[str], stage: str = "embedder") -> list[list[float]] | None:
        """Embed texts, counting one call.

        Args:
            backend: a backend with ``embed(texts, stage=...)``; None: no embedder.
            texts: the texts.
            stage: the stage name logged with the call.

        Returns:
            One vector per text, or None when there is no embedder or it failed.
        """
        if backend is None or not hasattr(backend, "embed"):
            return None
        self.embed += 1
        try:
            out = backend.embed(texts, stage=stage)
        except ModelError:
            return None
        return [list(map(float, v)) for v in out]

    def to_trace(self, trace: Any) -> Any:
        """Add the counts (and prompts) to a ``StageTrace``; return it."""
        trace.calls += self.calls
        trace.tokens_in += self.tokens_in
        trace.tokens_out += self.tokens_out
        if self.keep_prompts:
            trace.detail.setdefault("prompts", []).extend(self.prompts)
        return trace
