"""A system's history adapts the search's decision (issue 28): fit, store, decide online, no change without one."""

from __future__ import annotations

import json

import numpy as np

from sqlmend.pipeline import Pipeline, PipelineConfig
from sqlmend.search import adaptation as adapt
from sqlmend.types import Task

Q111 = "What are the names of all European countries with at least 3 manufacturers?"
GOLD_111 = ("SELECT T1.CountryName FROM COUNTRIES AS T1 JOIN CONTINENTS AS T2 ON T1.Continent = T2.ContId "
            "JOIN CAR_MAKERS AS T3 ON T1.CountryId = T3.Country WHERE T2.Continent = 'europe' "
            "GROUP BY T1.CountryName HAVING count(*) >= 3")


def _task(sql: str) -> Task:
    from sqlmend.paths import data_root

    db = data_root() / "spider" / "database" / "car_1" / "car_1.sqlite"
    return Task(question_id="t", db_id="car_1", question=Q111, sql=sql, db=str(db))


def _history(n_right: int, n_correct: int, seed: int = 0) -> tuple[list[adapt.Observation], dict[str, bool]]:
    """Wrong predictions whose second candidate (a projection_drop) is right, and correct ones."""
    rng = np.random.default_rng(seed)
    obs, rights = [], {}
    for i in range(n_right):
        cands = [{"score": 0.2, "generators": ["join_path"], "right": False},
                 {"score": float(rng.uniform(0.05, 0.15)), "generators": ["projection_drop"], "right": True}]
        obs.append(adapt.Observation(f"w{i}", float(rng.uniform(0.3, 0.6)), False, cands))
        rights[f"w{i}"] = False
    for i in range(n_correct):
        cands = [{"score": 0.2, "generators": ["join_path"], "right": False},
                 {"score": float(rng.uniform(0.05, 0.15)), "generators": ["condition_column"], "right": False}]
        obs.append(adapt.Observation(f"c{i}", float(rng.uniform(0.3, 0.9)), False, cands))
        rights[f"c{i}"] = True
    return obs, rights


def test_a_habit_in_the_history_is_learned_and_the_decision_picked_on_it():
    obs, rights = _history(30, 60)
    a = adapt.fit("sys", obs, rights, 0.4, 90)
    assert a.threshold is not None and a.fit["cv_net"] >= 2
    assert a.habits["generators"]["projection_drop"] == [30, 30]
    new = adapt.Observation("n", 0.5, False, [{"score": 0.2, "generators": ["join_path"], "right": None},
                                              {"score": 0.1, "generators": ["projection_drop"], "right": None}])
    assert a.choose(new)[0] == 1  # the system's habit beats the shipped verifier's first choice
    failing = adapt.Observation("f", 0.5, True, new.candidates, failing=True)
    assert a.choose(failing)[0] is None  # an original that fails to run is decided as shipped


def test_a_history_without_signal_replaces_nothing():
    obs, rights = _history(1, 20)
    a = adapt.fit("sys", obs, rights, 0.4, 21)
    assert a.threshold is None and a.suspect_below == 0.4
    assert all(a.choose(o)[0] is None for o in obs)


def test_the_fit_is_pulled_toward_the_shipped_verifier():
    X = np.random.default_rng(1).normal(size=(6, len(adapt.NAMES)))
    _, w = adapt.fit_logistic(X, np.array([0, 1, 0, 0, 1, 0.0]), shrink=1e6)
    assert np.allclose(w, adapt.PRIOR, atol=1e-3)


def test_stored_versioned_and_refit_with_added_confirmations(tmp_path):
    obs, rights = _history(30, 60)
    a = adapt.fit("sys", obs, rights, 0.4, 90)
    path = adapt.save(a, tmp_path)
    assert json.loads(path.read_text())["version"] == adapt.VERSION
    back = adapt.load(tmp_path)
    assert back.weights == a.weights and back.threshold == a.threshold and back.label == "sys (history 90)"
    assert adapt.load(tmp_path / "elsewhere") is None
    more, more_rights = _history(5, 0, seed=3)
    refit = adapt.refit(back, [(adapt.Observation(f"x{o.question_id}", o.original_score, o.flagged, o.candidates),
                                more_rights[o.question_id]) for o in more])
    assert refit.history["questions"] == 95 and refit.habits["generators"]["projection_drop"] == [35, 35]


