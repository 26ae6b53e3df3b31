"""Hard cases of one training question: near-miss candidates of the gold from the repair search.

Besides the gold (correct) and execution-verified rule perturbations (wrong, labelled with
the operator's error type), the repair-search generators (:mod:`sqlmend.search`) make
one-edit variants of the gold. Those that still return the gold's rows are *hard
negatives* (they look edited but are correct); those that do not are near-miss errors,
labelled with the error types of the generator that made them. Spider TRAIN only.

>>> # cases(task, db, random.Random(0))  -> [{"kind": "gold", "correct": True, ...}, ...]
"""

from __future__ import annotations

import random
from typing import Any

from sqlmend.errors import SqlmendError
from sqlmend.search.engine import SearchSettings, execute_original, result_key, search
from sqlmend.search.generators import SearchInput, all_generators
from sqlmend.synth.build import perturb
from sqlmend.synth.operators import OPERATORS
from sqlmend.types import Task


def _generator_types() -> dict[str, list[str]]:
    return {g.name: list(g.error_types) for g in all_generators()}


def near_misses(task: Task, db: Any, gold_res: Any, rng: random.Random, near: int = 1,
                settings: SearchSettings | None = None) -> list[tuple[Any, bool, list[str]]]:
    """One-edit search candidates of the gold: up to ``near`` returning the gold's rows, up to ``near`` not.

    Args:
        task: a training question with its gold.
        db: its open database.
        gold_res: the gold's result (``max_rows`` of ``settings``).
        rng: the random source (which candidates).
        near: candidates of each kind.
        settings: the search bounds (default: one edit, 0.4 s).

    Returns:
        ``(candidate, correct, error types)``: a :class:`sqlmend.search.engine.Executed` (its
        ``sql``, ``result``, ``generators``), whether it returns the gold's rows, and when it
        does not, the error types of the generators that made it.
    """
    settings = settings or SearchSettings(budget=0.4, two_edits=False)
    # the gold without its result: the search drops candidates returning the original's rows
    # as duplicates, and those are the hard negatives wanted here (one per distinct result)
    original = execute_original(db, task.gold, settings.timeout, settings.max_rows, result=gold_res)
    original.result = None
    inp = SearchInput(task.question, db.schema(), db.value_index(), task.evidence)
    try:
        found = search(db, original, inp, (), settings)
    except SqlmendError:
        return []
    key = result_key(gold_res)
    same = [c for c in found.candidates if c.result is not None and result_key(c.result) == key]
    other = [c for c in found.candidates if c.result is not None and result_key(c.result) != key]
    gen_types = _generator_types()
    out = []
    for pool, correct in ((same, True), (other, False)):
        for c in rng.sample(pool, min(near, len(pool))):
            types = [] if correct else list(dict.fromkeys(t for g in c.generators for t in gen_types.get(g, [])))
            out.append((c, correct, types))
    return out


def cases(task: Task, db: Any, rng: random.Random, perturbations: int = 2, near: int = 1,
          timeout: float = 5.0, settings: SearchSettings | None = None) -> list[dict[str, Any]]:
    """The cases of one question, each ``{"qid", "db_id", "question", "evidence", "sql", "kind", "correct", "types"}``.

    Args:
        task: a training question with its gold.
        db: its open database.
        rng: the random source (operators and near-miss choice).
        perturbations: rule perturbations of the gold (from different operators).
        near: near-miss candidates of each kind (same rows: correct; other rows: wrong).
        timeout: seconds per execution of the gold and perturbations.
        settings: the search bounds (default: one edit, 0.4 s).

    Returns:
        The gold first, then the perturbations, then the near misses.

    Raises:
        SqlmendError: the gold does not run.
    """
    settings = settings or SearchSettings(budget=0.4, two_edits=False)
    gold_res = db.execute(task.gold, timeout=timeout, max_rows=settings.max_rows)
    base = {"qid": task.question_id, "db_id": task.db_id, "question": task.question, "evidence": task.evidence}
    out = [{**base, "sql": task.gold, "kind": "gold", "correct": True, "types": []}]
    ops = list(OPERATORS.values())
    rng.shuffle(ops)
    for text, op, _ in perturb(task.gold, db.schema(), db, gold_res, rng, ops, timeout):
        out.append({**base, "sql": text, "kind": f"rule:{op.name}", "correct": False, "types": [op.error_type]})
        if len(out) > perturbations:
            break
    if near > 0:
        out += [{**base, "sql": c.sql, "kind": "near:" + "+".join(c.generators), "correct": correct, "types": types}
                for c, correct, types in near_misses(task, db, gold_res, rng, near, settings)]
    return out


__all__ = ["cases", "near_misses"]
