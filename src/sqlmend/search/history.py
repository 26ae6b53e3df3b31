"""A system's history teaches the search (issue 28): what ``memory build``, ``memory add`` and the
review page's "Build memory" run on confirmed corrections.

:func:`collect` runs the static stage and then the search on each question, as the pipeline
does (:func:`after_static_stage`), and records the candidates with which of them return the
confirmed correction's rows; :func:`fit_history` fits a system's adaptation
(:mod:`sqlmend.search.adaptation`) on those records, and :func:`refit_with` refits the one a
memory store holds with more confirmed corrections. ``sqlmend bench history``
(:mod:`sqlmend.bench.history`) measures it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sqlmend.data.split import gold_key
from sqlmend.rules.stage import StaticStage
from sqlmend.search import adaptation as adapt
from sqlmend.search.engine import result_key
from sqlmend.search.stage import SearchOptions, SearchStage
from sqlmend.stage import RunSettings, StageContext, refused_by_engine
from sqlmend.types import Task


def after_static_stage(static: StaticStage, task: Task, db: Any) -> StageContext:
    """``task.sql`` through the static stage, as the pipeline hands it to the search: its accepted
    rewrite, or the query with the stage's findings."""
    ctx = StageContext(task=task, db=db, sql=task.sql, run=static.run_settings)
    st = static.run(ctx)
    if st.verdict is not None and st.verdict.accepted:
        ctx.accept(st.verdict.sql)
    else:
        ctx.findings.extend(st.findings)
    return ctx


@dataclass
class Record:
    """One question after static and one search (see :func:`collect`)."""

    question_id: str
    after_static: str
    original_right: bool
    observation: adapt.Observation | None  # None: nothing searched (no candidate, or no parse)
    flags: bool = False
    shipped_sql: str | None = None  # the shipped decision's rewrite, accepted by the guard
    reach: bool = False  # some candidate returns the gold's rows
    ctx: Any = None  # the stage context (kept for the guard of a later decision)
    top: list[str] | None = None  # the SQL of the observation's candidates
    seconds: float = 0.0
    rebuild: Any = None  # () -> the stage context, when it was not kept (records read from a cache)

    def context(self) -> Any:
        """The question's stage context after static (rebuilt when not kept)."""
        if self.ctx is None and self.rebuild is not None:
            self.ctx = self.rebuild()
        return self.ctx


def collect(tasks: list[Task], preds: dict[str, str], conn: Callable[[str], Any], *, keep_ctx: bool = False,
            timeout: float = 10.0, progress: Callable[[], None] | None = None) -> dict[str, Record]:
    """Static, then the search on every query the adaptation may search, on each task with a database
    and a gold.

    Args:
        tasks: the tasks (gold SQL included).
        preds: ``{question_id: sql}``.
        conn: ``db_id -> open database`` (None when missing).
        keep_ctx: keep each question's stage context (to guard a decision made later).
        timeout: seconds per execution of the static stage and the gold.
        progress: called after each task.

    Returns:
        ``{question_id: Record}`` for the tasks that could be judged.
    """
    static = StaticStage(run=RunSettings(timeout=timeout))
    # every query the adaptation may search: flagged, or below the highest suspect_below it may pick
    stage = SearchStage(SearchOptions(scope="suspect", suspect_below=max(adapt.SUSPECT_GRID)),
                        run=RunSettings(timeout=timeout))
    out: dict[str, Record] = {}
    for task in tasks:
        db = conn(task.db_id)
        sql_text = preds.get(task.question_id, "")
        if db is None or not task.gold:
            continue
        try:
            gold_rows = result_key(db.execute(task.gold, timeout=30, max_rows=stage.settings.max_rows))
        except Exception:  # a gold that fails is not judged
            continue
        start = time.perf_counter()
        ctx = after_static_stage(static, Task(**{**task.to_dict(), "sql": sql_text}), db)
        result, error = ctx.execute()
        right = result is not None and result_key(result) == gold_rows
        rec = Record(task.question_id, ctx.sql, right, None, ctx=ctx if keep_ctx else None)
        if sql_text.strip():
            trace, found = stage.examine(ctx)
            flags = [f for f in trace.detail.get("flags") or [] if not f.startswith("verifier score")]
            rec.flags = bool(flags)
            if trace.verdict is not None and trace.verdict.accepted:
                rec.shipped_sql = trace.verdict.sql
            if found is not None and found.candidates:
                ranked = sorted(found.candidates, key=lambda c: -c.score)
                labels = [result_key(c.result) == gold_rows for c in ranked]
                rec.reach = any(labels)
                rec.observation = adapt.observation(task.question_id, found.original.score, ranked, bool(flags),
                                                    trace.candidate is not None, refused_by_engine(error),
                                                    labels[: adapt.KEEP], result, adapt.KEEP, task.db_id,
                                                    f"{task.db_id}|{gold_key(task)}")
                rec.top = [c.sql for c in ranked[: adapt.KEEP]]
        rec.seconds = time.perf_counter() - start
        out[task.question_id] = rec
        if progress:
            progress()
    return out


def fit_records(name: str, records: dict[str, Record], history: list[str], questions: int) -> adapt.Adaptation:
    """Fit the adaptation on the history part's records."""
    obs = [records[q].observation for q in history if q in records and records[q].observation is not None]
    rights = {q: records[q].original_right for q in history if q in records}
    verifier = SearchStage().verifier
    return adapt.fit(name, obs, rights, verifier.suspect_below, questions, verifier.margin_for("suspect"))


def fit_history(name: str, tasks: list[Task], preds: dict[str, str], conn: Callable[[str], Any],
                progress: Callable[[], None] | None = None) -> adapt.Adaptation:
    """``memory build``'s adaptation: search the history's predictions and fit (the seconds of both in
    ``fit["total_seconds"]``)."""
    start = time.perf_counter()
    records = collect(tasks, preds, conn, progress=progress)
    a = fit_records(name, records, [t.question_id for t in tasks], len(tasks))
    a.fit["total_seconds"] = round(time.perf_counter() - start, 1)
    return a


def refit_with(location: str | Path, tasks: list[Task], conn: Callable[[str], Any],
               namespace: str = "default") -> adapt.Adaptation | None:
    """Confirmed corrections added to a store (``memory add``, the review page's "Build memory"):
    when the store (a folder, or a PostgreSQL store's ``namespace``) holds an adaptation, search
    each task's prediction (``task.sql``; its gold: the correction), refit and save it once (a
    question already in its history is replaced, so a second build adds nothing twice).

    Returns:
        The refitted adaptation; None when the store holds none (nothing is fitted from scratch
        here: ``memory build`` does that on a whole history).
    """
    a = adapt.load(location, namespace)
    if a is None:
        return None
    recs = collect(tasks, {t.question_id: t.sql for t in tasks}, conn)
    added = [(r.observation or adapt.Observation(r.question_id, 1.0, r.flags, []), r.original_right)
             for r in recs.values()]
    if not added:
        return a
    new = adapt.refit(a, added)
    adapt.save(new, location, namespace)
    return new