def _search_trace(options: dict) -> tuple[str, dict]:
    cfg = PipelineConfig(stages=["search", "guard"], options={"search": {"scope": "all", **options}})
    c = Pipeline(cfg, resolve=lambda stage: None).correct(_task(GOLD_111))
    return c.sql, next(t for t in c.stages if t.stage == "search")


def test_online_the_stage_decides_with_the_adaptation_and_names_it(tmp_path):
    obs, rights = _history(30, 60)
    a = adapt.fit("sys", obs, rights, 0.4, 90)
    a.threshold = 0.0  # replaces whatever it finds: the guard still decides
    adapt.save(a, tmp_path)
    sql, trace = _search_trace({"adaptation": str(tmp_path)})
    assert trace.detail["adaptation"]["name"] == "sys (history 90)" and trace.detail["adaptation"]["history"] == 90
    assert trace.candidate is not None and "the choice of the adaptation sys (history 90)" in trace.note
    assert trace.verdict is not None  # through the guard


def test_without_an_adaptation_the_output_is_unchanged(tmp_path):
    plain_sql, plain = _search_trace({})
    empty_sql, empty = _search_trace({"adaptation": str(tmp_path)})  # a store folder without one
    timeless = lambda d: {k: v for k, v in d.items() if k != "search_seconds"}  # noqa: E731
    assert (empty_sql, empty.note, timeless(empty.detail), empty.candidate) == (plain_sql, plain.note,
                                                                                timeless(plain.detail), plain.candidate)
    assert "adaptation" not in plain.detail
    obs, rights = _history(1, 20)
    adapt.save(adapt.fit("sys", obs, rights, 0.4, 21), tmp_path)  # one that replaces nothing
    none_sql, none = _search_trace({"adaptation": str(tmp_path)})
    assert none_sql == plain_sql and none.candidate == plain.candidate


def test_correct_memory_store_passes_the_adaptation_to_the_search(tmp_path):
    from sqlmend.cli.correct_cmd import with_memory

    cfg = PipelineConfig(stages=["static", "memory", "search", "guard"])
    assert "search" not in with_memory(cfg, str(tmp_path)).options
    obs, rights = _history(1, 20)
    adapt.save(adapt.fit("sys", obs, rights, 0.4, 21), tmp_path)
    assert with_memory(cfg, str(tmp_path)).options["search"] == {"adaptation": str(tmp_path)}
    url = "postgresql://u@db/mem"  # a PostgreSQL store is asked when the search starts
    assert with_memory(cfg, url, "sys").options["search"] == {"adaptation": url, "adaptation_namespace": "sys"}


def test_a_system_whose_right_first_candidates_stand_higher_gets_its_own_margin():
    obs, rights = [], {}
    for i in range(20):  # wrong originals whose first candidate is right, 0.3 above them
        obs.append(adapt.Observation(f"w{i}", 0.3, False, [{"score": 0.6, "generators": ["join_path"], "right": True}]))
        rights[f"w{i}"] = False
    for i in range(60):  # correct originals whose first candidate stands at most 0.1 above
        gap = 0.1 * (i % 5) / 4
        obs.append(adapt.Observation(f"c{i}", 0.5, False, [{"score": 0.5 + gap, "generators": ["join_path"],
                                                            "right": False}]))
        rights[f"c{i}"] = True
    a = adapt.fit("sys", obs, rights, 0.4, 80, shipped_margin=0.57)
    assert a.margin is not None and 0.1 <= a.margin < 0.3
    assert a.choose(obs[0])[0] == 0 and a.choose(obs[-1])[0] is None
