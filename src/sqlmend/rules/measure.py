"""Detection precision and recall of the rules against execution correctness, all and gold-clean.

A question is *gold-suspect* when the rules find something in its gold SQL
(e.g. flight_2's gold compares with 'Aberdeen' while the data holds
'Aberdeen '): a finding on such a question may be right while the label says
otherwise. Every figure is given over all scored predictions and over the
gold-clean ones.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable


@dataclass
class Judged:
    """One scored prediction: what the rules found and whether it is correct by execution."""

    question_id: str
    system: str
    codes: set[str]  # codes of its findings
    strict_codes: set[str]  # codes of its strict findings
    correct: bool
    suspect: bool  # the gold of its question triggers a rule


@dataclass
class Counts:
    """Detection counts of one rule (or of the whole catalogue) over a set of predictions."""

    flagged: int = 0
    true_pos: int = 0
    wrong: int = 0  # wrong predictions in the set (the recall denominator)
    questions: list[str] = field(default_factory=list)  # false positives' ids, for reading

    @property
    def precision(self) -> float | None:
        return self.true_pos / self.flagged if self.flagged else None

    @property
    def recall(self) -> float:
        return self.true_pos / self.wrong if self.wrong else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"flagged": self.flagged, "true_pos": self.true_pos, "wrong": self.wrong,
                "precision": None if self.precision is None else round(self.precision, 4),
                "recall": round(self.recall, 4), "false_positives": self.questions[:20]}


def _count(items: list[Judged], hit) -> Counts:
    c = Counts(wrong=sum(not j.correct for j in items))
    for j in items:
        if hit(j):
            c.flagged += 1
            if j.correct:
                c.questions.append(f"{j.system}:{j.question_id}")
            else:
                c.true_pos += 1
    return c


def detection(judged: Iterable[Judged], codes: list[str]) -> dict[str, Any]:
    """Per-rule and overall detection figures, over all predictions and the gold-clean ones.

    Args:
        judged: the scored predictions.
        codes: the rule codes to report.

    Returns:
        ``{"rules": {code: {"all": Counts, "clean": Counts}}, "any": ..., "strict": ...}``
        with :class:`Counts` as dicts.
    """
    items = list(judged)
    clean = [j for j in items if not j.suspect]
    out: dict[str, Any] = {"rules": {}}
    for code in codes:
        out["rules"][code] = {"all": _count(items, lambda j, c=code: c in j.codes).to_dict(),
                              "clean": _count(clean, lambda j, c=code: c in j.codes).to_dict()}
    for name, hit in (("any", lambda j: bool(j.codes)), ("strict", lambda j: bool(j.strict_codes))):
        out[name] = {"all": _count(items, hit).to_dict(), "clean": _count(clean, hit).to_dict()}
    return out


def latency(seconds: list[float]) -> dict[str, float]:
    """Median and 95th percentile, in milliseconds.

    Args:
        seconds: per-query durations.

    Returns:
        ``{"median_ms", "p95_ms", "n"}``.
    """
    if not seconds:
        return {"median_ms": 0.0, "p95_ms": 0.0, "n": 0}
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
    return {"median_ms": round(statistics.median(ms), 2), "p95_ms": round(p95, 2), "n": len(ms)}
