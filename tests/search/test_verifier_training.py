"""The verifier's export (trees as arrays, evaluated with numpy) and its margin calibration."""

from __future__ import annotations

import numpy as np
import pytest

from sqlmend.search import train
from sqlmend.search.features import FEATURE_NAMES
from sqlmend.search.verifier import TreeEnsemble

pytestmark = pytest.mark.slow


def test_exported_trees_predict_what_sklearn_predicts():
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, len(FEATURE_NAMES)))
    X[:50, 3] = np.nan  # missing values take the learned side
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    clf = HistGradientBoostingClassifier(max_iter=30).fit(X, y)
    ours = TreeEnsemble(train.export(clf)).proba(X)
    assert np.abs(ours - clf.predict_proba(X)[:, 1]).max() < 1e-5


def test_calibration_picks_the_smallest_margin_meeting_both_targets():
    decided = ([{"orig": 1, "best": 0, "gap": 0.15, "kind": "gold", "reachable": 0}] +
               [{"orig": 0, "best": 1, "gap": g, "kind": "rule", "reachable": 1} for g in (0.3, 0.5, 0.7)] +
               [{"orig": 0, "best": 0, "gap": 0.05, "kind": "rule", "reachable": 0}] +
               [{"orig": 1, "best": 0, "gap": -0.5, "kind": "gold", "reachable": 0}] * 50)
    chosen = train.calibrate(decided, precision=0.9, max_false_rate=0.002)
    assert chosen["margin"] == 0.15 and chosen["fixed"] == 3 and chosen["broken"] == 0
    loose = train.outcome(decided, 0.0)
    assert loose["broken"] == 1 and loose["replaced"] == 5 and abs(loose["precision"] - 3 / 5) < 1e-9


def test_originals_that_fail_to_run_are_counted_by_the_first_choice_not_by_any_margin():
    ok = [{"orig": 0, "best": 1, "gap": 0.9, "kind": "rule1", "reachable": 1, "fails": False}]
    fails = [{"orig": 0, "best": b, "gap": -0.3, "kind": "failing:unqualified", "reachable": 1, "fails": True}
             for b in (1, 1, 0)] + [{"orig": 0, "best": 0, "gap": -1.0, "kind": "failing:join dropped",
                                     "reachable": 0, "fails": True}]
    at_zero = train.outcome(ok + fails, 0.0)
    assert at_zero["replaced"] == 1 and at_zero["wrong_originals"] == 1  # the failing ones left out
    assert train.first_choice(ok + fails) == {"originals": 4, "reachable": 3, "fixed": 2}


def test_scopes_search_what_they_say_and_the_suspect_threshold_is_calibrated():
    # two correct originals the verifier trusts, one it doubts; wrong originals flagged or doubted
    decided = ([{"orig": 1, "best": 0, "gap": 0.2, "flagged": False, "s0": 0.9, "kind": "gold", "reachable": 0}] * 2
               + [{"orig": 1, "best": 0, "gap": 0.6, "flagged": False, "s0": 0.3, "kind": "gold", "reachable": 0}]
               + [{"orig": 0, "best": 1, "gap": 0.5, "flagged": True, "s0": 0.2, "kind": "rule1", "reachable": 1}]
               + [{"orig": 0, "best": 1, "gap": 0.5, "flagged": False, "s0": 0.1, "kind": "rule1", "reachable": 1}] * 2)
    assert train.outcome(decided, 0.4, scope="flagged")["fixed"] == 1
    assert train.outcome(decided, 0.4, scope="suspect", suspect_below=0.15)["fixed"] == 3
    everything = train.outcome(decided, 0.4, scope="all")
    assert everything["fixed"] == 3 and everything["broken"] == 1
    chosen = train.calibrate_suspect(decided, precision=0.9, max_false_rate=0.0)
    # below 0.3 the doubted correct original stays unsearched; 0.15 already reaches every fix
    assert chosen["fixed"] == 3 and chosen["broken"] == 0 and chosen["suspect_below"] == 0.15
    assert chosen["margin"] == 0.0


def test_operators_are_drawn_by_the_real_error_mix():
    import random

    firsts = [train.weighted_operators(random.Random(i))[0].name for i in range(400)]
    assert firsts.count("attribute_drop") > 10 * max(1, firsts.count("set_operation_swap"))
    order = train.weighted_operators(random.Random(0))
    assert sorted(op.name for op in order) == sorted(train.OPERATORS), "every operator once"


