"""``sqlmend bench names`` on a few Spider dev golds: SQLite, and a PostgreSQL copy of one database."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.bench.names import OUTCOMES, make_cases
from sqlmend.testing.pgserver import find_bin
from sqlmend.cli import app

runner = CliRunner()


def test_cases_fail_and_name_what_they_rename(spider_dev, spider_conn):
    cases = make_cases(spider_dev, per_kind=1, seed=0, counts=(1,))
    assert {c.kind for c in cases} >= {"plural", "camelCase", "prefix", "edit"}
    for c in cases:
        (schema_name, wrong), = c.names
        assert wrong in c.task.sql and c.gold is not None
        with pytest.raises(Exception):
            spider_conn(c.task.db_id).execute(c.task.sql, timeout=5)


@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_bench_names_reports_every_kind_it_made(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("SQLMEND_CACHE", str(tmp_path / "cache"))
    if engine == "postgres" and find_bin() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed: run scripts/setup.sh")
    r = runner.invoke(app, ["bench", "names", "--engine", engine, "--per-kind", "1", "--pg-databases", "1",
                            "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert f"{engine} (" in r.output and "| all | 1-2 |" in r.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())[engine]
    total = report["all"]
    assert total["cases"] >= 4 and sum(total.get(o, 0) for o in OUTCOMES) == total["cases"]
    assert total.get("wrong", 0) == 0
