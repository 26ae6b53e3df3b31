"""``sqlmend bench faults`` prints the faults table (the Ray row keeps its place)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend.cli import app


def test_bench_faults_prints_the_table(pred, tmp_path):
    res = CliRunner().invoke(app, ["bench", "faults", "--pred", str(pred), "--out", str(tmp_path),
                                   "--only", "ray-worker,model-slow"])
    assert res.exit_code == 0, res.output
    assert "| fault | what the user sees | items | lost | clear error | re-run completes them |" in res.output
    assert "a Ray worker killed mid-batch | not measured yet" in res.output
    rows = json.loads((tmp_path / "report.json").read_text())
    assert [r["fault"].split()[0] for r in rows] == ["a", "model"] and rows[1]["lost"] == 0
    assert (tmp_path / "report.md").read_text() in res.output


def test_an_unknown_fault_is_refused(tmp_path, pred):
    res = CliRunner().invoke(app, ["bench", "faults", "--pred", str(pred), "--out", str(tmp_path), "--only", "x"])
    assert res.exit_code == 1 and "unknown fault" in res.output
