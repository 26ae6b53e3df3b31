"""Review decisions: an append-only log ``RUN_DIR/reviews.jsonl``.

Each line is one decision on one question: who (the reviewer's name), when
(UTC, ISO 8601), what (``accept`` the proposed correction, ``reject`` it, or
``edit``: the reviewer's own SQL, checked read-only and executed before it was
saved). Lines are flushed and fsynced before the request returns; the latest
line of a question is its decision.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from sqlmend.errors import ConfigError

#: The actions a reviewer can take.
ACTIONS = ("accept", "reject", "edit")
#: The log's file name inside a run folder.
REVIEWS = "reviews.jsonl"


@dataclass
class Decision:
    """One reviewer decision.

    ``sql`` is the confirmed SQL: the proposed correction for ``accept``, the
    reviewer's SQL for ``edit``, None for ``reject``.
    """

    question_id: str
    db_id: str
    action: str
    reviewer: str
    at: str
    original_sql: str
    proposed_sql: str
    sql: str | None = None
    note: str = ""


class ReviewLog:
    """The decisions of one run folder.

    Args:
        folder: the run folder (the log is ``folder/reviews.jsonl``).
    """

    def __init__(self, folder: str | Path):
        self.path = Path(folder) / REVIEWS
        self._lock = threading.Lock()

    def append(self, question_id: str, db_id: str, action: str, reviewer: str, original_sql: str,
               proposed_sql: str, sql: str | None = None, note: str = "") -> Decision:
        """Append one decision (flushed and fsynced).

        Args:
            question_id: the question.
            db_id: its database.
            action: one of :data:`ACTIONS`.
            reviewer: who decides.
            original_sql: the SQL the upstream system wrote.
            proposed_sql: the run's correction.
            sql: for ``edit``, the reviewer's SQL.
            note: free text.

        Returns:
            The decision written.

        Raises:
            ConfigError: unknown action, no reviewer, or an edit without SQL.
        """
        if action not in ACTIONS:
            raise ConfigError(f"unknown review action {action!r}; known: {', '.join(ACTIONS)}")
        if not reviewer.strip():
            raise ConfigError("a decision needs the reviewer's name")
        if action == "edit" and not (sql or "").strip():
            raise ConfigError("an edit needs the reviewer's SQL")
        confirmed = {"accept": proposed_sql, "reject": None, "edit": sql}[action]
        d = Decision(question_id, db_id, action, reviewer.strip(),
                     datetime.now(timezone.utc).isoformat(timespec="seconds"), original_sql, proposed_sql,
                     confirmed, note)
        line = json.dumps(asdict(d), ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        return d

    def all(self) -> list[Decision]:
        """Every decision, oldest first (a line cut short by a crash is skipped)."""
        if not self.path.is_file():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(Decision(**json.loads(line)))
            except (ValueError, TypeError):
                continue
        return out

    def latest(self) -> dict[str, Decision]:
        """``{question_id: its latest decision}``."""
        return {d.question_id: d for d in self.all()}
