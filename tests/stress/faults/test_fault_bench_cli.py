"""``sqlmend bench faults`` prints the faults table."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend.cli import app


def test_bench_faults_prints_the_table(pred, tmp_path):
    """Two rows (a model endpoint that answers garbage, one that answers slowly); each row's own test is
    beside this one, the Ray row's in tests/batch/test_ray.py (on its module's cluster)."""
    res = CliRunner().invoke(app, ["bench", "faults", "--pred", str(pred), "--out", str(tmp_path),
                                   "--only", "model-garbage,model-slow"])
    assert res.exit_code == 0, res.output
    assert "| fault | what the user sees | items | lost | clear error | re-run completes them |" in res.output
    rows = json.loads((tmp_path / "report.json").read_text())
    assert [r["fault"].split()[0] for r in rows] == ["model", "model"] and [r["lost"] for r in rows] == [0, 0]
    assert all(r["items"] > 0 for r in rows)
    assert (tmp_path / "report.md").read_text() in res.output


def test_an_unknown_fault_is_refused(tmp_path, pred):
    res = CliRunner().invoke(app, ["bench", "faults", "--pred", str(pred), "--out", str(tmp_path), "--only", "x"])
    assert res.exit_code == 1 and "unknown fault" in res.output
