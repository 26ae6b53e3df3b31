"""The SQL in the free-text answers of the refinement stages' model calls.

The calls themselves go through :class:`sqlmend.llm.book.CallBook` (the one
model-call bookkeeping: calls, tokens and the prompts with their answers).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"```(?:sql|sqlite)?\s*(.*?)```", re.S | re.I)
_START = re.compile(r"\b(SELECT|WITH)\b", re.I)


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
