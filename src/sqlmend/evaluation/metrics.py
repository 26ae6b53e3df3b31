"""Detection and refinement metrics of ErrorLLM (Xu et al., 2026, §4.3).

Detection: a detector's verdicts ("this SQL is incorrect", possibly with error types) against
execution-correctness labels. The positive class is *incorrect*: D-Precision, D-Recall,
D-Accuracy and D-F1, overall and per error type when both sides carry types (per-type recall
is NL2SQL-Bugs' type-specific accuracy, TSA).

Refinement: for the flagged questions, TP = flagged and wrong before, FP = flagged and correct
before; FR = |TP fixed| / |TP|, CR = |FP corrupted| / |FP|, and the decomposition

    ΔEX = (|TP|·FR − |FP|·CR) / n

which equals the measured ΔEX when only flagged SQL is changed; both are reported, with the
number of unflagged questions whose result changed class.

>>> m = detection_metrics({"1": True, "2": True, "3": False}, {"1": True, "2": False, "3": True})
>>> (m.overall.tp, m.overall.fp, m.overall.fn, round(m.overall.precision, 2))
(1, 1, 1, 0.5)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping

from sqlmend.evaluation.evaluate import EvalReport
from sqlmend.data.datasets import Label
from sqlmend.errors import DatasetError

NO_ERROR = "no_error"


@dataclass
class Confusion:
    """Counts of a binary decision whose positive class is "incorrect"."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, predicted: bool, actual: bool) -> None:
        if predicted and actual:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif actual:
            self.fn += 1
        else:
            self.tn += 1

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update({k: round(100 * getattr(self, k), 2) for k in ("precision", "recall", "accuracy", "f1")})
        return d


@dataclass
class DetectionMetrics:
    """D-Precision/Recall/Accuracy/F1 overall, and the same per error type."""

    overall: Confusion
    per_type: dict[str, Confusion] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"overall": self.overall.to_dict(),
                "per_type": {t: c.to_dict() for t, c in self.per_type.items()}}


def _types(value: Any) -> tuple[bool, set[str]]:
    """(incorrect?, error types) of a flag or label value."""
    if isinstance(value, Label):
        return (not value.correct), set(value.error_types)
    if isinstance(value, bool):
        return value, set()
    if value is None:
        return False, set()
    if isinstance(value, str):
        value = [value]
    types = {str(v) for v in value} - {NO_ERROR}
    return bool(types), types


def detection_metrics(flags: Mapping[str, Any], truth: Mapping[str, Any],
                      type_map: Callable[[str], str] | None = None) -> DetectionMetrics:
    """Score a detector against correctness labels.

    Args:
        flags: ``{question_id: verdict}``; a verdict is a bool (True = "incorrect") or an
            iterable of error-type ids (non-empty, other than "no_error" = incorrect). Ids
            missing here count as not flagged.
        truth: ``{question_id: label}`` over the questions to score; a label is a bool
            (True = incorrect), an iterable of error types, or a :class:`~sqlmend.data.datasets.Label`.
        type_map: maps a detector's type id to the labels' vocabulary (e.g.
            :func:`sqlmend.taxonomy.to_nl2sql_bugs`), for per-type figures.

    Returns:
        Overall and per-type confusion counts with their rates.

    Raises:
        DatasetError: ``flags`` names questions that ``truth`` does not have.
    """
    unknown = set(flags) - set(truth)
    if unknown:
        raise DatasetError(f"{len(unknown)} flagged questions have no label, e.g. {sorted(unknown)[:3]}")
    overall = Confusion()
    rows = []
    for qid, label in truth.items():
        actual, actual_types = _types(label)
        predicted, predicted_types = _types(flags.get(qid))
        if type_map is not None:
            predicted_types = {type_map(t) for t in predicted_types}
        overall.add(predicted, actual)
        rows.append((actual_types, predicted_types))
    per_type: dict[str, Confusion] = {}
    for t in sorted(set().union(*(a | p for a, p in rows))) if rows else []:
        c = per_type.setdefault(t, Confusion())
        for actual_types, predicted_types in rows:
            c.add(t in predicted_types, t in actual_types)
    return DetectionMetrics(overall=overall, per_type=per_type)


def labels_from_report(report: EvalReport, exclude: Iterable[str] = ()) -> dict[str, bool]:
    """Execution-correctness labels: ``{question_id: True if the SQL is incorrect}`` over scored questions.

    Args:
        report: an evaluation of the SQL the detector judged.
        exclude: question ids to leave out (e.g. gold-suspect ones).

    Returns:
        The labels.
    """
    skip = set(exclude)
    return {r.question_id: not r.correct for r in report.results if r.scored and r.question_id not in skip}


@dataclass
class RefinementMetrics:
    """FR, CR and the ΔEX decomposition of ErrorLLM §4.3, beside the measured ΔEX."""

    n: int
    tp: int  # flagged, wrong before
    fp: int  # flagged, correct before
    fixed: int  # TP that are correct after
    corrupted: int  # FP that are wrong after
    delta_ex_measured: float  # percentage points, all questions
    unflagged_moved: int = 0  # unflagged questions whose correctness changed

    @property
    def fr(self) -> float:
        """Fixed rate among true detections."""
        return self.fixed / self.tp if self.tp else 0.0

    @property
    def cr(self) -> float:
        """Corruption rate among false detections."""
        return self.corrupted / self.fp if self.fp else 0.0

    @property
    def delta_ex(self) -> float:
        """(|TP|·FR − |FP|·CR) / n, in percentage points."""
        return 100.0 * (self.tp * self.fr - self.fp * self.cr) / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(fr=round(100 * self.fr, 2), cr=round(100 * self.cr, 2), delta_ex=round(self.delta_ex, 2),
                 delta_ex_measured=round(self.delta_ex_measured, 2))
        return d


def refinement_metrics(before: EvalReport, after: EvalReport, flagged: Iterable[str],
                       exclude: Iterable[str] = ()) -> RefinementMetrics:
    """FR / CR / ΔEX of a correction run, given which questions the detector flagged.

    Args:
        before: evaluation of the original SQL.
        after: evaluation of the corrected SQL (same dataset).
        flagged: ids the detector marked incorrect (the ones refinement was allowed to touch).
        exclude: ids left out (e.g. gold-suspect ones).

    Returns:
        The metrics over the questions both reports score.
    """
    flagged = set(flagged)
    skip = set(exclude)
    m = RefinementMetrics(n=0, tp=0, fp=0, fixed=0, corrupted=0, delta_ex_measured=0.0)
    net = 0
    for b in before.results:
        a = after.result(b.question_id)
        if not (b.scored and a.scored) or b.question_id in skip:
            continue
        m.n += 1
        net += int(a.correct) - int(b.correct)
        if b.question_id in flagged:
            if b.correct:
                m.fp += 1
                m.corrupted += not a.correct
            else:
                m.tp += 1
                m.fixed += a.correct
        elif a.correct != b.correct:
            m.unflagged_moved += 1
    m.delta_ex_measured = 100.0 * net / m.n if m.n else 0.0
    return m
