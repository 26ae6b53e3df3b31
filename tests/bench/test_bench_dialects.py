"""`sqlmend bench dialects` on a few real Spider questions: the variants, their outcomes, the refusals."""

from __future__ import annotations

import random

from typer.testing import CliRunner

from sqlmend.bench.dialects import MEASURED, bench_dialects, markdown, precision_record
from sqlmend.cli import app
from sqlmend.db import connect
from sqlmend.synth.dialects import KINDS, variants


def test_variants_of_a_gold(spider_db):
    gold = "SELECT Name FROM singer WHERE Age > 30 ORDER BY Age DESC LIMIT 2"
    with connect(str(spider_db("concert_singer"))) as db:
        made = variants(gold, db, random.Random(0))
        again = variants(gold, db, random.Random(0))
    assert made == again  # seeded
    kinds = {v.kind: v for v in made}
    assert kinds["TOP"].sql == "SELECT TOP 2 Name FROM singer WHERE Age > 30 ORDER BY Age DESC"
    assert kinds["FETCH FIRST"].sql.endswith("ORDER BY Age DESC FETCH FIRST 2 ROWS ONLY")
    assert kinds["UCASE"].sql.startswith("SELECT UCASE(Name)") and kinds["UCASE"].reference.startswith(
        "SELECT UPPER(Name)")
    # a flag column of the table the gold reads: the reference binds 'T' or 'F', the variant writes a boolean
    flag = kinds["TRUE/FALSE"]
    assert "Is_male = TRUE" in flag.sql or "Is_male = FALSE" in flag.sql
    assert kinds["fence sql"].sql == f"```sql\n{gold};\n```" and kinds["fence sql"].reference == gold
    assert "DELETE FROM" in kinds["raw write"].sql
    assert {v.family for v in made} == set(KINDS)


def test_a_small_run_restores_and_refuses(spider_dev):
    report = bench_dialects(spider_dev, "sqlite", questions=3, per_kind=1, seed=0, measure=True)
    raw = report.family("raw")
    assert raw["restored"] == raw["cases"] - raw["reference_fails"] > 0
    assert report.kinds["raw write"]["refused"] == report.kinds["raw write"]["cases"]
    total = report.total()
    assert total["wrong_rewritten"] == 0
    table = markdown(report)
    assert "| **all** |" in table and "refused (EX03), as they must be" in table
    record = precision_record(report, "cmd")
    assert set(record) == set(MEASURED) and all(r["measured_by"] == "bench dialects" for r in record.values())


def test_precision_is_measured_on_training_data_only():
    r = CliRunner().invoke(app, ["bench", "dialects", "--dataset", "spider-dev", "--write-precision"])
    assert r.exit_code == 2 and "training" in r.output
