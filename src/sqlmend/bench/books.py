"""Answer books: a stand-in model's own answer to each question of a benchmark (benchmarks only).

A :class:`~sqlmend.bench.simmodel.ReplayedModel` answers from books. Two kinds:

* :class:`FileBook`: a real system's prediction file (``sqlmend bench model-sim --replay FILE``):
  a real model's real answers, its difficulty and its mistakes included;
* :class:`DifficultyBook`: the difficulty-aware simulated model of quality q: on question j the
  gold re-written with probability P_j (:mod:`sqlmend.bench.difficulty`: how hard j is for real
  systems, the file under correction left out; the mean of P_j over the questions is q), else a
  real wrong answer of another system to j (an execution-checked perturbation of the gold where
  no other system was wrong). Each question's draw is a hash of the seed and the question, so
  what a model of quality 0.4 answers right, a model of 0.6 answers right too.

:func:`answer_stats` measures a book against the file under correction: the share of questions
it answers right, P(right | original wrong), P(wrong | original right), and the accuracy of a
judge that trusts it (right about the original exactly when its verdict, "the original returns
my answer's rows", is the truth).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

from sqlmend.bench.simmodel import Oracle, SqlSource, uniform


class FileBook:
    """A prediction file's SQL, one per question (missing or empty: no answer, no change).

    Args:
        name: the book's name in rows and logs (the file's stem).
        answers: ``{question_id: SQL}``.
    """

    def __init__(self, name: str, answers: Mapping[str, str]):
        self.name = name
        self.answers = {k: v for k, v in answers.items() if v and v.strip()}

    def answer(self, question_id: str) -> str | None:
        return self.answers.get(question_id)


class DifficultyBook:
    """The difficulty-aware simulated model's answers (see the module doc).

    Args:
        name: the book's name (say the quality in it).
        source: where its right and wrong SQL come from (the file under correction excluded).
        p_right: ``{question_id: P(right)}`` (:meth:`sqlmend.bench.difficulty.Difficulty.p_right`);
            a question not in it gets no answer.
        seed: the seed of every draw.
    """

    def __init__(self, name: str, source: SqlSource, p_right: Mapping[str, float], seed: int = 0):
        self.name, self.source, self.p_right, self.seed = name, source, dict(p_right), seed
        self._lock = threading.Lock()
        self._answers: dict[str, str | None] = {}

    def right(self, question_id: str) -> bool | None:
        """Whether the draw makes the answer right (None: no answer to this question)."""
        p = self.p_right.get(question_id)
        return None if p is None else uniform(self.seed, question_id, "belief") < p

    def answer(self, question_id: str) -> str | None:
        with self._lock:
            if question_id in self._answers:
                return self._answers[question_id]
        right = self.right(question_id)
        if right is None:
            text = None
        elif right:
            text = self.source.right_sql(question_id, int(uniform(self.seed, question_id, "style") * 3))
        else:
            text = self.source.wrong_sql(question_id, uniform(self.seed, question_id, "pick"))
        with self._lock:
            self._answers[question_id] = text
        return text


@dataclass
class AnswerStats:
    """A book measured against the file under correction, on the scored questions of a scope."""

    n: int
    ex: float  # the book's own execution accuracy (share of questions it answers right)
    right_if_wrong: float  # P(its answer is right | the original is wrong)
    wrong_if_right: float  # P(its answer is wrong | the original is right)
    judge: float  # accuracy of the judge that trusts it, about the originals
    originals_wrong: int
    originals_right: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def answer_stats(book: Any, oracle: Oracle, originals: Mapping[str, str], correct: Mapping[str, bool],
                 questions: Iterable[str]) -> AnswerStats:
    """Measure ``book`` against the originals (see the module doc).

    Args:
        book: the answer book.
        oracle: the benchmark's golds.
        originals: ``{question_id: SQL}``, the file under correction.
        correct: ``{question_id: right}``, the evaluator's verdicts on the originals.
        questions: the scored questions to measure on.

    Returns:
        The stats (no answer is no change: right exactly when the original is).
    """
    qs = [q for q in questions if q in correct]
    right = judged = 0
    on_wrong = on_right = 0
    n_wrong = sum(not correct[q] for q in qs)
    for q in qs:
        mine = book.answer(q)
        ok = oracle.right(q, mine) if mine else correct[q]
        right += ok
        if correct[q]:
            on_right += not ok
        else:
            on_wrong += ok
        verdict = oracle.agree(q, originals.get(q, ""), mine) if mine else True  # "the original is right"
        judged += verdict == correct[q]
    n = len(qs)
    return AnswerStats(n=n, ex=round(right / n, 4) if n else 0.0,
                       right_if_wrong=round(on_wrong / n_wrong, 4) if n_wrong else 0.0,
                       wrong_if_right=round(on_right / (n - n_wrong), 4) if n - n_wrong else 0.0,
                       judge=round(judged / n, 4) if n else 0.0, originals_wrong=n_wrong,
                       originals_right=n - n_wrong)
