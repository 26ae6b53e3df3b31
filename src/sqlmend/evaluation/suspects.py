"""Gold-suspect questions: the static rules find something in the gold SQL itself.

The shared data's README names such label noise (e.g. ``flight_2`` stores names
with a trailing space the gold omits): a correction that finds the real rows is
then scored wrong. Every benchmark reports these questions apart (never drops
them) and asks this module which they are.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Iterable

from sqlmend.errors import DatasetError
from sqlmend.progress import bar as progress_bar


def gold_suspects(ds: Any, question_ids: Iterable[str] | None = None, timeout: float = 10.0,
                  connect_db: Callable[[str], Any] | None = None,
                  progress: bool = False) -> dict[str, list[str]]:
    """The questions whose gold SQL triggers a static rule, with the rules' codes.

    Args:
        ds: the dataset (:class:`sqlmend.data.datasets.Dataset`: gold SQL and databases).
        question_ids: the questions to check, in any order (default: all of ``ds``).
        timeout: seconds the gold and each probe may run.
        connect_db: returns an open database for a ``db_id`` or None when it is
            missing (a caller that keeps its own connections passes it; by default
            each database is opened once here and closed at the end).
        progress: show a progress bar.

    Returns:
        ``{question_id: sorted rule codes}`` in dataset order, for the suspect questions only.
        Questions without a gold SQL or a database are never suspect.
    """
    from sqlmend import rules

    wanted = None if question_ids is None else set(question_ids)
    out: dict[str, list[str]] = {}
    with nullcontext(connect_db) if connect_db is not None else ds.databases() as opened:
        for task in progress_bar(ds.tasks, desc="rules on gold", disable=not progress):
            if (wanted is not None and task.question_id not in wanted) or not task.gold:
                continue
            conn = opened(task.db_id)
            if conn is None:
                continue
            codes = sorted({f.code for f in rules.check(conn, task.gold, task.question, timeout=timeout)})
            if codes:
                out[task.question_id] = codes
    return out


def read_suspects(path: Path) -> list[str]:
    """Read gold-suspect question ids: a JSON list, JSONL records with ``question_id``, or one id per line.

    Args:
        path: the file.

    Returns:
        The ids.

    Raises:
        DatasetError: the file cannot be read.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DatasetError(f"{path}: {e}") from None
    stripped = text.strip()
    if stripped.startswith("["):
        return [str(x) for x in json.loads(stripped)]
    ids = []
    for line in stripped.splitlines():
        line = line.strip()
        if line.startswith("{"):
            ids.append(str(json.loads(line)["question_id"]))
        elif line and not line.startswith("#"):
            ids.append(line)
    return ids
