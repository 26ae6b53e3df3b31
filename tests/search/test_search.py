"""The repair search on real Spider databases: it finds known fixes, keeps correct queries, runs as a stage."""

from __future__ import annotations

import numpy as np
import pytest

from sqlmend import llm, rules
from sqlmend.db import connect
from sqlmend.db.base import WORK_PER_SECOND
from sqlmend.errors import DeadlineExceeded, WorkLimitExceeded
from sqlmend.pipeline import Pipeline, PipelineConfig
from sqlmend.search import SearchInput, SearchSettings, execute_original, result_key, search
from sqlmend.search.stage import SearchOptions, SearchStage
from sqlmend.search.verifier import WEIGHTS, FeatureVerifier, load_weights
from sqlmend.search.features import FEATURE_NAMES
from sqlmend.stage import StageContext
from sqlmend.types import Task

# Spider dev q111 (car_1) as GPT-4 zero-shot wrote it: the make is compared with the model column
Q111 = "What is the accelerate of the car make amc hornet sportabout (sw)?"
WRONG_111 = ("SELECT Accelerate FROM car_names AS cn JOIN cars_data AS cd ON cn.MakeId = cd.Id "
             "WHERE cn.Model = \"amc hornet sportabout (sw)\";")
GOLD_111 = ("SELECT T1.Accelerate FROM CARS_DATA AS T1 JOIN CAR_NAMES AS T2 ON T1.Id = T2.MakeId "
            "WHERE T2.Make = 'amc hornet sportabout (sw)';")


@pytest.fixture
def car_1(spider_db):
    with connect(str(spider_db("car_1"))) as db:
        yield db


def test_search_reaches_the_gold_rows_of_a_real_wrong_prediction(car_1):
    orig = execute_original(car_1, WRONG_111, timeout=5, max_rows=2000)
    assert orig.result is not None and orig.result.rows == []  # the model column holds no such value
    found = search(car_1, orig, SearchInput(Q111, car_1.schema(), car_1.value_index()),
                   settings=SearchSettings(budget=5.0))
    gold = result_key(car_1.execute(GOLD_111))
    hits = [c for c in found.candidates if result_key(c.result) == gold]
    assert hits, [c.sql for c in found.candidates]
    assert {g for c in hits for g in c.generators} & {"literal_rebind", "condition_column"}
    keys = [result_key(c.result) for c in found.candidates]
    assert len(keys) == len(set(keys)), "candidates are deduplicated by result"
    assert result_key(orig.result) not in keys
    assert found.executed <= 200


def test_a_failing_original_two_edits_away_is_reached_through_its_failing_first_edit(car_1):
    # two ambiguous columns: qualifying one leaves the query failing on the other
    sql = ("SELECT Maker, Model FROM car_makers AS T1 JOIN model_list AS T2 ON T1.Id = T2.Maker "
           "JOIN car_names AS T3 ON T2.Model = T3.Model")
    gold = result_key(car_1.execute(sql.replace("Maker, Model", "T1.Maker, T2.Model", 1)))
    orig = execute_original(car_1, sql, timeout=5, max_rows=2000)
    assert "ambiguous" in orig.error
    inp = SearchInput("What are the makers and models of every car name?", car_1.schema(), car_1.value_index())
    without = search(car_1, orig, inp, settings=SearchSettings(budget=5.0, expand_failing=0))
    assert without.candidates == [] and without.failed == without.executed
    found = search(car_1, orig, inp, settings=SearchSettings(budget=5.0))
    hits = [c for c in found.candidates if result_key(c.result) == gold]
    assert hits and hits[0].generators == ["column_qualify", "column_qualify"], [c.edits for c in hits]


def test_beam_and_budget_bound_the_search(car_1):
    orig = execute_original(car_1, "SELECT Model, Make FROM car_names WHERE MakeId > 3", 5, 2000)
    found = search(car_1, orig, SearchInput("Which models have an id above 3?", car_1.schema(),
                                            car_1.value_index()), settings=SearchSettings(beam=5))
    assert found.executed == 5 and found.stopped == "beam"


