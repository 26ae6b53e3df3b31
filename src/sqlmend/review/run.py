"""A correction run folder, read for review and reports.

``sqlmend correct --dataset D --pred F --out RUN`` writes ``RUN/corrections.jsonl``
(one :class:`~sqlmend.types.Correction` per line, with its stage traces),
``summary.json``, ``corrected.<ext>`` and ``run.json`` (:mod:`sqlmend.batch`: the
dataset, data and database roots, prediction file and configuration), from which the
review finds questions, gold SQL and databases. A run folder without ``run.json`` is
opened with an explicit dataset.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmend import taxonomy
from sqlmend.batch import RUN_FILE
from sqlmend.data.datasets import load_dataset
from sqlmend.errors import DatasetError, SqlmendError
from sqlmend.pipeline import read_checkpoint
from sqlmend.types import Correction, Task

#: Verdict classes of an item when the gold is known (before -> after).
VERDICT_CLASSES = ("fixed", "regressed", "still_correct", "still_wrong")


def accepted_stage(c: Correction) -> str | None:
    """The last stage whose rewrite the guard accepted (the stage that changed the SQL), or None."""
    stage = None
    for s in c.stages:
        if s.stage != "guard" and s.candidate and s.verdict is not None and s.verdict.accepted:
            stage = s.stage
    return stage if c.changed else None


@dataclass
class Item:
    """One reviewable correction with the facets the list filters on."""

    correction: Correction
    task: Task | None
    verdict: str | None = None  # one of VERDICT_CLASSES when the gold is known
    before: str | None = None  # the original's evaluation verdict (correct, wrong, pred_error, ...)
    after: str | None = None
    rules: list[str] = field(default_factory=list)  # finding codes (rule codes, memory:<id>, ...)
    error_types: list[str] = field(default_factory=list)
    stage: str | None = None  # the stage that changed the SQL

    @property
    def qid(self) -> str:
        return self.correction.question_id

    @property
    def db_id(self) -> str:
        return self.correction.db_id

    @property
    def changed(self) -> bool:
        return self.correction.changed

    @property
    def flagged(self) -> bool:
        """Some stage found an error of the taxonomy, or proposed a rewrite."""
        known = set(taxonomy.ids())
        return (any(f.error_type in known for f in self.correction.findings)
                or any(s.candidate for s in self.correction.stages))


@dataclass
class Run:
    """A correction run folder with its dataset (questions, gold SQL, databases)."""

    folder: Path
    corrections: list[Correction]
    dataset: Any = None  # sqlmend.data.Dataset, or None when it cannot be loaded
    info: dict[str, Any] = field(default_factory=dict)
    items: list[Item] = field(default_factory=list)
    evaluated: bool = False

    @classmethod
    def load(cls, folder: str | Path, dataset: str | None = None, data_root: str | None = None) -> "Run":
        """Open a run folder.

        Args:
            folder: the folder ``sqlmend correct --out`` wrote.
            dataset: the dataset (name or task file); default: the one in ``run.json``.
            data_root: the data root; default: the one in ``run.json``, else found automatically.

        Returns:
            The run, its items in dataset order.

        Raises:
            DatasetError: no ``corrections.jsonl``, or the dataset is named nowhere.
        """
        folder = Path(folder)
        path = folder / "corrections.jsonl"
        if not path.is_file():
            raise DatasetError(f"{folder} is not a correction run: no corrections.jsonl "
                               "(write one with `sqlmend correct --dataset D --pred F --out DIR`)")
        info: dict[str, Any] = {}
        if (folder / RUN_FILE).is_file():
            info = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
        name = dataset or info.get("dataset")
        if not name:
            raise DatasetError(f"{folder} has no {RUN_FILE}: name its dataset (--dataset spider-dev)")
        ds = load_dataset(name, data_root=data_root or info.get("data_root"),
                          db_root=None if dataset else info.get("db_root"))
        order = {q: i for i, q in enumerate(ds.ids)}
        # the checkpoint is in completion order; review in dataset order
        corrections = sorted(read_checkpoint(path).values(), key=lambda c: order.get(c.question_id, len(order)))
        run = cls(folder, corrections, ds, info)
        for c in corrections:
            task = ds.task(c.question_id) if c.question_id in ds else None
            findings = c.findings
            run.items.append(Item(c, task, rules=sorted({f.code for f in findings}),
                                  error_types=sorted({f.error_type for f in findings}),
                                  stage=accepted_stage(c)))
        return run

    def item(self, question_id: str) -> Item:
        """The item of one question id (DatasetError if the run has none)."""
        for it in self.items:
            if it.qid == question_id:
                return it
        raise DatasetError(f"the run has no question {question_id!r}")

    def db_path(self, db_id: str) -> Path | None:
        """The database file of ``db_id``, or None."""
        return self.dataset.db_path(db_id) if self.dataset is not None else None

    @property
    def stages(self) -> list[str] | None:
        """The stages the run was configured with (None: the default set, or not recorded)."""
        return (self.info.get("config") or {}).get("stages")

    @property
    def has_gold(self) -> bool:
        return any(it.task is not None and it.task.gold for it in self.items)

    @property
    def gold_tasks(self) -> list[Task]:
        """The tasks of the run's items that have a gold SQL (what an evaluation scores)."""
        return [it.task for it in self.items if it.task is not None and it.task.gold]

    def set_verdicts(self, before: Any, after: Any) -> None:
        """Set each item's verdict from the evaluations of the original and the corrected SQL.

        The evaluations are made above this package (:func:`sqlmend.evaluation.evaluate.evaluate_run`).

        Args:
            before: the :class:`~sqlmend.evaluation.EvalReport` of the original SQL of :attr:`gold_tasks`.
            after: the report of the corrected SQL of the same tasks.
        """
        for it in self.items:
            if it.task is None or not it.task.gold:
                continue
            b, a = before.result(it.qid), after.result(it.qid)
            it.before, it.after = b.verdict, a.verdict
            if b.scored:
                it.verdict = ("fixed" if a.correct and not b.correct else "regressed" if b.correct and not a.correct
                              else "still_correct" if b.correct else "still_wrong")
        self.evaluated = True

