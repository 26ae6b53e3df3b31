"""``sqlmend bench search`` on the first questions of Spider dev and a real prediction file."""

from __future__ import annotations

from sqlmend.bench.search import bench_search, markdown, subset
from sqlmend.data import load_dataset
from sqlmend.search.stage import SearchStage
from sqlmend.stage import RunSettings


def test_bench_search_reports_recall_selection_and_the_paired_report(data_dir):
    full = load_dataset("spider-dev", data_root=data_dir)
    ds = subset(full, limit=12)
    pred = data_dir / "predictions" / "spider-dev" / "gpt-4_zero-shot.sql"
    stage = SearchStage.from_config({"scope": "all", "budget": 0.5}, RunSettings(timeout=10))
    report = bench_search(ds, [pred], stage, full=full)
    r = report["files"]["gpt-4_zero-shot"]
    assert r["questions"] == 12 and r["searched"] == 12
    assert r["model_calls"] == 0
    assert 0.0 <= r["candidate_recall_all"] <= 1.0 and r["latency_searched"]["n"] == 12
    paired = r["paired"]["all"]
    assert paired["n"] == 12 and len(paired["fixed"]) + len(paired["regressed"]) <= r["accepted"]
    gaps = r["gaps"]  # the verifier's score gaps: as many counted above 0 as there are, fewer above 0.4
    for side in ("right_of_wrong", "wrong_of_correct"):
        g = gaps[side]
        assert g["n"] >= g["above_0"] >= g["above_0.2"] >= g["above_0.4"] >= 0
    assert gaps["wrong_of_correct"]["n"] > 0  # with scope=all, correct predictions are searched too
    assert "gpt-4_zero-shot" in markdown(report) and "best wrong candidate's gap" in markdown(report)


def test_bench_search_counts_the_predictions_the_engine_refuses(data_dir):
    """GPT-4 zero-shot's q90 and q122 fail to run ("ambiguous column name"); q111 runs. The search
    reaches and fixes q90 (one table qualifies the column); q122 also needs its join re-keyed."""
    from dataclasses import replace

    full = load_dataset("spider-dev", data_root=data_dir)
    ds = replace(full, tasks=[t for t in full.tasks if t.question_id in {"90", "111", "122"}])
    pred = data_dir / "predictions" / "spider-dev" / "gpt-4_zero-shot.sql"
    stage = SearchStage.from_config({"budget": 2.0}, RunSettings(timeout=10))
    r = bench_search(ds, [pred], stage, full=full)["files"]["gpt-4_zero-shot"]
    assert r["failing"] == 2 and r["failing_reached"] >= 1 and r["failing_fixed"] >= 1
    assert "90" in r["paired"]["all"]["fixed"] and not r["paired"]["all"]["regressed"]