def test_the_budget_counts_work_so_a_busy_machine_gets_the_same_candidates(car_1):
    """The budget is the work done (search.engine.COST), not the clock: a search cut short by it
    stops at the same candidate when another thread keeps the interpreter busy all along."""
    import threading

    orig = execute_original(car_1, WRONG_111, 5, 2000)
    inp = SearchInput(Q111, car_1.schema(), car_1.value_index())
    settings = SearchSettings(budget=0.02, max_seconds=60)
    idle = search(car_1, orig, inp, settings=settings)
    assert idle.stopped == "budget" and idle.cost > 0.02 and idle.work >= 0 and idle.candidates
    stop = threading.Event()

    def spin():  # holds the GIL half the time: the search's seconds double, its work does not
        while not stop.is_set():
            sum(i * i for i in range(10_000))

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        busy = search(car_1, orig, inp, settings=settings)
    finally:
        stop.set()
        thread.join()
    assert [c.sql for c in busy.candidates] == [c.sql for c in idle.candidates]
    assert (busy.generated, busy.executed, busy.work, busy.cost) == (idle.generated, idle.executed, idle.work,
                                                                     idle.cost)


def test_the_wall_clock_is_a_safety_net_that_ends_the_item_never_another_answer(car_1):
    """Past ``max_seconds`` a search on an engine that counts work does not return fewer
    candidates (an answer that would depend on the load): it raises the item's "timed out"."""
    orig = execute_original(car_1, WRONG_111, 5, 2000)
    inp = SearchInput(Q111, car_1.schema(), car_1.value_index())
    with pytest.raises(DeadlineExceeded, match="timed out"):
        search(car_1, orig, inp, settings=SearchSettings(budget=1000, max_seconds=0.001))


def test_a_candidate_is_cut_at_its_work_limit_not_at_a_time(car_1):
    """A candidate's limit on SQLite is a count of VM instructions: the same query stops at the
    same tick however busy the machine is, and says so."""
    heavy = "SELECT count(*) FROM cars_data a, cars_data b, car_names c"
    stops = []
    for _ in range(2):
        with pytest.raises(WorkLimitExceeded, match="work limit") as err:
            car_1.execute(heavy, timeout=0.05)
        stops.append((err.value.work, car_1.last_work()))
    assert stops[0] == stops[1] and stops[0][0] == int(0.05 * WORK_PER_SECOND)


def test_the_shipped_verifier_loads_and_scores(car_1):
    spec = load_weights()
    trained = spec["model"]["features"]
    # generators added since training add only their (unseen) indicators
    assert WEIGHTS.exists() and set(trained) <= set(FEATURE_NAMES)
    assert all(n.startswith("e_gen_") for n in set(FEATURE_NAMES) - set(trained))
    assert "command" in spec["training"] and spec["training"]["dataset"] == "spider-train"
    assert 0.0 <= spec["decision"]["margin"] < 1.0
    v = FeatureVerifier()
    assert v.unseen_generators == sorted(n.removeprefix("e_gen_") for n in set(FEATURE_NAMES) - set(trained))
    inp = SearchInput(Q111, car_1.schema(), car_1.value_index())
    orig = execute_original(car_1, WRONG_111, 5, 2000)
    found = search(car_1, orig, inp, settings=SearchSettings(budget=5.0))
    scores = v.score_all(inp, orig, found.candidates)
    assert len(scores) == len(found.candidates) + 1 and all(0.0 <= s <= 1.0 for s in scores)
    gold = result_key(car_1.execute(GOLD_111))
    best = max(range(len(found.candidates)), key=lambda i: scores[i + 1])
    assert result_key(found.candidates[best].result) == gold, "the verifier ranks the fix first"


def _task(question: str, sql: str) -> Task:
    return Task(question_id="t", db_id="car_1", question=question, sql=sql, db=str(_car_path()))


def test_stage_end_to_end_through_the_pipeline():
    # every rule but VL07, whose proven fix would leave the search nothing to do (next test)
    codes = [r.code for r in rules.all_rules() if r.code != "VL07"]
    cfg = PipelineConfig(stages=["static", "search", "guard"], options={"static": {"codes": codes}})
    pipe = Pipeline(cfg, resolve=lambda stage: None)
    c = pipe.correct(_task(Q111, WRONG_111))
    trace = next(t for t in c.stages if t.stage == "search")
    assert trace.status == "ran" and "empty result" in trace.detail["flags"]
    assert trace.calls == 0, "no model call without an endpoint"
    assert trace.detail["top"] and all({"sql", "edits", "score", "rows"} <= set(t) for t in trace.detail["top"])
    assert c.changed and trace.verdict.accepted, trace.note
    with connect(str(_car_path())) as db:
        assert result_key(db.execute(c.sql)) == result_key(db.execute(GOLD_111))