def test_training_cases_of_each_kind_are_wrong_on_a_real_database(data_dir, spider_conn):
    import random

    from sqlmend.data import load_dataset
    from sqlmend.synth import differs

    ds = load_dataset("spider-train")
    tasks = [t for t in ds.tasks if t.db_id == "department_management"]
    neighbours = train.Neighbours(ds.tasks)
    task = next(t for t in tasks if "How many heads" in t.question)
    near = neighbours.of(task)
    assert near and all(qid != task.question_id for qid, _ in near)
    assert {t.db_id for t in ds.tasks if t.question_id in {q for q, _ in near}} == {"department_management"}
    db = spider_conn("department_management")
    gold_res = db.execute(task.gold)
    cases = train._cases(task, db, gold_res, random.Random(0), 1, 5.0, ("rule1", "rule2", "neighbour"),
                         neighbours)
    assert cases[0] == ("gold", task.gold)
    kinds = [k.split(":")[0] for k, _ in cases[1:]]
    assert "neighbour" in kinds and ("rule1" in kinds or "rule2" in kinds)
    for kind, sql_text in cases[1:]:
        assert differs(db.execute(sql_text), gold_res), (kind, sql_text)
    two = [k for k, _ in cases if k.startswith("rule2:")]
    assert all(len(k.split(":")[1].split("+")) == 2 for k in two)


def test_equiv_originals_are_other_sql_with_the_golds_rows(data_dir, spider_conn, tmp_path):
    import random

    from sqlmend import sql as sqlmod
    from sqlmend.data import load_dataset
    from sqlmend.search.engine import result_key

    ds = load_dataset("spider-train")
    tasks = [t for t in ds.tasks if t.db_id == "department_management"]
    db = spider_conn("department_management")
    made = []
    for i, task in enumerate(tasks):
        gold_res = db.execute(task.gold)
        cases = train._cases(task, db, gold_res, random.Random(i), 1, 5.0, ("equiv",))
        assert cases[0] == ("gold", task.gold) and len(cases) <= 2
        for kind, text in cases[1:]:
            assert kind.startswith("equiv:") and gold_res.rows
            assert result_key(db.execute(text)) == result_key(gold_res), (task.gold, text)
            assert sqlmod.render(sqlmod.parse(text)) != sqlmod.render(sqlmod.parse(task.gold))
            made.append(kind)
    assert len(made) >= len(tasks) // 4, made
    assert sum(k != "equiv:distinct_toggle" for k in made) >= len(made) // 2, "DISTINCT is not most of them"
    # --no-gold: a file of the kind alone, each case a correct original, to add to a case file
    out = tmp_path / "equiv.jsonl"
    list(train.build(tasks[:8], lambda d: str(ds.db_path(d)), out, kinds=("equiv",), gold=False))
    cases = train.load(out)
    assert cases and all(c["kind"].startswith("equiv:") and c["labels"][0] == 1 for c in cases)


def test_cases_built_from_real_train_questions_evaluate_the_shipped_verifier(data_dir, tmp_path):
    from sqlmend.data import load_dataset
    from sqlmend.search.verifier import load_weights

    ds = load_dataset("spider-train")
    tasks = [t for t in ds.tasks if t.db_id == "department_management"][:3]
    out = tmp_path / "cases.jsonl"
    list(train.build(tasks, lambda d: str(ds.db_path(d)), out, neighbours=train.Neighbours(ds.tasks)))
    cases = train.load(out)
    assert {c["kind"].split(":")[0] for c in cases} >= {"gold", "neighbour"}
    assert all(c["labels"][0] == (c["kind"] == "gold") for c in cases), "only the gold is a correct original"
    list(train.build(tasks, lambda d: str(ds.db_path(d)), out))  # resumed: nothing added
    assert len(train.load(out)) == len(cases)
    report = train.evaluate(cases, load_weights(), holdout=1.0)
    assert report["questions"] == 3 and set(report["at_own_margins"]) == {"flagged", "all", "suspect"}
    best = report["frontier"]["all"]["broken<=0"]
    assert best["broken"] == 0 and best["fixed"] <= report["at_own_margins"]["all"]["wrong_originals"]


