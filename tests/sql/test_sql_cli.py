"""``sqlmend sql diff|normalize|features`` and ``sqlmend bench sql`` through the real CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend.cli import app

runner = CliRunner()


def test_sql_diff_prints_edits(spider_db):
    db = str(spider_db("concert_singer"))
    r = runner.invoke(app, ["sql", "diff", "SELECT name FROM singer WHERE country = 'france'",
                            'SELECT T1.name FROM singer AS T1 WHERE T1.country = "France" LIMIT 1', "--db", db])
    assert r.exit_code == 0, r.output
    assert "replace  where" in r.output and "+ singer.country = 'France'" in r.output
    assert "insert   limit" in r.output


def test_sql_diff_json_and_no_edits(spider_db):
    db = str(spider_db("concert_singer"))
    r = runner.invoke(app, ["sql", "diff", "SELECT T1.age FROM singer AS T1", "select AGE from singer", "--db", db])
    assert r.exit_code == 0 and "no edits" in r.output
    r = runner.invoke(app, ["sql", "diff", "SELECT age FROM singer", "SELECT name FROM singer", "--json"])
    assert r.exit_code == 0
    assert json.loads(r.output.splitlines()[0])["kind"] == "replace"


def test_sql_normalize_reports_unknown_column(spider_db):
    db = str(spider_db("concert_singer"))
    r = runner.invoke(app, ["sql", "normalize", "SELECT nme FROM singer", "--db", db])
    assert r.exit_code == 2
    assert "UnknownColumnError" in r.output and "singer.name" in r.output


def test_sql_features(spider_db):
    db = str(spider_db("concert_singer"))
    r = runner.invoke(app, ["sql", "features", 'SELECT name FROM singer WHERE name LIKE "%a%"', "--db", db])
    assert r.exit_code == 0, r.output
    assert "'%a%' like singer.name [where, ignores case]" in r.output


def test_bench_sql_over_dev(data_dir):
    r = runner.invoke(app, ["bench", "sql", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{"):])
    assert out["queries"] == 972 and out["failures"] == 0
    assert out["quoted_strings"] > 100
    assert out["stages"]["total"]["mean_ms"] > 0
