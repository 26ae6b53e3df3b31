"""Paired comparison of two evaluations of the same tasks (before and after correction).

For the questions both reports score: **fixed** (wrong before, correct after), **regressed**
(correct before, wrong after), **changed** (the SQL text differs), and
ΔEX = (fixed − regressed) / n. Each figure is given over all questions and over the questions
that are not gold-suspect (whose benchmark gold may itself be wrong), with the id lists.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from sqlmend.evaluation.evaluate import EvalReport
from sqlmend.errors import DatasetError


@dataclass
class PairedSlice:
    """Paired figures over one set of questions."""

    n: int
    before_correct: int
    after_correct: int
    fixed: list[str] = field(default_factory=list)
    regressed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    fixed_ordered: int = 0  # the same classes under the ordered rule (counts only)
    regressed_ordered: int = 0

    @property
    def delta_ex(self) -> float:
        """ΔEX in percentage points: (fixed − regressed) / n."""
        return 100.0 * (len(self.fixed) - len(self.regressed)) / self.n if self.n else 0.0

    @property
    def delta_ex_ordered(self) -> float:
        """ΔEX under the ordered rule, in percentage points."""
        return 100.0 * (self.fixed_ordered - self.regressed_ordered) / self.n if self.n else 0.0

    @property
    def before_ex(self) -> float:
        return 100.0 * self.before_correct / self.n if self.n else 0.0

    @property
    def after_ex(self) -> float:
        return 100.0 * self.after_correct / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(delta_ex=round(self.delta_ex, 2), delta_ex_ordered=round(self.delta_ex_ordered, 2),
                 before_ex=round(self.before_ex, 2), after_ex=round(self.after_ex, 2))
        return d


@dataclass
class PairedReport:
    """Before/after over all scored questions and over the non-suspect ones."""

    dataset: str
    before: str
    after: str
    all: PairedSlice
    clean: PairedSlice  # without the gold-suspect questions
    suspect_ids: list[str] = field(default_factory=list)
    excluded: int = 0  # questions not scored (gold errors)

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "before": self.before, "after": self.after,
                "all": self.all.to_dict(), "without_suspects": self.clean.to_dict(),
                "suspect_ids": list(self.suspect_ids), "excluded": self.excluded}


def _same_sql(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def _slice(pairs: list[tuple[Any, Any]]) -> PairedSlice:
    s = PairedSlice(n=len(pairs), before_correct=sum(b.correct for b, _ in pairs),
                    after_correct=sum(a.correct for _, a in pairs))
    for b, a in pairs:
        if not b.correct and a.correct:
            s.fixed.append(b.question_id)
        elif b.correct and not a.correct:
            s.regressed.append(b.question_id)
        if not _same_sql(b.sql, a.sql):
            s.changed.append(b.question_id)
        s.fixed_ordered += (not b.ordered_correct) and bool(a.ordered_correct)
        s.regressed_ordered += bool(b.ordered_correct) and not a.ordered_correct
    return s


def compare(before: EvalReport, after: EvalReport, suspect_ids: Iterable[str] = ()) -> PairedReport:
    """Pair two evaluations of the same dataset question by question.

    Args:
        before: the report of the original predictions.
        after: the report of the corrected predictions.
        suspect_ids: gold-suspect question ids (joined with those the reports carry).

    Returns:
        The paired report; questions either report leaves unscored are excluded.

    Raises:
        DatasetError: the reports are on different datasets or different question ids.
    """
    if before.dataset != after.dataset or set(before.ids) != set(after.ids):
        raise DatasetError(f"cannot pair {before.predictions} ({before.dataset}, {len(before.ids)} questions) "
                           f"with {after.predictions} ({after.dataset}, {len(after.ids)} questions)")
    suspects = set(suspect_ids) | set(before.suspect_ids) | set(after.suspect_ids)
    pairs = []
    excluded = 0
    for b in before.results:
        a = after.result(b.question_id)
        if b.scored and a.scored:
            pairs.append((b, a))
        else:
            excluded += 1
    present = [b.question_id for b, _ in pairs if b.question_id in suspects]
    return PairedReport(dataset=before.dataset, before=before.predictions, after=after.predictions,
                        all=_slice(pairs), clean=_slice([p for p in pairs if p[0].question_id not in suspects]),
                        suspect_ids=present, excluded=excluded)
