"""``sqlmend bench schema-linking`` on a few Spider dev questions: the gold's tables and columns, the failing drafts
of a shared prediction file, recall per method and budget, and the generated schema's time row."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend.bench import schema_linking as bench
from sqlmend.cli import app
from sqlmend.db import connect


def test_the_gold_names_its_tables_and_columns(spider_db):
    with connect(spider_db("concert_singer")) as db:
        schema = db.schema()
    gold = ("SELECT T2.Name, count(*) FROM singer_in_concert AS T1 JOIN singer AS T2 "
            "ON T1.Singer_ID = T2.Singer_ID GROUP BY T2.Name")
    tables, columns = bench.gold_refs(gold, schema, "concert_singer.")
    assert tables == {"concert_singer.singer_in_concert", "concert_singer.singer"}
    assert columns == {"concert_singer.singer.name", "concert_singer.singer.singer_id",
                       "concert_singer.singer_in_concert.singer_id"}
    assert bench.gold_refs("SELECT count(*) FROM singer", schema)[1] == frozenset()  # COUNT(*): no column
    assert bench.gold_refs("SELEC nonsense", schema) is None


def test_a_failing_draft_is_a_wrong_prediction(spider_dev, pred_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SQLMEND_CACHE", str(tmp_path / "cache"))
    cases = [c for c in bench.question_cases(spider_dev, warehouse=True) if c.db_id == "concert_singer"][:12]
    drafts = bench.failing_drafts(spider_dev, cases, [pred_dir / "gpt-4_zero-shot.sql"], workers=1,
                                  dialect="postgres")
    assert drafts and all(d.source == "failing:gpt-4_zero-shot" and d.draft for d in drafts)
    assert len(drafts) < len(cases)  # most of its answers are right


def test_recall_per_method_and_budget(spider_dev, spider_db):
    import sqlmend

    cases = [c for c in bench.question_cases(spider_dev, warehouse=False) if c.db_id == "world_1"][:8]
    cases.append(bench.Case("x", "world_1", "Which languages are spoken in Aruba?",
                            frozenset({"countrylanguage"}), frozenset({"countrylanguage.language"}),
                            "SELECT languge FROM country_language", "failing:model"))
    with sqlmend.Corrector(spider_db("world_1"), stages="guard") as fixer:
        baselines = bench.Baselines(fixer.schema().tables)
        recall = bench.measure(cases, bench._methods(fixer, None, baselines, None), budgets=(256, 1024))
        whole = baselines.whole_chars()
    assert set(recall) == {"question", "failing", "failing: question alone"}
    assert set(recall["question"]) == {"schema_for", "bm25", "whole"}
    ours = recall["question"]["schema_for"]
    assert ours["1024"]["tables"] == 100.0 and ours["256"]["mean_chars"] <= 256 and ours["256"]["median_ms"] > 0
    assert recall["question"]["whole"]["256"]["columns"] < 100.0 < whole  # the whole schema does not fit 256
    assert recall["failing"]["schema_for"]["256"]["cases"] == 1
    text = "\n".join(bench.recall_table(recall, (256, 1024)))
    assert "| schema_for | question | 8 | 100.0 /" in text and "+ a failing draft" in text


def test_the_command_writes_the_report(tmp_path, monkeypatch):
    monkeypatch.setenv("SQLMEND_CACHE", str(tmp_path / "cache"))
    r = CliRunner().invoke(app, ["bench", "schema-linking", "--where", "single", "--limit", "6", "--no-embedder",
                                 "--pred", str(tmp_path / "none.sql"), "--sizes", "300", "-q", "-o", str(tmp_path)])
    assert r.exit_code == 1 and "none.sql" in r.output  # a prediction file that is not there
    r = CliRunner().invoke(app, ["bench", "schema-linking", "--where", "single", "--limit", "6", "--no-embedder",
                                 "--budgets", "512,2048", "--sizes", "300", "-q", "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["single"]["questions"] == 6 and report["sizes"][0]["tables"] == 300
    assert report["sizes"][0]["top1"] == 100.0
    assert "| schema_for | question | 6 |" in (tmp_path / "report.md").read_text()
