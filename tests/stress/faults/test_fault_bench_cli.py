"""``sqlmend bench faults`` prints the faults table; its Ray row kills a real Ray worker."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.cli import app


@pytest.mark.slow
def test_bench_faults_prints_the_table(pred, tmp_path):
    pytest.importorskip("ray", reason="the Ray row needs sqlmend[ray]")
    res = CliRunner().invoke(app, ["bench", "faults", "--pred", str(pred), "--out", str(tmp_path),
                                   "--only", "ray-worker,model-slow"])
    assert res.exit_code == 0, res.output
    assert "| fault | what the user sees | items | lost | clear error | re-run completes them |" in res.output
    rows = json.loads((tmp_path / "report.json").read_text())
    assert [r["fault"].split()[0] for r in rows] == ["a", "model"] and [r["lost"] for r in rows] == [0, 0]
    ray_row = rows[0]
    detail = ray_row["detail"]
    assert detail["killed"] and ray_row["items"] == 40 and not detail["silent"] and not detail["unclear"]
    # the local run's file, or, where the machine is loaded enough that the items in flight on the restarted
    # worker pass their wall-clock deadline (the safety net: a clear error, the input kept), only those differ
    assert detail["identical"] or 0 < len(detail["clear"]) <= 4, detail
    assert ("identical to" if detail["identical"] else "DIFFERENT from") + " the local run's" in ray_row["sees"]
    assert (tmp_path / "report.md").read_text() in res.output


def test_an_unknown_fault_is_refused(tmp_path, pred):
    res = CliRunner().invoke(app, ["bench", "faults", "--pred", str(pred), "--out", str(tmp_path), "--only", "x"])
    assert res.exit_code == 1 and "unknown fault" in res.output
