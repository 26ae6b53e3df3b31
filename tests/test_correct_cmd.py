"""``sqlmend correct`` and ``sqlmend bench correct`` on the real Spider-dev predictions."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.cli import app
from sqlmend.data.sampling import choose as select
from sqlmend.types import Task

runner = CliRunner()


def test_single_query(spider_db):
    r = runner.invoke(app, ["correct", "--db", str(spider_db("concert_singer")), "--question",
                            "How many singers?", "--sql", "SELECT count(*) FROM singer"])
    assert r.exit_code == 0, r.output
    assert "unchanged: SELECT count(*) FROM singer" in r.output and "refine skipped" in r.output


def test_prediction_file_writes_jsonl_summary_and_the_input_format(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "gpt-4_zero-shot.sql"
    r = runner.invoke(app, ["correct", "--dataset", "spider-dev", "--pred", str(pred), "--out",
                            str(tmp_path), "--limit", "6", "--quiet", "--stages", "static,guard"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (tmp_path / "corrections.jsonl").read_text().splitlines()]
    assert sorted(int(x["question_id"]) for x in rows) == list(range(6))
    corrected = (tmp_path / "corrected.sql").read_text().splitlines()
    original = pred.read_text().splitlines()
    assert len(corrected) == len(original) == 1034 and corrected[6:] == original[6:]
    by = {int(x["question_id"]): x["sql"] for x in rows}
    assert all(by[i].split() == corrected[i].split() for i in range(6))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["queries"] == 6 and summary["stages"]["static"]["ran"] == 6


def test_bad_options_are_clear(tmp_path):
    r = runner.invoke(app, ["correct", "--dataset", "spider-dev"])
    assert r.exit_code != 0 and "--pred" in r.output
    r = runner.invoke(app, ["correct", "--db", "x.sqlite", "--question", "q", "--sql", "SELECT 1",
                            "--stages", "static,nonsense"])
    assert r.exit_code != 0 and "unknown stage" in r.output


def test_seeded_sample_is_reproducible_and_in_order():
    tasks = [Task(question_id=str(i), db_id="d", question="q", sql="s") for i in range(50)]
    a, b = select(tasks, sample=10, seed=3), select(tasks, sample=10, seed=3)
    assert [t.question_id for t in a] == [t.question_id for t in b]
    assert [int(t.question_id) for t in a] == sorted(int(t.question_id) for t in a)
    assert select(tasks, limit=4) == tasks[:4]


def test_bench_correct_paired_report(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "codes-1b.sql"
    r = runner.invoke(app, ["bench", "correct", "--pred", str(pred), "--sample", "12", "--seed", "2",
                            "--stages", "static,guard", "--strategies", "errorllm,mac-sql",
                            "--out", str(tmp_path), "--quiet"])
    assert r.exit_code == 0, r.output
    rows = json.loads((tmp_path / "report.json").read_text())
    assert [x["strategy"] for x in rows] == ["errorllm", "mac-sql"]
    for x in rows:
        assert x["n"] <= 12 and x["fixed"] >= 0 and 0 <= x["cr"] <= 100
        assert abs(x["delta_ex"] - 100 * (x["fixed"] - x["regressed"]) / x["n"]) < 0.01
    # mac-sql without a model: its stage skips, nothing changes
    assert rows[1]["changed"] == 0 and rows[1]["calls_per_query"] == 0
    assert "| codes-1b | mac-sql |" in (tmp_path / "report.md").read_text()


def test_a_single_query_shows_the_fix_an_advisory_rule_proposes(spider_db):
    r = runner.invoke(app, ["correct", "--db", str(spider_db("car_1")), "--question", "How many models per maker?",
                            "--sql", "SELECT car_makers.FullName, COUNT(*) FROM car_makers JOIN car_names "
                                     "ON car_makers.Id = car_names.MakeId GROUP BY car_makers.Id",
                            "--stages", "static,guard"])
    assert r.exit_code == 0, r.output
    assert "suggested by TB04 (advisory, not applied)" in r.output and "JOIN model_list ON" in r.output
    assert "unchanged:" in r.output


_TIMINGS = ("seconds", "seconds_per_query", "wall_seconds")


def test_two_shards_merged_equal_the_unsharded_run(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "dail-sql_gpt-4.sql"
    base = ["correct", "--dataset", "spider-dev", "--pred", str(pred), "--limit", "110", "-q",
            "--stages", "static,guard"]
    whole, s1, s2, merged = (tmp_path / x for x in ("whole", "s1", "s2", "merged"))
    for out, extra in ((whole, []), (s1, ["--shard", "1/2"]), (s2, ["--shard", "2/2"])):
        r = runner.invoke(app, base + ["--out", str(out)] + extra)
        assert r.exit_code == 0, r.output
    ids = [{json.loads(x)["question_id"] for x in (d / "corrections.jsonl").read_text().splitlines()}
           for d in (s1, s2)]
    assert ids[0] and ids[1] and not ids[0] & ids[1] and len(ids[0] | ids[1]) == 110
    r = runner.invoke(app, ["merge", str(s2), str(s1), "--out", str(merged)])
    assert r.exit_code == 0, r.output
    assert "2 shards, 110 tasks" in r.output
    assert (merged / "corrected.sql").read_bytes() == (whole / "corrected.sql").read_bytes()
    a, b = (json.loads((d / "summary.json").read_text()) for d in (whole, merged))
    assert a["changed"] > 0  # the static stage fixes questions 54 and 105 of this file
    assert {k: v for k, v in a.items() if k not in _TIMINGS} == {k: v for k, v in b.items() if k not in _TIMINGS}
    rows = [json.loads(x)["question_id"] for x in (merged / "corrections.jsonl").read_text().splitlines()]
    assert rows == [str(i) for i in range(110)]


@pytest.mark.slow
def test_shards_of_a_searched_run_equal_the_whole_run_while_another_thread_keeps_busy(tmp_path, data_dir):
    """The search's budget counts work, not seconds: the second shard runs beside a busy thread and
    still gets the whole run's candidates (with a wall-clock budget, queries it cuts short would differ)."""
    import threading
    import time

    pred = data_dir / "predictions" / "spider-dev" / "gpt-4_zero-shot.sql"
    base = ["correct", "--dataset", "spider-dev", "--pred", str(pred), "--limit", "16", "-q",
            "--stages", "static,search,guard", "--option", "search.scope=all", "--option", "search.budget=0.05"]
    whole, s1, s2, merged = (tmp_path / x for x in ("whole", "s1", "s2", "merged"))
    stop = threading.Event()

    def spin():  # busy half the time, in 2 ms bursts: the shard's queries keep waiting on it
        while not stop.is_set():
            end = time.perf_counter() + 0.002
            while time.perf_counter() < end:
                pass
            time.sleep(0.002)

    for out, extra, busy in ((whole, [], False), (s1, ["--shard", "1/2"], False), (s2, ["--shard", "2/2"], True)):
        thread = threading.Thread(target=spin) if busy else None
        if thread:
            thread.start()
        try:
            r = runner.invoke(app, base + ["--out", str(out)] + extra)
        finally:
            if thread:
                stop.set()
                thread.join()
        assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["merge", str(s1), str(s2), "--out", str(merged)])
    assert r.exit_code == 0, r.output
    assert (merged / "corrected.sql").read_bytes() == (whole / "corrected.sql").read_bytes()
    def searches(run):  # each query's search: its counts and its top candidates
        out = {}
        for line in (run / "corrections.jsonl").read_text().splitlines():
            row = json.loads(line)
            for t in row["stages"]:
                if t["stage"] == "search" and t["status"] == "ran":
                    d = t["detail"]
                    out[row["question_id"]] = (d["generated"], d["executed"], d["stopped"], d["search_cost"],
                                               [c["sql"] for c in d["top"]])
        return out

    ran = searches(whole)
    assert len(ran) >= 12 and sum(s[2] == "budget" for s in ran.values()) >= 10  # 16 and 14 on 12-07
    assert searches(merged) == ran


