"""``sqlmend db info`` and ``sqlmend bench values`` through the real command line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend.cli import app

runner = CliRunner()


def test_db_info_prints_schema_keys_and_value_index(cache_root):
    result = runner.invoke(app, ["db", "info", "concert_singer"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "4 tables, 3 foreign keys" in out
    assert "singer_in_concert — 10 rows" in out and "→ singer.Singer_ID" in out
    assert "value index (built now): 12 text columns, 64 distinct values" in out
    again = runner.invoke(app, ["db", "info", "concert_singer"])
    assert "value index (loaded from cache)" in again.output


def test_db_info_json_and_errors(spider_db, cache_root):
    result = runner.invoke(app, ["db", "info", str(spider_db("pets_1")), "--json", "--no-values"])
    data = json.loads(result.output)
    assert [t["name"] for t in data["schema"]["tables"]] == ["Student", "Has_Pet", "Pets"]
    assert data["value_index"] is None
    missing = runner.invoke(app, ["db", "info", "wta_1"])
    assert missing.exit_code == 2 and "DatabaseNotFoundError" in missing.output


def test_bench_values_markdown():
    result = runner.invoke(app, ["bench", "values", "--probes", "3", "--repeat", "1", "--markdown"])
    assert result.exit_code == 0, result.output
    assert "20 Spider dev databases (19 present; missing: wta_1)" in result.output
    for mode in ("| exact |", "| ci |", "| approx |", "| search(ci) |"):
        assert mode in result.output
