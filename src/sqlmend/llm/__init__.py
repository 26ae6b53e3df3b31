"""The language-model layer: one backend interface, many backends, one call log.

>>> from sqlmend import llm
>>> backend = llm.resolve("refiner")            # None when no model is configured for it
>>> cfg = llm.LLMConfig.local()                  # the embedded local models for every stage
>>> r = llm.resolve("refiner", cfg).chat([{"role": "user", "content": "Hi"}])  # doctest: +SKIP

See ``docs/architecture.md`` (### sqlmend.llm) and ``docs/models.md``.
"""

from __future__ import annotations

from sqlmend.llm.base import Backend, ChatOptions, ChatResult, Message, Usage, call_key, spent
from sqlmend.llm.book import CallBook
from sqlmend.llm.calllog import CallLog, tagged
from sqlmend.llm.config import (
    BUILTIN_ENDPOINTS,
    STAGES,
    LLMConfig,
    default_config,
    resolve,
    set_default_config,
)
from sqlmend.llm.registry import register_kind
from sqlmend.llm.replay import ReplayBackend

__all__ = [
    "BUILTIN_ENDPOINTS", "STAGES", "Backend", "CallBook", "CallLog", "ChatOptions", "ChatResult", "LLMConfig",
    "Message", "ReplayBackend", "Usage", "call_key", "default_config", "register_kind", "resolve",
    "set_default_config", "spent", "tagged",
]