def _car_path():
    from sqlmend.paths import data_root

    return data_root() / "spider" / "database" / "car_1" / "car_1.sqlite"


def test_a_value_in_a_sibling_column_is_the_static_stage_s_proven_fix():
    # cn.Model never holds the make's name; car_names.Make, in scope, does (VL07, strict)
    pipe = Pipeline(PipelineConfig(stages=["static", "search", "guard"]), resolve=lambda stage: None)
    c = pipe.correct(_task(Q111, WRONG_111))
    static = next(t for t in c.stages if t.stage == "static")
    assert static.verdict.accepted and "VL07" in {f.code for f in static.findings}
    assert next(t for t in c.stages if t.stage == "search").status == "skipped"
    with connect(str(_car_path())) as db:
        assert result_key(db.execute(c.sql)) == result_key(db.execute(GOLD_111))


def test_a_correct_query_is_kept_even_when_searched():
    pipe = Pipeline(PipelineConfig(stages=["static", "search", "guard"], options={"search": {"scope": "all"}}),
                    resolve=lambda stage: None)
    c = pipe.correct(_task(Q111, GOLD_111))
    trace = next(t for t in c.stages if t.stage == "search")
    assert trace.status == "ran" and trace.detail["distinct"] > 0
    assert not c.changed, trace.note


def test_an_unflagged_query_the_verifier_trusts_is_not_searched_by_default():
    pipe = Pipeline(PipelineConfig(stages=["search", "guard"]), resolve=lambda stage: None)
    c = pipe.correct(_task(Q111, GOLD_111))
    trace = next(t for t in c.stages if t.stage == "search")
    assert trace.status == "skipped" and "trusts it" in trace.note
    assert trace.detail["original_score"] >= FeatureVerifier().suspect_below
    flagged = Pipeline(PipelineConfig(stages=["search", "guard"], options={"search": {"scope": "flagged"}}),
                       resolve=lambda stage: None).correct(_task(Q111, GOLD_111))
    trace = next(t for t in flagged.stages if t.stage == "search")
    assert trace.status == "skipped" and "scope=flagged" in trace.note


def test_with_an_endpoint_one_listwise_call_chooses(car_1):
    model = llm.ReplayBackend.scripted(["1"])
    stage = SearchStage(SearchOptions())
    ctx = StageContext(task=_task(Q111, WRONG_111), db=car_1, sql=WRONG_111,
                       resolve=lambda s: model if s == "verifier" else None)
    trace = stage.run(ctx)
    assert trace.calls == 1 and len(model.history) == 1
    prompt = str(model.history[0])
    assert "[0]" in prompt and "[1]" in prompt and Q111 in prompt
    assert trace.candidate == trace.detail["top"][0]["sql"] and trace.verdict.accepted


def test_unknown_option_is_refused():
    from sqlmend.errors import ConfigError

    with pytest.raises(ConfigError, match="known: .*beam"):
        SearchStage.from_config({"beem": 3})


def test_suspect_scope_searches_an_unflagged_query_only_when_the_verifier_doubts_it():
    def trace_of(below):
        pipe = Pipeline(PipelineConfig(stages=["search", "guard"],
                                       options={"search": {"scope": "suspect", "suspect_below": below}}),
                        resolve=lambda stage: None)
        c = pipe.correct(_task(Q111, GOLD_111))
        return next(t for t in c.stages if t.stage == "search")

    trusted = trace_of(0.0)
    assert trusted.status == "skipped" and "trusts it" in trusted.note
    score = trusted.detail["original_score"]
    doubted = trace_of(min(1.0, score + 0.01))
    assert doubted.status == "ran" and any(f.startswith("verifier score") for f in doubted.detail["flags"])
    assert doubted.detail["distinct"] > 0