def test_a_failing_original_ranker_is_trained_on_failing_cases_of_real_train_questions(data_dir, tmp_path):
    from sqlmend.data import load_dataset
    from sqlmend.search.verifier import load_weights

    ds = load_dataset("spider-train")
    joins = [t for t in ds.tasks if " join " in t.gold.lower()]
    # perpetrator trains the ranker, farm is held out (holdout 0.5)
    tasks = [t for t in joins if t.db_id == "perpetrator"][:6] + [t for t in joins if t.db_id == "farm"][:4]
    out = tmp_path / "failing.jsonl"
    list(train.build(tasks, lambda d: str(ds.db_path(d)), out, kinds=("failing",)))
    cases = train.load(out)
    fails = [c for c in cases if c["kind"].startswith("failing:")]
    assert fails and all(c["labels"][0] == 0 and c["X"][0][FEATURE_NAMES.index("r_error")] for c in fails)
    assert any(any(c["labels"][1:]) for c in fails), "some failing original is repaired by a candidate"
    ranker = train.fit_failing(cases, load_weights(), holdout=0.5, max_iter=20)
    report = ranker["training"]
    assert report["cases"] + report["held_out"]["originals"] <= len(fails)
    assert TreeEnsemble(ranker["model"]).proba(np.asarray(fails[0]["X"][1:])).shape == (len(fails[0]["X"]) - 1,)
    with pytest.raises(ValueError, match="--kinds failing"):
        train.fit_failing([c for c in cases if c not in fails], load_weights())


def _synthetic_cases(n_questions=400, seed=1):
    rng = np.random.default_rng(seed)
    n = len(FEATURE_NAMES)
    cases = []
    for q in range(n_questions):  # a wrong original is fixable when its best candidate has a high feature 0
        gold = q % 4 == 0
        X = np.zeros((6, n))  # eight noisy features, the rest 0: the same cases whatever n is
        X[:, :8] = rng.normal(size=(6, 8)).round(3)
        labels = [int(gold)] + [int(not gold and X[i, 0] > 1.2) for i in range(1, 6)]
        cases.append({"qid": str(q), "db_id": f"db{q % 40}", "kind": "gold" if gold else "rule1",
                      "flagged": bool(q % 3 == 0), "labels": labels, "X": X.tolist()})
    return cases


def test_the_decider_is_trained_out_of_fold_and_decides_in_the_verifier(tmp_path):
    import json

    from sqlmend.search.features import DECIDER_NAMES, decider_row
    from sqlmend.search.verifier import FeatureVerifier

    n = len(FEATURE_NAMES)
    # 60 held-out cases at 10 trees: whether a fix clears the calibrated threshold there depends on the
    # draw (seeds 2-6 do, 1 does not); this one does
    cases = _synthetic_cases(seed=2)
    spec = train.fit(cases, max_iter=10, precision=0.5, max_false_rate=0.05, refit=False, decider=True)
    assert spec["decision"]["rule"] == "decider" and spec["decider"]["features"] == DECIDER_NAMES
    assert len(decider_row(np.array([0.1, 0.9, 0.2]), [0.0] * n, [1.0] * n, True)) == len(DECIDER_NAMES)
    held = spec["training"]["held_out"]
    assert "gap_rule" in held and held["chosen"]["all"]["fixed"] > 0
    with pytest.raises(ValueError):
        train.fit(cases, max_iter=2, refit=True, decider=True)
    path = tmp_path / "v.json"
    path.write_text(json.dumps(spec))
    assert FeatureVerifier(path).decider is not None


def test_out_of_fold_scores_come_from_models_that_never_saw_the_database():
    from sklearn.ensemble import HistGradientBoostingClassifier

    cases = _synthetic_cases()
    folds = train.database_folds(cases, 5)
    assert len(set(folds)) == 5 and all(f == folds[i] for i, c in enumerate(cases)
                                        for j, f in enumerate(folds) if cases[j]["db_id"] == c["db_id"])
    seen = []

    def fitted(part):
        seen.append({c["db_id"] for c in part})
        X = np.asarray([row for c in part for row in c["X"]])
        y = np.asarray([lab for c in part for lab in c["labels"]])
        return HistGradientBoostingClassifier(max_iter=5).fit(X, y)

    scores = train.out_of_fold(cases, 5, fitted)
    assert len(seen) == 5 and all(len(s) == len(c["labels"]) for s, c in zip(scores, cases))
    for k, dbs in enumerate(seen):
        assert not dbs & {c["db_id"] for c, f in zip(cases, folds) if f == k}


