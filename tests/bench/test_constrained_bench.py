"""The constrained-decoding benchmark: the library timed alone over fixed valid answers."""

from __future__ import annotations

import json

import pytest

from sqlmend.llm import constrained

pytestmark = pytest.mark.skipif(not constrained.available(), reason="llguidance not installed")


@pytest.mark.slow
def test_replay_times_a_valid_answer_under_the_sql_grammar():
    from sqlmend.bench.constrained import replay_all

    (row,) = replay_all(("llguidance-sql",), ("judge", "rewrite"), repeats=2)  # judge has no SQL
    assert (row["schema"], row["engine"]) == ("rewrite", "llguidance-sql")
    # replay raises when the grammar rejects the valid answer
    assert row["tokens"] > 10 and row["warm_us_per_token"] > 0 and row["setup_ms"] > 0



def test_replay_on_another_database_and_a_rewrite_out_of_scope():
    from sqlmend.bench.constrained import replay_all

    original = "SELECT Model FROM model_list JOIN car_makers ON model_list.Maker = car_makers.Id"
    (row,) = replay_all(("llguidance-sql",), ("rewrite",), repeats=2, db_id="car_1", original=original,
                        answer_sql="SELECT Model FROM model_list JOIN car_makers ON model_list.Maker = "
                                   "car_makers.Id WHERE FullName = 'General Motors'")
    assert row["tokens"] > 20
    with pytest.raises(RuntimeError, match="rejects the answer at token"):  # cars_data is not joined
        replay_all(("llguidance-sql",), ("rewrite",), repeats=1, db_id="car_1", original=original,
                   answer_sql="SELECT Model FROM model_list JOIN car_makers ON model_list.Maker = "
                              "car_makers.Id WHERE cars_data.Weight > 3500")

def test_refine_answers_counts_sql_that_executes(tmp_path, data_dir):
    from sqlmend.bench.constrained import refine_answers

    def task(qid, prompts, candidate=None):
        return {"question_id": qid, "db_id": "concert_singer", "stages": [
            {"stage": "static", "status": "ran", "calls": 0},
            {"stage": "refine", "status": "ran", "calls": 1, "candidate": candidate,
             "detail": {"prompts": prompts}}]}

    lines = [
        task("1", [{"role": "refine", "answer": '{"sql": "SELECT COUNT(*) FROM singer", '
                                                '"addressed": [], "no_change": true}'}]),
        task("2", [{"role": "localize", "answer": "{}"},
                   {"role": "refine", "error": "StructuredOutputError: ..."}],
             candidate="SELECT name FROM singers"),       # invalid twice; no such table
        task("3", [{"role": "refine", "error": "StructuredOutputError: ..."}]),  # no SQL at all
    ]
    folder = tmp_path / "codes-1b" / "errorllm"
    folder.mkdir(parents=True)
    (folder / "corrections.jsonl").write_text("\n".join(json.dumps(t) for t in lines))
    got = refine_answers(tmp_path, data_dir)
    assert got["codes-1b"] == got["total"] == {"answers": 3, "valid_json": 1, "no_change": 1,
                                               "with_sql": 2, "executes": 1}


def test_grammar_sizes_on_the_dev_databases(data_dir):
    from sqlmend.bench.constrained import grammar_sizes

    rows = grammar_sizes(data_dir, repeats=1)
    assert len(rows) >= 10
    big = max(rows, key=lambda r: r["tables"])
    assert big["sub_scopes"] >= big["tables"] and big["rules"] > 100 and big["build_ms"] > 0
