"""A scripted reviewer: the gold SQL decides, through the same log and build as the review pages.

For every item of an evaluated run: when the original is correct, a change is
rejected (and an unchanged item needs no decision); when the original is
wrong, the gold SQL is the reviewer's edit (or, with ``accept_matching``, a
correction whose result matches the gold's is accepted). This is MIRA's protocol (§4.1: the history
part's wrong predictions, with the gold as the confirmed correction) played
through ``reviews.jsonl`` and :mod:`sqlmend.review.confirm`, so that
``sqlmend bench review`` can compare it with ``sqlmend memory build``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmend.memory.store import MemoryStore
from sqlmend.review.decisions import ReviewLog


def gold_decisions(run: Any, log: ReviewLog, reviewer: str = "gold", accept_matching: bool = False) -> dict[str, int]:
    """Decide every item of an evaluated run as the gold would, appending to ``log``.

    Args:
        run: the :class:`~sqlmend.review.run.Run`, after :meth:`~sqlmend.review.run.Run.evaluate`.
        log: the run's review log.
        reviewer: the name written with the decisions.
        accept_matching: accept a correction whose result matches the gold's (False: every
            wrong original is edited to the gold, exactly MIRA's history protocol).

    Returns:
        Counts by action (and ``skipped``: no gold verdict, or a correct original left unchanged).
    """
    counts = {"accept": 0, "edit": 0, "reject": 0, "skipped": 0}
    for it in run.items:
        c = it.correction
        if it.before is None or it.before == "gold_error" or it.task is None or not it.task.gold:
            counts["skipped"] += 1
            continue
        if it.before == "correct":
            action = "reject" if it.changed else None
        elif accept_matching and it.changed and it.after == "correct":
            action = "accept"
        else:
            action = "edit"
        if action is None:
            counts["skipped"] += 1
            continue
        log.append(it.qid, it.db_id, action, reviewer, c.original_sql, c.sql,
                   it.task.gold if action == "edit" else None, note="scripted: the gold decides")
        counts[action] += 1
    return counts


def store_items(folder: str | Path) -> dict[str, dict[str, Any]]:
    """Every item of every database store in a folder, by item id.

    Args:
        folder: a memory store folder.

    Returns:
        ``{item id: {"db_id", "kind", "question_id", "keys"}}``.
    """
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(folder).glob("*.sqlite")):
        with MemoryStore(folder, path.stem, create=False) as store:
            for i in store.items():
                out[i.id] = {"db_id": i.db_id, "kind": i.kind, "question_id": i.support.question_id,
                             "keys": sorted(i.keys)}
    return out
