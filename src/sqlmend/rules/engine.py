"""The fix engine the rules use: :mod:`sqlmend.sql.fixes` (one engine for rules and memory).

Rules never edit SQL themselves; they return fixes as data, which
:func:`apply` writes on a fresh parse. See :mod:`sqlmend.sql.fixes` for the operations.
"""

from __future__ import annotations

from sqlmend.sql.fixes import OPERATIONS, FixError, apply

__all__ = ["OPERATIONS", "FixError", "apply"]
