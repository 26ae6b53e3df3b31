"""Confirmed corrections from review decisions, through MIRA's offline phase into a memory store.

An ``accept`` of a changed correction or an ``edit`` is a confirmed historical
correction (q, s-, s+) = (question, the upstream SQL, the confirmed SQL). Each
goes through :func:`sqlmend.memory.build.build_memory` (MIRA §3.2: recovery,
edit grouping, isolation, judging, admission) into the database's store; the
outcome names the items it produced, or the stages that stopped it and why.
A confirmation is rebuilt from scratch each time (its earlier items are
forgotten first), so the memory follows the latest decision.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.memory.build import ConfirmedCorrection, build_memory
from sqlmend.memory.store import open_store, shown
from sqlmend.review.decisions import Decision
from sqlmend.search.history import refit_with
from sqlmend.types import Task

#: Build outcomes are appended here, in the run folder.
BUILDS = "memory_builds.jsonl"


@dataclass
class Confirmation:
    """One confirmed correction taken from a decision."""

    question_id: str
    db_id: str
    question: str
    wrong_sql: str
    corrected_sql: str
    action: str
    reviewer: str


@dataclass
class Outcome:
    """What MIRA's offline phase made of one confirmation."""

    question_id: str
    db_id: str
    action: str
    items: list[dict[str, Any]] = field(default_factory=list)  # id, kind, error_type, violation
    reasons: list[dict[str, str]] = field(default_factory=list)  # stage, reason (when no item)
    error: str | None = None
    adaptation: str | None = None  # the search's adaptation refitted with it (its label), if the store holds one


def confirmations(run: Any, decisions: dict[str, Decision]) -> tuple[list[Confirmation], dict[str, str]]:
    """The confirmed corrections among the latest decisions.

    Args:
        run: the :class:`~sqlmend.review.run.Run`.
        decisions: ``{question_id: latest decision}``.

    Returns:
        The confirmations, in run order, and ``{question_id: why skipped}`` for the
        decided questions that give none (rejected; accepted without a change).
    """
    out, skipped = [], {}
    for it in run.items:
        d = decisions.get(it.qid)
        if d is None:
            continue
        if d.action == "reject":
            skipped[it.qid] = "rejected: nothing confirmed"
            continue
        if not d.sql or " ".join(d.sql.split()) == " ".join(d.original_sql.split()):
            skipped[it.qid] = f"{d.action}ed the original SQL unchanged: no correction to learn from"
            continue
        question = it.task.question if it.task is not None else ""
        out.append(Confirmation(it.qid, it.db_id, question, d.original_sql, d.sql, d.action, d.reviewer))
    return out, skipped


def build(run: Any, confirmed: list[Confirmation], folder: str | Path, judge: Any = None, embedder: Any = None,
          recovery: Any = None, withdrawn: Any = (), namespace: str = "default") -> list[Outcome]:
    """Run MIRA's offline phase on confirmed corrections, one database store at a time.

    Args:
        run: the run (database paths).
        confirmed: the confirmations.
        folder: the memory store folder (as ``sqlmend correct --memory-store`` reads), or the
            ``postgresql://`` URL of a store shared with service replicas.
        judge: the judge's chat backend for general groups; None: mechanical items only.
        embedder: an embedding backend for semantic vectors; None: structural retrieval only.
        recovery: the chat backend proposing repairs; None: direct recovery only.
        withdrawn: question ids decided without a confirmation (rejected, or accepted
            unchanged): the items an earlier build made of them are removed.
        namespace: the memory inside a PostgreSQL store.

    Returns:
        One outcome per confirmation, in order.
    """
    for qid in withdrawn:
        try:
            with open_store(folder, run.item(qid).db_id, create=False, namespace=namespace) as store:
                store.forget(qid)
        except SqlmendError:  # no store for that database yet: nothing to withdraw
            continue
    by_db: dict[str, list[Confirmation]] = {}
    for c in confirmed:
        by_db.setdefault(c.db_id, []).append(c)
    outcomes: dict[str, Outcome] = {}
    for db_id, cases in by_db.items():
        path = run.db_path(db_id)
        if path is None:
            for c in cases:
                outcomes[c.question_id] = Outcome(c.question_id, db_id, c.action,
                                                  error=f"database {db_id} not found")
            continue
        try:
            with connect(path) as db, open_store(folder, db_id, namespace=namespace) as store:
                for c in cases:
                    outcomes[c.question_id] = _build_one(db, store, c, judge, embedder, recovery)
                # the system's adaptation of the search, when the store holds one, learns them too
                tasks = [Task(c.question_id, db_id, c.question, c.wrong_sql, gold=c.corrected_sql, db=str(path))
                         for c in cases if outcomes[c.question_id].error is None]
                adapted = refit_with(folder, tasks, lambda _db_id: db, namespace) if tasks else None
                if adapted is not None:
                    for c in cases:
                        outcomes[c.question_id].adaptation = adapted.label
        except SqlmendError as e:
            for c in cases:
                outcomes.setdefault(c.question_id, Outcome(c.question_id, db_id, c.action, error=str(e)))
    return [outcomes[c.question_id] for c in confirmed]


def _build_one(db: Any, store: Any, c: Confirmation, judge: Any, embedder: Any,
               recovery: Any) -> Outcome:
    store.forget(c.question_id)
    case = ConfirmedCorrection(c.question_id, c.question, c.wrong_sql, c.corrected_sql)
    out = Outcome(c.question_id, c.db_id, c.action)
    build_memory(db, c.db_id, [case], store, judge, embedder, recovery_backend=recovery)
    out.items = [{"id": i.id, "kind": i.kind, "error_type": i.error_type, "violation": i.check.violation,
                  "required": i.contract.required_behavior}
                 for i in store.items() if i.support.question_id == c.question_id]
    out.reasons = [{"stage": stage, "reason": reason} for qid, stage, reason in store.rejections()
                   if qid == c.question_id]
    return out


def record(run_folder: str | Path, outcomes: list[Outcome], store_folder: str | Path, reviewer: str) -> Path:
    """Append one build's outcomes to ``RUN_DIR/memory_builds.jsonl``.

    Args:
        run_folder: the run folder.
        outcomes: the build's outcomes.
        store_folder: where the items went.
        reviewer: who started the build.

    Returns:
        The log's path.
    """
    path = Path(run_folder) / BUILDS
    line = json.dumps({"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "reviewer": reviewer,
                       "store": shown(store_folder), "outcomes": [asdict(o) for o in outcomes]},
                      ensure_ascii=False)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return path


def last_build(run_folder: str | Path) -> dict[str, Any] | None:
    """The latest build recorded in the run folder, or None."""
    path = Path(run_folder) / BUILDS
    if not path.is_file():
        return None
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    try:
        return json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
