"""``sqlmend bench static-train``: training golds broken the way VL07 / VL01 claim to repair, on real data."""

from __future__ import annotations

import json
import random

from typer.testing import CliRunner

from sqlmend.cli import app
from sqlmend.synth.misplaced import variants


def test_a_gold_is_broken_in_its_column_and_in_its_case(spider_conn):
    db = spider_conn("car_1")
    gold = "SELECT count(*) FROM car_makers AS T1 WHERE T1.FullName = 'American Motor Company'"
    got = dict(variants(gold, db.schema(), random.Random(0)))
    assert set(got) == {"column", "case"}
    assert "T1.FullName" not in got["column"] and "'American Motor Company'" in got["column"]
    assert "T1.FullName = 'american motor company'" in got["case"]
    assert variants("SELECT count(*) FROM countries", db.schema(), random.Random(0)) == []


def test_static_train_repairs_breaks_and_never_rewrites_to_other_rows(tmp_path):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["bench", "static-train", "--questions", "150", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    for kind in ("column", "case"):
        c = report[kind]
        assert c["broken"] > 0 and c["gold_rows"] > 0 and c["other_rows"] == 0, (kind, c, report["other"])
        assert c["gold_rows"] + c["other_rows"] + c["kept"] == c["broken"]
    assert "VL07" in report["column"]["by_rule"] and "VL01" in report["case"]["by_rule"]
    refused = CliRunner().invoke(app, ["bench", "static-train", "--dataset", "spider-dev"])
    assert refused.exit_code == 2 and "training questions only" in refused.output
