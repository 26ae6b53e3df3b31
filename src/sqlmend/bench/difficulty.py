"""How hard each question is for real systems: an item-response model over their correctness.

For benchmarks only (``sqlmend bench model-sim``, the difficulty-aware simulated model). Real
models' mistakes sit on the hard questions, the same ones the system under correction got
wrong; a simulated model right on q of *every* question is not like that. This module fits the
one-parameter item-response (Rasch) model to the verdicts of real systems on a benchmark: system
s answers question j right with probability sigmoid(theta_s - b_j), the difficulties b_j drawn
from a normal N(0, sigma^2). The abilities theta_s and the spread sigma are fitted by marginal
maximum likelihood (the difficulties integrated out on a fixed grid), then each question's
difficulty has a posterior over the grid, given the systems' verdicts on it.

A new model of ability theta answers question j right with the posterior mean of
sigmoid(theta - b_j); :meth:`Difficulty.p_right` gives it for every question, and
:meth:`Difficulty.theta_for` the ability whose mean over the questions is a chosen quality q.
So a simulated model of quality q is right on q of the questions on average, more often on the
easy ones, less on those the real systems missed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

#: The grid of difficulties the posterior lives on (logits).
GRID = np.linspace(-12.0, 12.0, 241)


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


@dataclass
class Difficulty:
    """The fitted model (see the module doc).

    Attributes:
        questions: the question ids, in the order of the rows of ``posterior``.
        systems: the systems it was fitted on.
        abilities: each system's fitted theta.
        sigma: the fitted spread of the difficulties.
        posterior: ``(questions, grid)``: each question's posterior weights over :data:`GRID`.
    """

    questions: list[str]
    systems: list[str]
    abilities: list[float]
    sigma: float
    posterior: np.ndarray

    def _probs(self, theta: float) -> np.ndarray:
        """Each question's probability of a right answer at ability ``theta``, in ``questions`` order."""
        return self.posterior @ (1.0 / (1.0 + np.exp(-(theta - GRID))))

    def p_right(self, theta: float) -> dict[str, float]:
        """Each question's probability of a right answer from a model of ability ``theta``."""
        return dict(zip(self.questions, map(float, self._probs(theta))))

    def mean(self, theta: float) -> float:
        """The mean of :meth:`p_right` over the questions."""
        return float(np.mean(self._probs(theta)))

    def theta_for(self, quality: float) -> float:
        """The ability whose mean probability of a right answer is ``quality`` (0 < quality < 1)."""
        from scipy.optimize import brentq

        if not 0.0 < quality < 1.0:
            raise ValueError(f"a difficulty-aware quality is strictly between 0 and 1, got {quality}")
        return float(brentq(lambda t: self.mean(t) - quality, -30.0, 30.0, xtol=1e-9))

    def describe(self) -> str:
        return (f"Rasch over {', '.join(self.systems)} (abilities "
                f"{', '.join(f'{a:.2f}' for a in self.abilities)}, difficulty spread {self.sigma:.2f})")


def fit(verdicts: Mapping[str, Mapping[str, bool]], questions: Iterable[str] | None = None) -> Difficulty:
    """Fit the item-response model to real systems' verdicts.

    Args:
        verdicts: ``{system: {question_id: right}}``; a question a system has no verdict on is left
            out of that system's likelihood.
        questions: the questions to fit (default: every question some system has a verdict on).

    Returns:
        The fitted :class:`Difficulty`.

    Raises:
        ValueError: fewer than two systems, or no question.
    """
    from scipy.optimize import minimize

    systems = sorted(verdicts)
    if len(systems) < 2:
        raise ValueError("an item-response model needs the verdicts of at least two systems")
    qs = list(questions) if questions is not None else sorted({q for v in verdicts.values() for q in v})
    if not qs:
        raise ValueError("no question to fit")
    seen = np.array([[q in verdicts[s] for s in systems] for q in qs], dtype=float)
    right = np.array([[bool(verdicts[s].get(q, False)) for s in systems] for q in qs], dtype=float)

    def loglik(theta: np.ndarray) -> np.ndarray:
        """``(questions, grid)``: the log-likelihood of each question's verdicts at each difficulty."""
        z = theta[None, :, None] - GRID[None, None, :]  # (1, systems, grid)
        per = right[:, :, None] * _log_sigmoid(z) + (1 - right[:, :, None]) * _log_sigmoid(-z)
        return (per * seen[:, :, None]).sum(axis=1)

    def log_prior(log_sigma: float) -> np.ndarray:
        w = -0.5 * (GRID / np.exp(log_sigma)) ** 2
        return w - np.logaddexp.reduce(w)

    def objective(params: np.ndarray) -> float:
        joint = loglik(params[:-1]) + log_prior(params[-1])[None, :]
        return -float(np.logaddexp.reduce(joint, axis=1).sum())

    start = np.concatenate([np.zeros(len(systems)), [0.5]])
    res = minimize(objective, start, method="L-BFGS-B",
                   bounds=[(-10, 10)] * len(systems) + [(np.log(0.05), np.log(6.0))])
    theta, log_sigma = res.x[:-1], float(res.x[-1])
    joint = loglik(theta) + log_prior(log_sigma)[None, :]
    post = np.exp(joint - np.logaddexp.reduce(joint, axis=1)[:, None])
    return Difficulty(qs, systems, [round(float(t), 4) for t in theta], float(np.exp(log_sigma)), post)


def verdicts_of(reports: Mapping[str, Any]) -> dict[str, dict[str, bool]]:
    """``{system: {question_id: right}}`` from evaluator reports (:class:`~sqlmend.evaluation.evaluate.EvalReport`),
    scored questions only (a time-out counts as wrong, a gold that fails is no verdict)."""
    return {name: {r.question_id: r.correct for r in report.results if r.scored} for name, report in reports.items()}