def test_merge_refuses_a_missing_shard_a_foreign_run_and_another_file(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "codes-1b.sql"
    base = ["correct", "--dataset", "spider-dev", "--pred", str(pred), "-q", "--stages", "static"]
    for name, limit, shard in (("a", "6", "1/2"), ("b", "6", "2/2"), ("c", "7", "2/2")):
        r = runner.invoke(app, base + ["--limit", limit, "--shard", shard, "--out", str(tmp_path / name)])
        assert r.exit_code == 0, r.output
    a, b, c, m = (str(tmp_path / x) for x in "abcm")
    r = runner.invoke(app, ["merge", a, "--out", m])
    assert r.exit_code == 1 and "shards 1..2" in r.output
    r = runner.invoke(app, ["merge", a, c, "--out", m])
    assert r.exit_code == 1 and "not a shard of the same run" in r.output and "selection" in r.output
    other = data_dir / "predictions" / "spider-dev" / "din-sql_gpt-4.sql"
    r = runner.invoke(app, ["merge", a, b, "--out", m, "--pred", str(other)])
    assert r.exit_code == 1 and "not the prediction file the shards corrected" in r.output
    r = runner.invoke(app, ["merge", a, b, "--out", m, "--pred", str(pred)])
    assert r.exit_code == 0 and "2 shards, 6 tasks" in r.output
    r = runner.invoke(app, base + ["--shard", "3/2", "--out", str(tmp_path / "d")])
    assert r.exit_code != 0 and "K/N" in r.output


def test_correct_reads_the_databases_of_db_root(tmp_path, data_dir, spider_db):
    # a task file whose databases live in a folder of their own
    root = tmp_path / "dbs" / "my_concerts"  # an id that is not one of Spider's
    root.mkdir(parents=True)
    (root / "my_concerts.sqlite").write_bytes(spider_db("concert_singer").read_bytes())
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"question_id": "t1", "db_id": "my_concerts", "question": "How many singers?",
                                 "sql": "SELECT count(*) FROM singer", "gold": "SELECT count(*) FROM singer"}) + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"question_id": "t1", "sql": "SELECT count(*) FROM singerz"}) + "\n")
    r = runner.invoke(app, ["correct", "--dataset", str(tasks), "--pred", str(pred), "--out", str(tmp_path / "o"),
                            "--stages", "static", "-q"])
    assert r.exit_code == 0, r.output
    missing = json.loads((tmp_path / "o" / "summary.json").read_text())
    r = runner.invoke(app, ["correct", "--dataset", str(tasks), "--db-root", str(tmp_path / "dbs"), "--pred",
                            str(pred), "--out", str(tmp_path / "p"), "--stages", "static", "-q"])
    assert r.exit_code == 0, r.output
    found = json.loads((tmp_path / "p" / "summary.json").read_text())
    assert missing["item_errors"] and not found["item_errors"]
    row = json.loads((tmp_path / "p" / "corrections.jsonl").read_text())
    assert [f["code"] for s in row["stages"] for f in s["findings"]] == ["TB01"]  # the rules read the database
