"""``sqlmend bench alternatives``: the rows, the self-consistency baseline, the curve and the history."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.bench.alternatives import self_consistency
from sqlmend.cli import app
from sqlmend.consensus.risk import History
from sqlmend.types import Task

pytestmark = pytest.mark.slow


def test_self_consistency_takes_the_majority_ties_to_the_prediction(spider_dev):
    def task(sql, *alternatives):
        return Task("1", "concert_singer", "How many singers?", sql, alternatives=list(alternatives))

    a, b, c = ("SELECT count(*) FROM singer", "SELECT count(*) FROM singer WHERE Age > 40",
               "SELECT count(*) FROM singer WHERE Age > 30")
    tasks = [task(a, b, b), task(a, b), task(a, b, c), task("DELETE FROM singer", b), task("SELECT nope", a, b)]
    chosen = [self_consistency(spider_dev, [t])["1"] for t in tasks]
    # 2 against 1; a tie keeps the prediction; a three-way split too; a write has no vote; nor a failure
    assert chosen == [b, a, a, b, a]


def test_bench_alternatives_rows_curve_and_history(pred_dir, tmp_path):
    args = ["bench", "alternatives", "--pred", str(pred_dir / "gpt-4_zero-shot.sql"), "--alt",
            str(pred_dir / "din-sql_gpt-4.sql"), "--alt", str(pred_dir / "dail-sql_gpt-4.sql"), "--sample", "30",
            "--workers", "1", "--out", str(tmp_path / "runs"), "--json", str(tmp_path / "rows.json"),
            "--html", str(tmp_path / "report.html"), "--history-out", str(tmp_path / "history.json"), "-q"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    (report,) = json.loads((tmp_path / "rows.json").read_text())
    rows = {x["rule"]: x for x in report["rows"]}
    assert list(rows) == ["default", "strict", "self-consistency"]
    default, strict, sc = rows["default"], rows["strict"], rows["self-consistency"]
    assert default["n"] == strict["n"] == sc["n"] > 20 and default["delta_vs_default"] == 0.0
    assert strict["alternatives"] == ["din-sql_gpt-4", "dail-sql_gpt-4"] and default["alternatives"] == []
    assert 0 < strict["flagged"] and 0.5 < strict["auroc"] <= 1 and strict["consensus_seconds"] > 0
    assert strict["delta_ex"] == round(100 * (strict["fixed"] - strict["regressed"]) / strict["n"], 2)
    curve = report["curve"]
    assert len(curve["thresholds"]) == len(curve["fixes"]) == len(curve["breaks"])
    assert curve["fixes"] == sorted(curve["fixes"], reverse=True)  # fewer replaced as the threshold rises
    history = History.load(tmp_path / "history.json")
    assert len(history.items) == strict["n"] and history.alternatives == ["din-sql_gpt-4", "dail-sql_gpt-4"]
    assert "<svg" in (tmp_path / "report.html").read_text()
    assert "| gpt-4_zero-shot | din-sql_gpt-4, dail-sql_gpt-4 | strict | all |" in r.output
