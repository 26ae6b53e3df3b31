"""Execution accuracy: run each prediction and its gold, and give every question a verdict.

Verdicts (:data:`VERDICTS`): ``correct`` / ``wrong`` (both executed, results differ under
BIRD's set rule) / ``pred_error`` / ``pred_timeout`` / ``gold_error`` (the gold fails or its
database is missing: excluded and counted, never scored). Beside the set rule each scored
question also carries ``ordered_correct``, the order- and duplicate-aware rule of
:mod:`sqlmend.evaluation.matching`.

Gold results are cached on disk per dataset (``<cache>/gold/<dataset>.pkl``), each entry
keyed by the gold SQL, the database file's identity and the time limit.

>>> from sqlmend.evaluation import load_dataset, load_predictions, evaluate   # doctest: +SKIP
>>> ds = load_dataset("spider-dev")                                      # doctest: +SKIP
>>> report = evaluate(ds, load_predictions("din-sql_gpt-4.sql", ds))     # doctest: +SKIP
>>> report.summary().correct                                             # doctest: +SKIP
791
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from sqlmend.evaluation.executor import Outcome, Query, QueryPool
from sqlmend.evaluation.matching import gold_orders, mismatch, same_ordered, same_set
from sqlmend.data.datasets import Dataset
from sqlmend.paths import cache_dir
from sqlmend.progress import bar as progress_bar

VERDICTS = ("correct", "wrong", "pred_error", "pred_timeout", "gold_error")
#: Bumped when the cached form of gold results changes; the cache file's name carries it, so that versions
#: of sqlmend sharing a cache folder never read each other's files (2: the pickled classes moved from
#: ``sqlmend.bench.evaluate`` to ``sqlmend.evaluation.evaluate``, which an older version cannot import).
CACHE_VERSION = 2


@dataclass
class QuestionResult:
    """The verdict on one question."""

    question_id: str
    db_id: str
    sql: str
    verdict: str  # one of VERDICTS
    ordered_correct: bool | None = None  # None when not scored
    detail: str = ""  # why wrong / the error message
    difficulty: str | None = None
    pred_rows: int | None = None
    gold_rows: int | None = None
    seconds: float = 0.0  # the prediction's execution time

    @property
    def scored(self) -> bool:
        return self.verdict != "gold_error"

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"


@dataclass
class EvalSummary:
    """Counts over a set of questions (``n`` scored ones; ``excluded`` gold errors)."""

    n: int
    excluded: int
    correct: int
    correct_ordered: int
    verdicts: dict[str, int]
    by_difficulty: dict[str, dict[str, int]]

    @property
    def ex(self) -> float:
        """Execution accuracy (set rule), in percent."""
        return 100.0 * self.correct / self.n if self.n else 0.0

    @property
    def ex_ordered(self) -> float:
        """Execution accuracy (ordered rule), in percent."""
        return 100.0 * self.correct_ordered / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ex"] = round(self.ex, 2)
        d["ex_ordered"] = round(self.ex_ordered, 2)
        return d


def summarize_eval(results: Iterable[QuestionResult]) -> EvalSummary:
    """Count verdicts, overall and per difficulty.

    Args:
        results: question results.

    Returns:
        The summary.
    """
    results = list(results)
    verdicts = Counter(r.verdict for r in results)
    scored = [r for r in results if r.scored]
    by_diff: dict[str, dict[str, int]] = {}
    for r in scored:
        level = by_diff.setdefault(r.difficulty or "unknown", {"n": 0, "correct": 0, "correct_ordered": 0})
        level["n"] += 1
        level["correct"] += r.correct
        level["correct_ordered"] += bool(r.ordered_correct)
    order = {"easy": 0, "simple": 0, "medium": 1, "moderate": 1, "hard": 2, "challenging": 2, "extra": 3}
    by_diff = dict(sorted(by_diff.items(), key=lambda kv: (order.get(kv[0], 9), kv[0])))
    return EvalSummary(n=len(scored), excluded=len(results) - len(scored),
                   correct=sum(r.correct for r in scored),
                   correct_ordered=sum(bool(r.ordered_correct) for r in scored),
                   verdicts={v: verdicts.get(v, 0) for v in VERDICTS}, by_difficulty=by_diff)


@dataclass
class EvalReport:
    """Per-question verdicts of one prediction file on one dataset."""

    dataset: str
    predictions: str  # where the predictions came from (a path or a label)
    timeout: float
    results: list[QuestionResult]
    suspect_ids: list[str] = field(default_factory=list)  # gold-suspect questions
    seconds: float = 0.0
    gold_cached: int = 0  # gold results taken from the disk cache

    def __post_init__(self) -> None:
        self._by_id = {r.question_id: r for r in self.results}

    def result(self, question_id: str) -> QuestionResult:
        """The result of one question (KeyError if absent)."""
        return self._by_id[question_id]

    @property
    def ids(self) -> list[str]:
        return [r.question_id for r in self.results]

    def summary(self, exclude: Iterable[str] = ()) -> EvalSummary:
        """Counts over all questions, or over those not in ``exclude``.

        Args:
            exclude: question ids left out (e.g. the gold-suspect ones).

        Returns:
            The summary.
        """
        skip = set(exclude)
        return summarize_eval(r for r in self.results if r.question_id not in skip)

    def ids_with(self, verdict: str) -> list[str]:
        """Question ids with this verdict, in dataset order."""
        return [r.question_id for r in self.results if r.verdict == verdict]

    def to_dict(self) -> dict[str, Any]:
        suspects = set(self.suspect_ids)
        return {"dataset": self.dataset, "predictions": self.predictions, "timeout": self.timeout,
                "seconds": round(self.seconds, 3), "gold_cached": self.gold_cached,
                "summary": self.summary().to_dict(),
                "summary_without_suspects": self.summary(suspects).to_dict() if suspects else None,
                "suspect_ids": list(self.suspect_ids),
                "results": [asdict(r) for r in self.results]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EvalReport":
        """Rebuild a report written by :meth:`to_dict` (e.g. the JSON of an earlier run)."""
        return cls(dataset=data["dataset"], predictions=data["predictions"], timeout=data["timeout"],
                   results=[QuestionResult(**r) for r in data["results"]],
                   suspect_ids=list(data.get("suspect_ids") or []), seconds=data.get("seconds", 0.0),
                   gold_cached=data.get("gold_cached", 0))


# --- gold cache ------------------------------------------------------------

@dataclass
class _Gold:
    outcome: Outcome
    ordered: bool


def _db_identity(path: Path | None) -> str:
    if path is None:
        return "missing"
    st = path.stat()
    return f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"


def _gold_key(sql: str, db_identity: str, timeout: float) -> str:
    return hashlib.sha256(f"{CACHE_VERSION}\0{sql}\0{db_identity}\0{timeout}".encode()).hexdigest()


def _cache_file(dataset: Dataset, root: Path | None = None) -> Path:
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in dataset.name)
    folder = cache_dir("gold") if root is None else Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.v{CACHE_VERSION}.pkl"


#: Gold caches this process has read or written: path -> (file state, entries). Evaluating
#: several prediction files in one process reads the file once.
_LOADED: dict[Path, tuple[tuple[int, int], dict[str, _Gold]]] = {}


def _file_state(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def forget_loaded_caches() -> None:
    """Drop the gold caches held in memory, so the next evaluation reads them from disk."""
    _LOADED.clear()


def _load_cache(path: Path) -> dict[str, _Gold]:
    state = _file_state(path)
    if state is None:
        return {}
    held = _LOADED.get(path)
    if held is not None and held[0] == state:
        return dict(held[1])
    try:
        with open(path, "rb") as f:
            data = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ImportError):
        return {}  # unreadable, or written by a version whose classes lived elsewhere: computed again
    if not isinstance(data, dict):
        return {}
    _LOADED[path] = (state, data)
    return dict(data)


def _save_cache(path: Path, entries: dict[str, _Gold]) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        pickle.dump(entries, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)
    state = _file_state(path)
    if state is not None:
        _LOADED[path] = (state, dict(entries))


# --- evaluation ------------------------------------------------------------

def _verdict(task_id: str, db_id: str, sql: str, difficulty: str | None, gold: _Gold | None,
             pred: Outcome | None, missing_db: bool) -> QuestionResult:
    base = dict(question_id=task_id, db_id=db_id, sql=sql, difficulty=difficulty)
    if missing_db:
        return QuestionResult(**base, verdict="gold_error", detail=f"database {db_id} not found")
    assert gold is not None and pred is not None
    g = gold.outcome
    if not g.ok:
        return QuestionResult(**base, verdict="gold_error", detail=f"gold {g.status}: {g.error}")
    base.update(gold_rows=len(g.rows), seconds=round(pred.elapsed, 6))
    if pred.status == "timeout":
        return QuestionResult(**base, verdict="pred_timeout", ordered_correct=False, detail=pred.error)
    if not pred.ok:
        return QuestionResult(**base, verdict="pred_error", ordered_correct=False, detail=pred.error)
    base["pred_rows"] = len(pred.rows)
    ordered = same_ordered(pred.rows, g.rows, gold.ordered)
    if same_set(pred.rows, g.rows):
        detail = "" if ordered else ("order differs" if gold.ordered and Counter(pred.rows) == Counter(g.rows)
                                     else "duplicate rows differ")
        return QuestionResult(**base, verdict="correct", ordered_correct=ordered, detail=detail)
    return QuestionResult(**base, verdict="wrong", ordered_correct=False,
                          detail=mismatch(pred.columns, pred.rows, g.columns, g.rows))


def evaluate(dataset: Dataset, predictions: Mapping[str, str], timeout: float = 30.0, workers: int = 2,
             *, suspect_ids: Iterable[str] = (), use_cache: bool = True, progress: bool = False,
             label: str = "", grace: float = 2.0, cache_root: str | os.PathLike | None = None,
             pool: QueryPool | None = None) -> EvalReport:
    """Execute every prediction and its gold; give each question a verdict.

    Args:
        dataset: the tasks (with gold SQL and databases).
        predictions: ``{question_id: sql}``; a task without an entry is judged on an empty SQL
            (``pred_error``).
        timeout: per-query time limit in seconds (a blocking query's worker is killed after
            ``timeout + grace``).
        workers: worker processes.
        suspect_ids: gold-suspect question ids; summaries are then also given without them.
        use_cache: read and update the on-disk gold cache.
        progress: show a progress bar on stderr.
        label: what to call the predictions in reports (default: "predictions").
        grace: seconds past ``timeout`` before a worker is killed.
        cache_root: folder of the gold cache (default ``<cache>/gold``).
        pool: an open :class:`QueryPool` to run on (several files, one start-up of the
            workers); its ``timeout`` and ``grace`` then apply. Default: a pool for this call.

    Returns:
        The report, results in dataset order.
    """
    started = time.perf_counter()
    cache_path = _cache_file(dataset, Path(cache_root) if cache_root else None)
    with _collector_paused():
        cache = _load_cache(cache_path) if use_cache else {}
    golds: dict[str, _Gold] = {}
    gold_keys: dict[str, str] = {}
    identities: dict[str, str] = {}  # database identity, once per database
    queries: list[Query] = []
    owners: list[tuple[str, str]] = []  # (kind, question_id) per query
    for task in dataset:
        db = dataset.db_path(task.db_id)
        if db is None:
            continue
        identity = identities.get(task.db_id)
        if identity is None:
            identity = identities[task.db_id] = _db_identity(db)
        key = _gold_key(task.gold or "", identity, timeout)
        gold_keys[task.question_id] = key
        if key in cache:
            golds[task.question_id] = cache[key]
        else:
            queries.append(Query(str(db), task.gold or ""))
            owners.append(("gold", task.question_id))
        queries.append(Query(str(db), predictions.get(task.question_id, "")))
        owners.append(("pred", task.question_id))
    cached = len(golds)

    bar = progress_bar(total=len(queries), desc=f"eval {label or dataset.name}", unit="q", disable=not progress,
                       file=sys.stderr, leave=False)
    if pool is None:
        pool = QueryPool(workers=workers, timeout=timeout, grace=grace)
    elif pool.timeout != timeout:
        raise ValueError(f"the pool's timeout ({pool.timeout:g}s) differs from timeout={timeout:g}")
    with _collector_paused():  # the rows coming back are no garbage; collections only cost here
        try:
            outcomes = pool.run(queries, on_done=lambda i, o: bar.update(1))
        finally:
            bar.close()

        preds: dict[str, Outcome] = {}
        fresh = False
        for (kind, qid), outcome in zip(owners, outcomes):
            if kind == "pred":
                preds[qid] = outcome
            else:
                gold = _Gold(outcome, gold_orders(dataset.task(qid).gold or ""))
                golds[qid] = gold
                cache[gold_keys[qid]] = gold
                fresh = True
        if use_cache and fresh:
            _save_cache(cache_path, cache)

        results = [_verdict(t.question_id, t.db_id, predictions.get(t.question_id, ""), t.difficulty,
                            golds.get(t.question_id), preds.get(t.question_id),
                            dataset.db_path(t.db_id) is None) for t in dataset]
    return EvalReport(dataset=dataset.name, predictions=label or "predictions", timeout=timeout,
                      results=results, suspect_ids=sorted(set(suspect_ids) & set(dataset.ids), key=_id_key),
                      seconds=time.perf_counter() - started, gold_cached=cached)


class CachedEvaluator:
    """The evaluator's verdicts (:func:`evaluate`), each SQL of a question executed once however many
    runs give it (the benchmarks that pair several corrections of one file: model-sim, alternatives)."""

    def __init__(self, ds: Dataset, timeout: float, workers: int):
        self.ds, self.timeout, self.workers = ds, timeout, workers
        self._seen: dict[tuple[str, str], QuestionResult] = {}

    def __call__(self, sqls: Mapping[str, str], label: str) -> EvalReport:
        """The :class:`EvalReport` of ``{question_id: sql}``."""
        key = lambda q, text: (q, " ".join(text.split()))  # noqa: E731
        todo = {q: text for q, text in sqls.items() if key(q, text) not in self._seen}
        if todo:
            sub = Dataset(self.ds.name, [self.ds.task(q) for q in todo], db_root=self.ds.db_root)
            for r in evaluate(sub, todo, timeout=self.timeout, workers=self.workers, label=label).results:
                self._seen[key(r.question_id, todo[r.question_id])] = r
        return EvalReport(self.ds.name, label, self.timeout, [self._seen[key(q, text)] for q, text in sqls.items()])


def evaluate_run(run: Any, workers: int = 2, timeout: float = 30.0) -> tuple[EvalReport | None, EvalReport | None]:
    """Evaluate a correction run's original and corrected SQL against the gold; set its items' verdicts.

    Args:
        run: a :class:`sqlmend.review.run.Run` (its items with a gold are evaluated).
        workers: evaluation worker processes.
        timeout: seconds per query.

    Returns:
        ``(before, after)`` reports (None, None without gold).
    """
    tasks = run.gold_tasks
    if not tasks:
        return None, None
    sub = Dataset(run.dataset.name, tasks, db_root=run.dataset.db_root, source=run.dataset.source)
    with QueryPool(workers=workers, timeout=timeout) as pool:
        before = evaluate(sub, {it.qid: it.correction.original_sql for it in run.items}, timeout=timeout,
                          label="original", pool=pool)
        after = evaluate(sub, {it.qid: it.correction.sql for it in run.items}, timeout=timeout,
                         label="corrected", pool=pool)
    run.set_verdicts(before, after)
    return before, after


@contextmanager
def _collector_paused():
    """Pause Python's cyclic garbage collector for a block (restored after, even on error).

    Tens of thousands of result rows arrive in a few seconds; each generation-0 collection
    would walk them for nothing (rows hold no reference cycles).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _id_key(qid: str) -> tuple:
    return (0, int(qid), "") if qid.isdigit() else (1, 0, qid)
