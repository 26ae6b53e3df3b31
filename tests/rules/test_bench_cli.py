"""``sqlmend bench static`` and ``sqlmend rules`` on the real data: --limit evaluates only the limited questions."""

from __future__ import annotations

import json

from typer.testing import CliRunner

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


def test_rules_lists_every_rule_with_its_acting_severity():
    result = CliRunner().invoke(app, ["rules", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {r["code"] for r in rows} >= {"AT01", "VL01", "VL05", "TB03", "TB04"}
    for r in rows:
        assert r["severity"] in ("strict", "advisory")
        if r["precision_clean"] is None:
            assert r["severity"] == "advisory" and r["why"] in ("unmeasured", "declared advisory")
