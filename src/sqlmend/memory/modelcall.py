"""One structured model call for the memory stage, with its calls and tokens counted.

Prompts are data files under ``memory/prompts/`` (``<name>.md``, formatted
with ``str.format``). A model that answers garbage costs its call and yields
``None``: the caller then keeps the original SQL (architecture: "a stage that
receives garbage keeps the original SQL").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel

from sqlmend.errors import ModelError, StructuredOutputError
from sqlmend.llm.base import spent

#: Generation options of every memory call: deterministic (so that the llm cache answers a
#: repeated call, e.g. the same offline build in two ablations) and bounded.
OPTIONS = {"temperature": 0, "max_tokens": 256}


@dataclass
class Usage:
    """Model usage of one phase (offline construction or online reuse, MIRA Table 2b)."""

    chat: int = 0
    embed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def add(self, other: "Usage") -> None:
        self.chat += other.chat
        self.embed += other.embed
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out

    @property
    def calls(self) -> int:
        return self.chat + self.embed

    def charge(self, outcome: Any) -> None:
        """Add the chat calls and tokens of an answer or of a StructuredOutputError.

        Args:
            outcome: what ``backend.chat`` returned or raised (see ``sqlmend.llm.base.spent``).
        """
        calls, tokens_in, tokens_out = spent(outcome)
        self.chat += calls
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out


@cache
def prompt(name: str) -> str:
    """Return the text of ``memory/prompts/<name>.md``.

    Args:
        name: the prompt's file name without extension.

    Returns:
        The template text.
    """
    return resources.files("sqlmend.memory").joinpath("prompts").joinpath(f"{name}.md").read_text()


def _jsonable(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=1, default=str)


def ask(backend: Any, name: str, answer_type: type[BaseModel], usage: Usage, stage: str = "solver",
        **fields: Any) -> BaseModel | None:
    """Fill prompt ``name`` and ask the backend for an answer of type ``answer_type``.

    Args:
        backend: a model backend of :mod:`sqlmend.llm` (``chat``).
        name: the prompt file (``prompts/<name>.md``); its first line
            ``system: ...`` is the system message.
        answer_type: the pydantic model of the answer.
        usage: counters to add this call to.
        stage: the llm stage the call is logged under (recovery, judge, solver).
        **fields: values for the template's placeholders (non-strings as JSON).

    Returns:
        The parsed answer, or None when the model failed or answered garbage.
    """
    text = prompt(name).format(**{k: _jsonable(v) for k, v in fields.items()})
    system, _, user = text.partition("\n---\n")
    messages = [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]
    try:
        reply = backend.chat(messages, dict(OPTIONS), schema=answer_type, stage=stage)
    except StructuredOutputError as exc:  # garbage twice: both calls were paid for
        usage.charge(exc)
        return None
    except ModelError:
        usage.chat += 1
        return None
    usage.charge(reply)
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


def embed(backend: Any, texts: list[str], usage: Usage) -> list[list[float]] | None:
    """Embed texts with the backend, counting one call.

    Args:
        backend: a backend with ``embed(texts)``.
        texts: the texts.
        usage: counters to add this call to.

    Returns:
        One vector per text, or None when the backend cannot embed.
    """
    if backend is None or not hasattr(backend, "embed"):
        return None
    usage.embed += 1
    try:
        out = backend.embed(texts, stage="embedder")
    except ModelError:
        return None
    return [list(map(float, v)) for v in out]