def test_margins_calibrated_out_of_fold_count_every_gold():
    cases = _synthetic_cases()
    spec = train.fit(cases, max_iter=10, precision=0.5, max_false_rate=0.05, refit=False, oof_folds=4)
    cal = spec["training"]["calibration"]
    assert cal["method"] == "out-of-fold" and cal["folds"] == 4
    assert cal["questions"] == 400 > spec["training"]["held_out"]["questions"]
    assert spec["decision"]["margin"] == cal["chosen"]["flagged"]["margin"]
    assert spec["decision"]["suspect_below"] == cal["chosen"]["suspect"]["suspect_below"]
    assert train.fit(cases, max_iter=5, refit=False)["training"]["calibration"]["method"] == "held-out databases"


@pytest.mark.parametrize("text, says", [("{not json", "cannot read the verifier file"),
                                         ('{"decision": {}}', "is not a verifier file")])
def test_train_verifier_refuses_a_bad_verifier_file_before_building(tmp_path, data_dir, text, says):
    from typer.testing import CliRunner

    from sqlmend.cli import app

    bad, cases = tmp_path / "bad.json", tmp_path / "cases.jsonl"
    bad.write_text(text)
    r = CliRunner().invoke(app, ["train-verifier", "--questions", "1", "--data", str(cases), "--evaluate", str(bad)])
    assert r.exit_code == 2, r.output
    assert says in r.output
    assert not cases.exists()  # nothing was built


def test_seen_questions_follow_the_recorded_selection(data_dir):
    """The verifier's training questions are one seeded selection; with refit off, the held-out
    databases' questions (calibration only) are not among those its trees saw."""
    from sqlmend.data import load_dataset
    from sqlmend.search.train import held_out, seen_questions, training_questions

    ds = load_dataset("spider-train", data_root=data_dir)

    def has_db(d):
        return ds.db_path(d) is not None

    chosen = training_questions(ds.tasks, has_db, 300, skip=100, seed=1)
    assert len(chosen) == 300 and chosen == training_questions(ds.tasks, has_db, 400, seed=1)[100:]
    ids = {t.question_id for t in chosen}
    assert seen_questions(ds.tasks, has_db, {"questions": 300, "skip": 100, "seed": 1}) == ids
    kept = seen_questions(ds.tasks, has_db, {"questions": 300, "skip": 100, "seed": 1, "refit": False,
                                             "holdout": 0.2})
    on_held = {t.question_id for t in chosen if held_out(t.db_id, 0.2)}
    assert on_held and kept == ids - on_held


def test_cases_built_with_other_features_are_refused_with_what_to_do(tmp_path):
    import json

    from sqlmend.errors import ConfigError

    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"qid": "1", "X": [[0.0] * (len(FEATURE_NAMES) - 1)], "labels": [1]}) + "\n")
    with pytest.raises(ConfigError, match="build the cases again"):
        train.load(old)
    ok = tmp_path / "ok.jsonl"
    ok.write_text(old.read_text() + json.dumps({"qid": "2", "X": [[0.0] * len(FEATURE_NAMES)], "labels": [1]}) + "\n")
    assert [c["qid"] for c in train.load(ok)] == ["2"]


def test_failing_ranker_without_failing_cases_says_how_to_build_them(tmp_path, data_dir):
    import shutil

    from typer.testing import CliRunner

    from sqlmend.cli import app
    from sqlmend.search.verifier import WEIGHTS

    weights, cases = tmp_path / "verifier.json", tmp_path / "cases.jsonl"
    shutil.copy(WEIGHTS, weights)
    before = weights.read_text()
    r = CliRunner().invoke(app, ["train-verifier", "--questions", "2", "--kinds", "rule1", "--data", str(cases),
                                 "--out", str(weights), "--failing-ranker"])
    assert r.exit_code == 2, r.output
    assert "--kinds failing" in r.output
    assert weights.read_text() == before  # the weights file is left as it was
