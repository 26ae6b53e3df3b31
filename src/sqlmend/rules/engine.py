"""The fix engine the rules use: :mod:`sqlmend.sql.fixes` (one engine for rules and memory).

Rules never edit SQL themselves; they return fixes as data, which
:func:`apply` writes on a fresh parse. See :mod:`sqlmend.sql.fixes` for the operations.
"""

from __future__ import annotations

from typing import Any, Iterable

from sqlmend.sql.fixes import OPERATIONS, FixError, apply


def unapplied(original: str, final: str, findings: Iterable[Any], dialect: str = "sqlite") -> list[tuple[Any, str]]:
    """``(finding, SQL)`` for each finding whose fixes a run did not apply (an advisory rule's, or one
    the guard refused): ``original`` with that finding's fixes alone, when it differs from ``final``
    and from every earlier suggestion. Fixes planned on another SQL than the original are skipped.
    """
    out, seen = [], {final.strip()}
    for f in findings:
        if not f.fixes:
            continue
        try:
            text = apply(original, f.fixes, dialect)
        except Exception:  # planned on a later stage's SQL, or stale: nothing to suggest from it
            continue
        if text.strip() not in seen:
            seen.add(text.strip())
            out.append((f, text))
    return out


__all__ = ["OPERATIONS", "FixError", "apply", "unapplied"]