def execute_preview(db_path: Any, sql_text: str, rows: int = 10, timeout: float = 5.0,
                    max_rows: int = 10_000) -> dict[str, Any]:
    """Run one SQL read-only and time-limited; return its first rows and row count.

    Args:
        db_path: the database (path or URL).
        sql_text: the SQL (refused unless one read-only SELECT/WITH).
        rows: rows to keep for display.
        timeout: seconds before the query is interrupted.
        max_rows: rows counted at most (``truncated`` says more existed).

    Returns:
        ``{"ok", "columns", "rows", "count", "truncated", "seconds"}`` or ``{"ok": False, "error"}``.
    """
    from sqlmend.db import connect

    if db_path is None:
        return {"ok": False, "error": "the database of this question is not available"}
    try:
        with connect(db_path) as db:  # execute refuses anything but one read-only SELECT/WITH
            r = db.execute(sql_text, timeout=timeout, max_rows=max_rows)
    except SqlmendError as e:
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}
    return {"ok": True, "columns": list(r.columns), "rows": [list(x) for x in r.rows[:rows]],
            "count": len(r.rows), "truncated": r.truncated, "seconds": round(r.elapsed, 4)}


def p_errors(run: Run, connect_db: Any = None) -> dict[str, float]:
    """P(error) of each item's original SQL: 1 - the shipped feature verifier's P(correct) of the query
    alone (:meth:`sqlmend.search.verifier.FeatureVerifier.p_correct`), for ordering the review; for an
    item corrected with alternatives, the consensus stage's P(error), the vote with the verifier as one
    more voter.

    Args:
        run: the run.
        connect_db: ``db_id -> open database`` (None: each database is opened here, once).

    Returns:
        ``{question_id: P(error)}`` for the items whose database opens and whose SQL can be judged.
    """
    from contextlib import ExitStack

    from sqlmend.db import connect
    from sqlmend.search.verifier import FeatureVerifier

    verifier = FeatureVerifier()
    out: dict[str, float] = {}
    with ExitStack() as stack:
        opened: dict[str, Any] = {}

        def db_of(db_id: str) -> Any:
            if connect_db is not None:
                return connect_db(db_id)
            if db_id not in opened:
                path = run.db_path(db_id)
                opened[db_id] = stack.enter_context(connect(path)) if path is not None else None
            return opened[db_id]

        for it in run.items:
            vote = next((s.detail.get("consensus") for s in it.correction.stages if s.stage == "consensus"), None)
            if vote:
                out[it.qid] = float(vote["p_error"])
                continue
            db = db_of(it.db_id)
            if db is None or it.task is None:
                continue
            try:
                out[it.qid] = 1.0 - verifier.p_correct(db, it.correction.original_sql, it.task.question,
                                                       it.task.evidence or "")
            except SqlmendError:
                continue
    return out