def test_rerank_cross_lets_the_shipped_cross_encoder_decide_with_its_own_margin(car_1):
    pytest.importorskip("peft")
    from sqlmend.search.cross import CrossEncoder

    enc = CrossEncoder()
    assert {"margin", "all_margin", "suspect_margin"} <= set(enc.decision)
    stage = SearchStage.from_config({"rerank": "cross"})
    trace = stage.run(StageContext(task=_task(Q111, WRONG_111), db=car_1, sql=WRONG_111, resolve=lambda s: None))
    w = enc.weight  # the feature score's weight in the mean, calibrated with the margins
    assert 0.5 <= w < 1 and "weight" in enc.decision
    assert trace.detail["verifier"].startswith(f"{w:g} x features + {1 - w:g} x cross-encoder (mean)"), \
        trace.detail["verifier"]
    assert f"vs margin {enc.margin_for('suspect'):g}" in trace.detail["verifier"]
    assert trace.calls == 0
    top = trace.detail["top"]  # the reranked candidates, best mean first, with both scores
    assert top and all({"score", "mean"} <= set(t) for t in top) and "mean" in trace.detail["original"]
    assert [t["mean"] for t in top] == sorted((t["mean"] for t in top), reverse=True)
    if trace.candidate:  # whatever it chose passed through the guard
        assert trace.verdict is not None
    # a correct query searched with every candidate scored by both is kept
    kept = SearchStage.from_config({"rerank": "cross", "scope": "all"}).run(
        StageContext(task=_task(Q111, GOLD_111), db=car_1, sql=GOLD_111, resolve=lambda s: None))
    assert kept.candidate is None, kept.note


def test_an_original_that_fails_to_run_is_replaced_by_the_best_candidate_without_the_margin(car_1):
    """Spider dev q95 as codes-1b wrote it: ``model`` is a column of car_names, not cars_data, so the
    engine refuses it. Whatever replaces it cannot lose a right answer; the join the search adds is
    the gold's rows. With failed_original=margin the small score gap keeps the failing query."""
    question = "Which model of the car has the minimum horsepower?"
    wrong = "SELECT model FROM cars_data ORDER BY horsepower LIMIT 1"
    gold = ("SELECT T1.Model FROM CAR_NAMES AS T1 JOIN CARS_DATA AS T2 ON T1.MakeId = T2.Id "
            "ORDER BY T2.horsepower ASC LIMIT 1")

    def run(**options):  # a generous budget: a loaded machine must not cut the search short
        ctx = StageContext(task=_task(question, wrong), db=car_1, sql=wrong, resolve=lambda s: None)
        return SearchStage.from_config({"budget": 5.0, **options}).run(ctx)

    replaced = run()
    assert "execution error" in replaced.detail["flags"]
    # the shipped weights hold a ranker trained on failing originals: its first choice replaces it
    assert "fails to run, so the failing-original ranker's" in replaced.detail["verifier"]
    assert replaced.verdict is not None and replaced.verdict.accepted, replaced.note
    assert result_key(car_1.execute(replaced.verdict.sql)) == result_key(car_1.execute(gold))
    first = run(failed_choice="verifier")
    assert "fails to run, so the verifier choice" in first.detail["verifier"]
    assert result_key(car_1.execute(first.verdict.sql)) == result_key(car_1.execute(gold))
    smallest = run(failed_choice="minimal")  # the candidate keeping the most of it: here the same join
    assert "the minimal choice" in smallest.detail["verifier"] and smallest.verdict.sql == replaced.verdict.sql
    kept = run(failed_original="margin")
    assert kept.candidate is None and "the original is kept" in kept.note


def test_trees_read_their_features_by_name_and_refuse_rows_without_one_they_split_on():
    from sqlmend.search.verifier import TreeEnsemble

    spec = {"baseline": 0.0, "features": ["a", "b"],
            "trees": [{"feature": [1, 0, 0], "threshold": [0.5, 0, 0], "left": [1, 0, 0], "right": [2, 0, 0],
                       "missing_left": [0, 0, 0], "is_leaf": [0, 1, 1], "value": [0, -1.0, 1.0]}]}
    rows = np.asarray([[0.0, 9.0, 1.0], [0.0, 9.0, 0.0]])  # columns c, a, b: b splits
    moved = TreeEnsemble(spec, names=["c", "a", "b"])
    assert moved.raw(rows).tolist() == [1.0, -1.0]
    assert TreeEnsemble(spec).raw(rows[:, [1, 2]]).tolist() == [1.0, -1.0]
    with pytest.raises(ValueError, match="lack"):
        TreeEnsemble(spec, names=["a", "c"])
