"""Run a detector (and the static rules) over many (question, SQL) items, database by database."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from sqlmend import structure
from sqlmend.db import connect
from sqlmend.errors import SqlmendError


@dataclass
class Item:
    """One SQL to judge."""

    key: str  # unique id of the item (e.g. "<system>:<question_id>")
    question_id: str
    db_id: str
    question: str
    sql: str
    evidence: str = ""


@dataclass
class Judgement:
    """What the detectors said about one item."""

    key: str
    model_types: list[tuple[str, float]] = field(default_factory=list)
    p_no_error: float | None = None
    p_correct: float | None = None  # the repair-search verifier's P(correct) of the query alone
    p_original: float | None = None  # the detection model's P(correct) (sqlmend.detect.original), when run
    best_correct: float | None = None  # the repair search from the query: its best candidate's P(correct)
    candidates: int | None = None  # the distinct candidates that search found (None: no search)
    search_seconds: float | None = None
    static_codes: list[str] = field(default_factory=list)
    static_types: list[str] = field(default_factory=list)
    error: str | None = None  # a per-item failure (missing database, ...)
    raw: str = ""  # the detector's raw answer (error tokens, or a prompted model's text)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "model_types": [[t, round(s, 4)] for t, s in self.model_types],
                "p_no_error": self.p_no_error, "p_correct": self.p_correct,
                "p_original": self.p_original, "best_correct": self.best_correct,
                "candidates": self.candidates, "search_seconds": self.search_seconds, "static_codes": self.static_codes,
                "static_types": self.static_types, "error": self.error, "raw": self.raw}


def judge(items: Iterable[Item], db_path: Callable[[str], Any], detector: Any = None, static: bool = False,
          progress: bool = True, total: int | None = None, batch_size: int = 8,
          verifier: Any = None, search: Any = None) -> list[Judgement]:
    """Judge items with the error-token detector, the static rules and/or the search verifier.

    Items are grouped by database so that each is opened (and its samples and
    value index read) once; identical SQL of the same question is judged once;
    the detector's forward passes run in batches of ``batch_size`` per database.

    Args:
        items: the items.
        db_path: ``db_id -> database path or URL``.
        detector: an :class:`~sqlmend.detect.detector.ErrorTokenDetector` (or None for rules only).
        static: also run the static rules (``sqlmend.rules.check``).
        progress: show a progress bar.
        total: the number of items, for the bar.
        batch_size: queries per forward pass of the detector.
        verifier: a :class:`~sqlmend.search.verifier.FeatureVerifier`: also its P(correct) of each
            query alone (``p_correct``; the static rules' findings are among its features).
        search: with ``verifier``, the bounds of a repair search run from each query as the search
            stage runs it (:meth:`~sqlmend.search.verifier.FeatureVerifier.judge`; ``best_correct``,
            ``candidates``, ``search_seconds``); None: no search.

    Returns:
        One :class:`Judgement` per item, in input order.
    """
    from sqlmend.progress import bar as progress_bar

    items = list(items)
    order = sorted(range(len(items)), key=lambda i: items[i].db_id)
    first: dict[tuple[str, str], Judgement] = {}  # the judgement of each distinct (question, SQL)
    key_of: dict[int, tuple[str, str]] = {}
    pending: list[tuple[Judgement, tuple]] = []
    open_db: tuple[str, Any, dict, Any] | None = None
    bar = progress_bar(total=total or len(items), desc="detect", disable=not progress, unit="sql")

    def flush() -> None:
        if not pending:
            return
        inputs = [x for _, x in pending]
        many = getattr(detector, "detect_many", None)
        dets = many(inputs, batch_size) if many else [detector.detect_context(*x) for x in inputs]
        for (j, _), det in zip(pending, dets):
            j.model_types, j.p_no_error, j.raw = det.types, det.p_no_error, det.raw or ""
        pending.clear()

    try:
        for i in order:
            it = items[i]
            bar.update(1)
            key = key_of[i] = (it.question_id, " ".join(it.sql.split()))
            if key in first:
                continue
            j = first[key] = Judgement(it.key)
            try:
                if open_db is None or open_db[0] != it.db_id:
                    flush()
                    if open_db is not None:
                        open_db[1].close()
                    open_db = None
                    db = connect(db_path(it.db_id))
                    open_db = (it.db_id, db, structure.sample_values(db), db.value_index())
                _, db, samples, vi = open_db
                if static or verifier is not None:
                    from sqlmend import rules

                    found = rules.check(db, it.sql, it.question)
                    if static:
                        j.static_codes = [f.code for f in found]
                        j.static_types = list(dict.fromkeys(f.error_type for f in found))
                    if verifier is not None:
                        v = verifier.judge(db, it.sql, it.question, it.evidence, found, vi, search)
                        j.p_correct, j.best_correct = v.p_correct, v.best
                        if search is not None:
                            j.candidates, j.search_seconds = v.candidates, round(v.seconds, 4)
                if detector is not None:
                    ctx = structure.describe(db, it.question, it.sql, samples=samples, value_index=vi)
                    pending.append((j, (it.question, ctx.to_dict(), it.sql, it.evidence)))
            except SqlmendError as e:
                j.error = str(e)
            except Exception as e:  # a bug on one item (its SQL, its database) must not stop the batch
                j.error = f"{type(e).__name__}: {e}"
        flush()
    finally:
        bar.close()
        if open_db is not None:
            open_db[1].close()
    out = []
    for i, it in enumerate(items):
        j = first[key_of[i]]
        out.append(Judgement(it.key, **{k: v for k, v in j.__dict__.items() if k != "key"}))
    return out
