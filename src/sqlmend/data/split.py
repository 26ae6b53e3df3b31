"""MIRA's evaluation split (MIRA §4.1): per database, ~25% history and ~75% test.

"Within each database, we randomly assign approximately 25% of the queries to
the training set and the remaining 75% to the test set." The history part's
wrong predictions, with the gold as the confirmed correction, build the repair
memory; every method is then measured on the same test part.

Spider asks most questions twice in other words: the questions of one database
that share a gold query (compared lower-cased, whitespace collapsed) form a
group, and a group is never cut: it goes whole to the history or whole to the
test part. A test question with a history twin would let a memory "fix" it by
recalling the answer rather than the error (:func:`history_twins` counts them).

>>> from sqlmend.types import Task
>>> tasks = [Task(str(i), "db_a" if i < 8 else "db_b", "q", "SELECT 1") for i in range(12)]
>>> s = split_tasks(tasks, fraction=0.25, seed=0)
>>> len(s.history), len(s.test)
(3, 9)
>>> split_tasks(tasks, seed=0).history == s.history
True
>>> twins = [Task(str(i), "db", "q", "SELECT %d" % (i // 2)) for i in range(8)]
>>> history_twins(twins, split_tasks(twins, fraction=0.25, seed=0))
0
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from sqlmend.errors import DatasetError
from sqlmend.types import Task


@dataclass
class Split:
    """Question ids of the history and test parts, with how they were drawn."""

    history: list[str] = field(default_factory=list)
    test: list[str] = field(default_factory=list)
    fraction: float = 0.25
    seed: int = 0

    def part(self, question_id: str) -> str | None:
        """Return ``"history"``, ``"test"`` or None for a question id."""
        if question_id in self._history_set:
            return "history"
        if question_id in self._test_set:
            return "test"
        return None

    @property
    def _history_set(self) -> set[str]:
        return set(self.history)

    @property
    def _test_set(self) -> set[str]:
        return set(self.test)

    def to_dict(self) -> dict:
        return {"fraction": self.fraction, "seed": self.seed,
                "history": self.history, "test": self.test}


def gold_key(task: Task) -> str:
    """The gold query a group of twins shares: lower-cased, whitespace collapsed (no gold: the question id)."""
    gold = (task.gold or "").strip()
    return re.sub(r"\s+", " ", gold.lower()) if gold else f"\0{task.question_id}"


def split_tasks(tasks: list[Task], fraction: float = 0.25, seed: int = 0) -> Split:
    """Draw MIRA's per-database history/test split (§4.1), keeping twins together.

    Each database's questions are grouped by their gold query (:func:`gold_key`);
    the groups are shuffled with a generator seeded by ``seed`` and the database
    id (so adding a database never moves the others' questions), and taken in
    that order into the history while that brings its size closer to
    ``round(fraction * n)`` questions. A group is never cut, so no test question
    shares its gold with a history question of its database.

    Args:
        tasks: the dataset's tasks (any order; ``question_id`` must be unique).
        fraction: share of each database's questions that become history.
        seed: the random seed; the same seed gives the same split.

    Returns:
        The :class:`Split` (question ids in dataset order within each part).
    """
    if not 0.0 <= fraction <= 1.0:
        raise DatasetError(f"split fraction must be in [0, 1], got {fraction}")
    by_db: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for t in tasks:
        by_db[t.db_id][gold_key(t)].append(t.question_id)
    chosen: set[str] = set()
    for db_id in sorted(by_db):
        groups = sorted(sorted(ids) for ids in by_db[db_id].values())
        random.Random(f"{seed}:{db_id}").shuffle(groups)
        target = round(fraction * sum(map(len, groups)))
        taken = 0
        for ids in groups:
            if abs(taken + len(ids) - target) < abs(taken - target):
                chosen.update(ids)
                taken += len(ids)
    order = [t.question_id for t in tasks]
    return Split(history=[q for q in order if q in chosen],
                 test=[q for q in order if q not in chosen], fraction=fraction, seed=seed)


def history_twins(tasks: list[Task], split: Split) -> int:
    """How many test questions share their gold (:func:`gold_key`) with a history question of their database."""
    history, test = set(split.history), set(split.test)
    seen = {(t.db_id, gold_key(t)) for t in tasks if t.question_id in history}
    return sum(t.question_id in test and (t.db_id, gold_key(t)) in seen for t in tasks)


def save_split(split: Split, path: str | Path) -> None:
    """Write a split as JSON.

    Args:
        split: the split to write.
        path: the JSON file.
    """
    Path(path).write_text(json.dumps(split.to_dict(), indent=1))


def load_split(path: str | Path) -> Split:
    """Read a split written by :func:`save_split`.

    Args:
        path: the JSON file.

    Returns:
        The split.

    Raises:
        DatasetError: the file is missing or malformed.
    """
    try:
        d = json.loads(Path(path).read_text())
        return Split(history=list(d["history"]), test=list(d["test"]),
                     fraction=float(d.get("fraction", 0.25)), seed=int(d.get("seed", 0)))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DatasetError(f"cannot read split {path}: {e}") from e
