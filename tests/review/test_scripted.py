"""Scripted review with the gold as reviewer builds the same items as ``sqlmend memory build``."""

from __future__ import annotations

import json

from sqlmend.bench.review import bench_review


def test_gold_review_of_the_history_split_equals_memory_build(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "dail-sql_gpt-4.sql"
    r = bench_review(pred, "spider-dev", tmp_path / "bench", databases=["car_1", "world_1"], progress=False)
    assert r["decisions"]["edit"] == r["confirmed"] == r["memory_build_corrections"] > 0
    assert r["identical"] and r["items_review"] == r["items_memory_build"] == 2
    # dail-sql #148 (car_1, a predicate column) and #730 (world_1, a value binding), through
    # reviews.jsonl, on the split that keeps a gold's paraphrases in one part
    assert sorted((i["question_id"], i["kind"]) for i in r["items"].values()) == [
        ("148", "predicate_column"), ("730", "value_binding")]
    reviews = [json.loads(x) for x in (tmp_path / "bench" / "run" / "reviews.jsonl").read_text().splitlines()]
    assert {d["reviewer"] for d in reviews} == {"gold"}
    # every decision is written; a rejected change confirms nothing
    assert len(reviews) == r["confirmed"] + r["decisions"]["reject"]


def test_accepting_the_tools_own_matching_fix_is_a_choice_the_result_names(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "gpt-4_zero-shot.sql"
    r = bench_review(pred, "spider-dev", tmp_path / "bench", databases=["car_1"], accept_matching=True,
                     progress=False)
    assert r["decisions"]["accept"] >= 1  # a static fix whose result equals the gold's is accepted
    assert r["confirmed"] == r["memory_build_corrections"]
    assert r["identical"] == (not r["only_review"] and not r["only_memory_build"])
