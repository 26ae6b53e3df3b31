"""``sqlmend correct`` and ``sqlmend bench correct`` on the real Spider-dev predictions."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend.cli import app
from sqlmend.cli.correct_cmd import select
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
