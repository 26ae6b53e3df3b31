"""``sqlmend bench engines`` on a few Spider dev questions: DuckDB files, and a MariaDB server."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.cli import app

pytestmark = pytest.mark.slow

runner = CliRunner()


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("mysql", marks=pytest.mark.mysql)])
def test_bench_engines_reports_golds_and_a_corrected_file(engine, data_dir, tmp_path, monkeypatch, request):
    monkeypatch.setenv("SQLMEND_CACHE", str(tmp_path / "cache"))
    if engine == "mysql":
        request.getfixturevalue("mysql_server")  # skips without the server binaries
    pred = data_dir / "predictions" / "spider-dev" / "gpt-4_zero-shot.sql"
    r = runner.invoke(app, ["bench", "engines", "--engine", engine, "--pred", str(pred), "--limit", "12",
                            "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert f"| {engine} (" in r.output and "| gpt-4_zero-shot | 12 |" in r.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())[0]
    golds = report["golds"]
    assert golds["golds"] == 12 and golds["match"] >= 10
    assert golds["match"] + golds["transpile_error"] + golds["engine_error"] + golds["different_rows"] == 12
    assert len(golds["failures"]) == 12 - golds["match"]
    (check,) = report["files"]
    assert check["questions"] == 12 and check["engine"]["regressed"] == 0 and check["sqlite"]["regressed"] == 0
