"""``sqlmend bench search-cost``: the seconds a unit of search work costs, fitted on Spider-train golds."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.bench.search_cost import UNITS, fit, markdown, measure
from sqlmend.cli import app
from sqlmend.data import load_dataset
from sqlmend.errors import SqlmendError
from sqlmend.search.engine import COST


def test_unbounded_searches_from_golds_fit_a_cost_per_unit(data_dir):
    rows = measure(load_dataset("spider-train", data_root=data_dir), questions=12, seed=3)
    assert 8 <= len(rows) <= 12
    assert all(r["generated"] >= r["executed"] > 0 and r["seconds"] > 0 and r["work"] >= 0 for r in rows)
    report = fit(rows)
    assert set(report["cost"]) == set(UNITS) and all(c >= 0 for c in report["cost"].values())
    assert any(c > 0 for c in report["cost"].values()) and report["r2"] <= 1
    assert report["seconds"]["p50"] <= report["seconds"]["p95"]
    table = markdown(report, COST)
    assert "| generated |" in table and f"{len(rows)} searches" in table
    with pytest.raises(SqlmendError, match="too few"):
        fit(rows[:2])


def test_the_command_writes_its_fit_and_refuses_dev(tmp_path):
    out = tmp_path / "cost.json"
    r = CliRunner().invoke(app, ["bench", "search-cost", "--questions", "6", "--out", str(out)])
    assert r.exit_code == 0, r.output
    report = json.loads(out.read_text())
    assert report["dataset"] == "spider-train" and len(report["rows"]) == report["n"]
    r = CliRunner().invoke(app, ["bench", "search-cost", "--dataset", "spider-dev", "--questions", "1"])
    assert r.exit_code == 2 and "training questions only" in r.output
