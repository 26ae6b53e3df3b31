"""The risk rule's threshold: conformal risk control on a labelled history (sqlmend.consensus.risk)."""

from __future__ import annotations

import json
import random

import pytest

from sqlmend.consensus.risk import LOWEST, History, Labelled
from sqlmend.errors import ConfigError


def _history(correct_scores, wrong=()):
    items = [Labelled(f"c{i}", True, s) for i, s in enumerate(correct_scores)]
    return History(items + [Labelled(f"w{i}", False, s, True) for i, s in enumerate(wrong)])


def test_the_threshold_lets_through_what_conformal_risk_control_allows():
    # 299 correct queries, alpha 0.01: (c + 1) / (n + 1) <= 0.01 allows c = 2 of them at or above it
    h = _history([0.9, 0.8, 0.7, 0.6] + [None] * 295, wrong=[0.95, 0.5])
    assert h.correct == 299 and h.allowed(0.01) == 2
    t = h.threshold(0.01)
    assert 0.7 < t <= 0.8
    assert sum(1 for i in h.items if i.correct and i.score is not None and i.score >= t) == 2
    assert h.threshold(0.001) is None  # 300 < 1 / 0.001: no threshold bounds that risk
    assert _history([None] * 500).threshold(0.01) == LOWEST  # no correct query has a candidate


def test_a_larger_risk_never_raises_the_threshold():
    rng = random.Random(0)
    h = _history([rng.random() if rng.random() < 0.3 else None for _ in range(1000)])
    ts = [h.threshold(a) for a in (0.005, 0.01, 0.02, 0.05, 0.1)]
    assert ts == sorted(ts, reverse=True)


def test_on_exchangeable_queries_the_break_rate_stays_under_the_risk():
    """Histories and tests drawn from one distribution: the mean break rate over many draws is at most
    alpha (the guarantee is in expectation: here 6 / 301 = 0.0199 exactly, a new query being among the
    top 6 of 301), and not far below it (the bound is tight)."""
    rng = random.Random(1)
    alpha, rates = 0.02, []

    def draw(n):
        return [rng.random() ** 3 if rng.random() < 0.4 else None for _ in range(n)]

    for _ in range(2000):
        t = _history(draw(300)).threshold(alpha)
        test = draw(100)
        rates.append(sum(1 for s in test if s is not None and s >= t) / len(test))
    mean = sum(rates) / len(rates)
    assert 0.9 * alpha < mean <= 1.03 * alpha  # sampling error of the mean over 2,000 draws: about 0.0003


def test_a_history_file_round_trips_and_a_bad_one_is_named(tmp_path):
    h = _history([0.5, None], wrong=[0.2])
    h.source, h.alternatives = "x.sql", ["a", "b"]
    back = History.load(h.save(tmp_path / "h.json"))
    assert back.items == h.items and back.source == "x.sql" and back.alternatives == ["a", "b"]
    (tmp_path / "bad.json").write_text(json.dumps({"kind": "other"}))
    with pytest.raises(ConfigError, match="not a consensus history file"):
        History.load(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="no such history file"):
        History.load(tmp_path / "none.json")
    with pytest.raises(ConfigError, match="between 0 and 1"):
        h.threshold(1.5)
