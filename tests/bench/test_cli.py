"""The commands, through typer's test runner, on the real data."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from sqlmend.cli import eval_cmd

runner = CliRunner()


@pytest.fixture()
def app(monkeypatch, tmp_path):
    monkeypatch.setenv("SQLMEND_CACHE", str(tmp_path / "cache"))
    root, bench = typer.Typer(), typer.Typer()
    root.add_typer(bench, name="bench")
    eval_cmd.register(root, bench)
    return root


def test_eval_prints_both_rules_and_writes_json(app, pred_dir, tmp_path):
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["eval", "-d", "spider-dev", "-p", str(pred_dir / "din-sql_gpt-4.sql"), "-q",
                              "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "| all | 972 | 791 | 81.38 |" in res.output
    data = json.loads(out.read_text())
    assert data["summary"]["correct"] == 791 and data["summary"]["excluded"] == 62
    assert len(data["results"]) == 1034


def test_eval_paired_with_suspects(app, pred_dir, tmp_path):
    suspects = tmp_path / "s.txt"
    suspects.write_text("# gold-suspect\n0\n1\n")
    res = runner.invoke(app, ["eval", "-d", "spider-dev", "-p", str(pred_dir / "codes-1b.sql"), "-a",
                              str(pred_dir / "c3sql_gpt-3.5.sql"), "--suspects", str(suspects), "-q"])
    assert res.exit_code == 0, res.output
    assert "codes-1b.sql → c3sql_gpt-3.5.sql" in res.output and "without 2 gold-suspect" in res.output


def test_eval_refuses_a_mismatched_file(app, tmp_path):
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT 1\n" * 10)
    res = runner.invoke(app, ["eval", "-d", "spider-dev", "-p", str(bad), "-q"])
    assert res.exit_code == 2 and "line 11" in res.output


def test_convert_predictions_and_tasks(app, pred_dir, spider_dir, tmp_path):
    out = tmp_path / "p.jsonl"
    res = runner.invoke(app, ["convert", str(pred_dir / "codes-1b.sql"), str(out), "-d", "spider-dev"])
    assert res.exit_code == 0, res.output
    back = tmp_path / "p.sql"
    res = runner.invoke(app, ["convert", str(out), str(back), "-d", "spider-dev", "--to", "spider"])
    assert res.exit_code == 0 and back.read_text().split("\n")[:5] == \
        (pred_dir / "codes-1b.sql").read_text().split("\n")[:5]
    res = runner.invoke(app, ["convert", str(spider_dir / "dev.json"), str(tmp_path / "dev.jsonl")])
    assert res.exit_code == 0 and "wrote 1034 tasks" in res.output


def test_bench_eval_on_one_file(app, pred_dir):
    res = runner.invoke(app, ["bench", "eval", str(pred_dir / "din-sql_gpt-4.sql")])
    assert res.exit_code == 0, res.output
    assert "| cold (" in res.output and "| plain (" in res.output and "| plain_db (" in res.output
    assert "| way | seconds | CPU seconds |" in res.output and "best of 1" in res.output
    assert res.output.count("din-sql_gpt-4.sql: 791") == 4


def test_commands_are_registered_on_the_sqlmend_app():
    from sqlmend.cli import app as sqlmend_app

    for args in (["eval", "--help"], ["convert", "--help"], ["bench", "eval", "--help"]):
        res = runner.invoke(sqlmend_app, args)
        assert res.exit_code == 0, (args, res.output)
    assert "--against" in runner.invoke(sqlmend_app, ["eval", "--help"]).output
