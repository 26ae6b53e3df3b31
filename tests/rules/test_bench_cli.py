"""``sqlmend bench static`` and ``sqlmend rules`` on the real data: --limit evaluates only the limited questions."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend import rules
from sqlmend.cli import app


def test_bench_static_limit_counts_only_the_limited_questions(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "gpt-4_zero-shot.sql"
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["bench", "static", "--pred", str(pred), "--limit", "8",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    paired = report["paired"]["gpt-4_zero-shot"]
    assert paired["all"]["n"] + paired["excluded"] == 8
    assert report["latency"]["n"] == 8
    assert report["detection"]["any"]["all"]["wrong"] <= 8


def test_bench_static_counts_a_flag_whose_fix_keeps_the_answer(tmp_path, data_dir):
    # dail-sql q61/q62 write PetType = 'Cat' (pets_1 stores 'cat'): the NOT IN then excludes no
    # student, yet the (major, age) pairs equal the gold's. VL01 flags them although they are
    # correct by execution; its own fix keeps them correct, so its act precision is 100%.
    pred = data_dir / "predictions" / "spider-dev" / "dail-sql_gpt-4.sql"
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["bench", "static", "--pred", str(pred), "--limit", "66", "-q",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    vl01 = json.loads(out.read_text())["detection"]["rules"]["VL01"]["clean"]
    assert {"dail-sql_gpt-4:61", "dail-sql_gpt-4:62"} <= set(vl01["false_positives"])
    assert vl01["kept"] >= 2 and vl01["act_precision"] == 1.0 > vl01["precision"]


def test_rules_lists_every_rule_with_its_acting_severity():
    result = CliRunner().invoke(app, ["rules", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {r["code"] for r in rows} >= {"AT01", "VL01", "VL05", "TB03", "TB04"}
    for r in rows:
        assert r["severity"] in ("strict", "advisory")
        if r["precision_clean"] is None and r["code"] != "TB01":
            assert r["severity"] == "advisory" and r["why"] in ("unmeasured", "declared advisory")
    tb01 = next(r for r in rows if r["code"] == "TB01")  # unmeasured (no file names a missing table),
    assert tb01["severity"] == "strict" and tb01["why"] == rules.REFUSED_ONLY  # but it flags failing queries only


def test_write_precision_writes_data_not_the_package(tmp_path, data_dir, monkeypatch):
    from sqlmend import rules

    monkeypatch.setenv("SQLMEND_CACHE", str(tmp_path / "cache"))
    packaged = rules.PRECISION_FILE.read_bytes()
    pred = data_dir / "predictions" / "spider-dev" / "codes-1b.sql"
    result = CliRunner().invoke(app, ["bench", "static", "--pred", str(pred), "--limit", "8", "-q",
                                      "--write-precision"])
    assert result.exit_code == 0, result.output
    target = tmp_path / "cache" / "rules" / "precision.json"
    assert rules.PRECISION_FILE.read_bytes() == packaged and f"wrote {target}" in result.output
    stored = json.loads(target.read_text())
    assert set(stored["rules"]) == {r.code for r in rules.all_rules()} and stored["files"] == ["codes-1b.sql"]
    monkeypatch.setenv("SQLMEND_RULES_PRECISION", str(target))
    rows = json.loads(CliRunner().invoke(app, ["rules", "--json"]).output)
    assert {r["code"]: r["precision_clean"] for r in rows} == \
        {c: m["precision_clean"] for c, m in stored["rules"].items()}
    monkeypatch.setenv("SQLMEND_RULES_PRECISION", str(tmp_path / "missing.json"))
    result = CliRunner().invoke(app, ["rules"])
    assert result.exit_code == 2 and "SQLMEND_RULES_PRECISION" in result.output


def test_rules_table_is_markdown_off_a_terminal():
    result = CliRunner().invoke(app, ["rules"])  # CliRunner's stdout is not a terminal
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert ("| code | name | error type | severity | fix | precision (clean) | precision (all) "
            "| act precision (clean) | flagged |") in lines
    assert any(line.startswith("| VL05 | ") for line in lines) and "━" not in result.output
