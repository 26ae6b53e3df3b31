"""Model calls of the refinement stages: one helper that counts and records them.

Every call goes through the llm layer's ``backend.chat`` (call log, cache,
structured output); :class:`CallBook` keeps what a stage needs for its trace:
calls, tokens and the prompts with their answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sqlmend.errors import StructuredOutputError
from sqlmend.llm.base import spent

_FENCE = re.compile(r"```(?:sql|sqlite)?\s*(.*?)```", re.S | re.I)
_START = re.compile(r"\b(SELECT|WITH)\b", re.I)


@dataclass
class CallBook:
    """Calls, tokens and prompts of one stage run."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    prompts: list[dict[str, Any]] = field(default_factory=list)

    def ask(self, backend: Any, messages: list[dict[str, str]], *, stage: str,
            schema: type[BaseModel] | None = None, max_tokens: int = 512,
            role: str = "") -> Any:
        """Make one chat call (greedy), recording it.

        Args:
            backend: a backend from ``sqlmend.llm`` (``chat(messages, options, schema, stage)``).
            messages: the conversation.
            stage: the stage name logged with the call.
            schema: a pydantic model class for structured output, or None for text.
            max_tokens: most tokens to generate.
            role: what the call is for, in the trace ("localize", "refine", "round 2", ...).

        Returns:
            The backend's ``ChatResult`` (``.text``, ``.parsed``, ``.usage``).

        Raises:
            ModelError: the backend failed (StructuredOutputError for garbage).
        """
        entry: dict[str, Any] = {"role": role or stage, "messages": messages}
        self.prompts.append(entry)
        try:
            res = backend.chat(messages, {"temperature": 0.0, "max_tokens": max_tokens},
                               schema=schema, stage=stage)
        except StructuredOutputError as exc:  # garbage twice: both calls were paid for
            self._count(exc)
            entry["error"] = f"{type(exc).__name__}: {exc}"
            raise
        except Exception as exc:
            self.calls += 1 + int(schema is not None)  # a structured call retries once
            entry["error"] = f"{type(exc).__name__}: {exc}"
            raise
        self._count(res)
        entry["answer"] = getattr(res, "text", "")
        return res

    def _count(self, outcome: Any) -> None:
        calls, tokens_in, tokens_out = spent(outcome)
        self.calls += calls
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out

    def charge(self, trace: Any) -> Any:
        """Copy the counts and prompts onto a ``StageTrace``; return it."""
        trace.calls += self.calls
        trace.tokens_in += self.tokens_in
        trace.tokens_out += self.tokens_out
        trace.detail.setdefault("prompts", []).extend(self.prompts)
        return trace


def sql_from_text(text: str) -> str:
    """The SQL in a free-text model answer: a fenced block, else from SELECT/WITH on.

    Args:
        text: the answer.

    Returns:
        The SQL (one statement, without a trailing semicolon), or "" if none.

    >>> sql_from_text("Fixed:\\n```sql\\nSELECT a FROM t;\\n```")
    'SELECT a FROM t'
    >>> sql_from_text("The query SELECT 1 is fine")
    'SELECT 1 is fine'
    """
    m = _FENCE.search(text or "")
    body = m.group(1) if m else (text or "")
    start = _START.search(body)
    if not start:
        return ""
    body = body[start.start():]
    body = body.split(";")[0]
    return " ".join(body.split()).strip()
