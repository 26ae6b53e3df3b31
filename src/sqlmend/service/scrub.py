"""Keep server paths out of what a client sees: responses and the request log.

Two passes over every string of an answer:

* the folders this server knows (database root, data root, cache, home,
  working directory, the Python installation) are replaced by ``<server>``;
* in free-text fields (errors, notes, messages) any remaining absolute path is
  replaced by ``<path>``. SQL fields get only the first pass, so a division such
  as ``a/b/c`` is never touched.

>>> s = Scrubber(["/srv/data"])
>>> s.text("database 'x' not found at /srv/data/x/x.sqlite")
"database 'x' not found at <server>/x/x.sqlite"
>>> s.text("cannot open /opt/other/file.db", free=True)
'cannot open <path>'
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: An absolute path of at least two parts, not preceded by a word character or a quote/bracket.
_ABS_PATH = re.compile(r"(?<![\w.)\]'\"`/])(?:~|[A-Za-z]:)?/(?:[\w.\-]+/)+[\w.\-]*")

#: Keys whose values are free text (a path there is never meaningful to the client).
FREE_TEXT_KEYS = frozenset({"error", "note", "message", "reason", "engine", "refused"})


def server_roots(extra: Iterable[str | os.PathLike | None] = ()) -> list[str]:
    """Return the folders of this server that must not leak, longest first.

    Args:
        extra: more folders (the database root, a memory store folder).

    Returns:
        Absolute paths, each given as written and resolved.
    """
    found: set[str] = set()
    candidates: list[Any] = [*extra, Path.home(), Path.cwd(), sys.prefix, sys.base_prefix,
                             tempfile.gettempdir(), Path(__file__).resolve().parents[2]]
    for env in ("SQLMEND_DATA", "SQLMEND_CACHE"):
        candidates.append(os.environ.get(env))
    for c in candidates:
        if not c:
            continue
        for p in (Path(c).expanduser().absolute(), Path(c).expanduser().resolve()):
            text = str(p).rstrip("/")
            if len(text) > 1:
                found.add(text)
    return sorted(found, key=len, reverse=True)


class Scrubber:
    """Replace server paths in strings and in nested JSON-like values.

    Args:
        roots: folders to hide (see :func:`server_roots`).
    """

    def __init__(self, roots: Iterable[str]):
        self.roots = sorted({r for r in roots if len(r) > 1}, key=len, reverse=True)

    def text(self, value: str, free: bool = False) -> str:
        """Scrub one string (``free``: also any absolute path)."""
        for root in self.roots:
            if root in value:
                value = value.replace(root, "<server>")
        if free:
            value = _ABS_PATH.sub("<path>", value)
        return value

    def value(self, obj: Any, free: bool = False) -> Any:
        """Scrub every string of a nested value (dicts, lists); free-text keys get both passes."""
        if isinstance(obj, str):
            return self.text(obj, free)
        if isinstance(obj, dict):
            return {k: self.value(v, free or k in FREE_TEXT_KEYS) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.value(v, free) for v in obj]
        return obj
