"""The risk rule's threshold: conformal risk control on a labelled history.

A *history* is a set of items whose original query is known to be correct or wrong (the MIRA
protocol's history part of a prediction file, where the gold decides; or a reviewed run), each with
the score the risk rule gave its candidate (:mod:`sqlmend.consensus.vote`; None: no candidate).
Breaking a correct query is the loss: ``loss_i(t) = 1`` when item ``i``'s original is correct and its
candidate's score is at least ``t``. The loss is bounded by 1 and does not grow with ``t``, so
conformal risk control (Angelopoulos, Bates, Fisch, Lei, Schuster: "Conformal Risk Control", ICLR
2024) gives the threshold

    t = min { t : n/(n+1) * R_n(t) + 1/(n+1) <= alpha },   R_n(t) = (1/n) * sum_i loss_i(t)

over the ``n`` correct queries of the history, and with it ``E[loss of a new correct query] <= alpha``:
the expected share of correct queries the rule breaks is at most ``alpha`` on queries exchangeable
with the history's (the same system on the same kind of questions). In counts: at most
``floor(alpha * (n + 1) - 1)`` correct history queries may score at or above ``t``; with
``n + 1 < 1 / alpha`` not even none is enough, and the rule replaces only originals that fail to run.

>>> h = History([Labelled("a", True, 0.9), Labelled("b", True, 0.2), Labelled("c", False, 0.8)] +
...             [Labelled(str(i), True, None) for i in range(200)])
>>> h.correct, h.allowed(0.01)
(202, 1)
>>> h.threshold(0.01) > 0.2, h.threshold(0.01) <= 0.9
(True, True)
>>> History([Labelled("a", True, 0.5)]).threshold(0.01) is None
True
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlmend.errors import ConfigError

KIND = "sqlmend-consensus-history"
VERSION = 1
#: Every score lies in [-1, 3]: a threshold below it replaces every candidate.
LOWEST = -1.0
#: What the strict rule's replacements add to their score: they rank above every other candidate, so
#: the family of rules the threshold picks from runs from "the strict rule's most certain replacements
#: only" (a threshold above 2) through "the strict rule and every candidate scoring from t on" (t <= 1).
STRICT_FIRST = 2.0


def rank(score: float, strict: bool) -> float:
    """The risk rule's score of a candidate: its score in [-1, 1], plus :data:`STRICT_FIRST` when the strict
    rule would replace with it.

    >>> rank(0.25, False), rank(0.25, True)
    (0.25, 2.25)
    """
    return score + STRICT_FIRST if strict else score


@dataclass
class Labelled:
    """One history item: whether its original was correct, and its candidate's score (None: none)."""

    question_id: str
    correct: bool
    score: float | None
    fixes: bool | None = None  # whether the candidate would have been right (None: not known)


@dataclass
class History:
    """A labelled history of the risk rule's scores (see the module doc)."""

    items: list[Labelled] = field(default_factory=list)
    source: str = ""
    alternatives: list[str] = field(default_factory=list)  # what the alternatives were (file names)

    @property
    def correct(self) -> int:
        """Correct originals in the history (the ``n`` of the bound)."""
        return sum(1 for i in self.items if i.correct)

    def allowed(self, alpha: float) -> int:
        """How many correct history queries may score at or above the threshold (-1: not even none)."""
        return math.floor(alpha * (self.correct + 1) - 1 + 1e-9)

    def threshold(self, alpha: float) -> float | None:
        """The smallest threshold that bounds the expected break rate by ``alpha``; None when the history
        has too few correct queries for that ``alpha`` (``n + 1 < 1 / alpha``).

        Raises:
            ConfigError: ``alpha`` is not in (0, 1).
        """
        if not 0 < alpha < 1:
            raise ConfigError(f"the risk must be between 0 and 1 (a share of correct queries), got {alpha}")
        allowed = self.allowed(alpha)
        if allowed < 0:
            return None
        scores = sorted((i.score for i in self.items if i.correct and i.score is not None), reverse=True)
        if len(scores) <= allowed:
            return LOWEST
        return math.nextafter(scores[allowed], math.inf)  # above the (allowed+1)-th highest

    def describe(self, alpha: float) -> str:
        t = self.threshold(alpha)
        where = f" of {self.source}" if self.source else ""
        if t is None:
            return (f"risk {alpha:g}: {self.correct} correct history queries{where} are too few for it (conformal "
                    f"risk control needs {math.ceil(1 / alpha - 1)}); only originals that fail to run are replaced")
        return (f"risk {alpha:g}: threshold {t:.4f} by conformal risk control on {self.correct} correct history "
                f"queries{where}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "version": VERSION, "source": self.source, "alternatives": self.alternatives,
                "items": [asdict(i) for i in self.items]}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "History":
        """Read a history file (written by ``sqlmend bench alternatives --history-out`` or :meth:`save`).

        Raises:
            ConfigError: no such file, or not a history file.
        """
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"no such history file: {path}") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: not a consensus history file ({exc})") from None
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise ConfigError(f"{path}: not a consensus history file (expected kind {KIND!r})")
        try:
            items = [Labelled(str(i["question_id"]), bool(i["correct"]),
                              None if i.get("score") is None else float(i["score"]), i.get("fixes"))
                     for i in data.get("items", [])]
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: a history item is malformed ({exc})") from None
        return cls(items, str(data.get("source", "")), list(data.get("alternatives", [])))
