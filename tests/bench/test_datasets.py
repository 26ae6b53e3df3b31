"""Dataset and prediction readers/writers: Spider, BIRD, NL2SQL-Bugs, sqlmend JSONL."""

from __future__ import annotations

import json

import pytest

from sqlmend.data import Dataset, load_dataset, load_predictions, read_tasks, write_predictions, write_tasks
from sqlmend.errors import DatasetError


def test_spider_dev(spider_dev, spider_dir):
    assert len(spider_dev) == 1034 and spider_dev.ids[:3] == ["0", "1", "2"]
    first = spider_dev.task("0")
    assert first.db_id == "concert_singer" and first.gold.startswith("SELECT") and first.sql == ""
    assert spider_dev.db_path("concert_singer") == spider_dir / "database/concert_singer/concert_singer.sqlite"
    assert spider_dev.db_path("wta_1") is None
    assert sum(t.db_id == "wta_1" for t in spider_dev) == 62


def test_unknown_dataset_and_data_root(tmp_path):
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("spider-test")
    with pytest.raises(DatasetError, match="bird"):
        load_dataset("bird-dev", data_root=tmp_path)


BIRD = [{"question_id": 0, "db_id": "california_schools", "question": "How many?", "evidence": "e0",
         "SQL": "SELECT count(*) FROM schools", "difficulty": "simple"},
        {"question_id": 1, "db_id": "financial", "question": "Which?", "evidence": "",
         "SQL": "SELECT a FROM b", "difficulty": "challenging"}]


def test_bird_tasks_and_predictions(tmp_path):
    (tmp_path / "bird" / "dev").mkdir(parents=True)
    (tmp_path / "bird" / "dev" / "dev.json").write_text(json.dumps(BIRD))
    ds = load_dataset("bird-dev", data_root=tmp_path)
    assert ds.ids == ["0", "1"] and ds.task("0").evidence == "e0" and ds.task("1").difficulty == "challenging"
    pred = tmp_path / "predict_dev.json"
    pred.write_text(json.dumps({"0": "SELECT 1\t----- bird -----\tcalifornia_schools",
                                "1": "SELECT 2\t----- bird -----\tfinancial"}))
    assert load_predictions(pred, ds) == {"0": "SELECT 1", "1": "SELECT 2"}
    pred.write_text(json.dumps({"0": "SELECT 1\t----- bird -----\tfinancial", "1": "x"}))
    with pytest.raises(DatasetError, match="key '0' names database 'financial'"):
        load_predictions(pred, ds)
    pred.write_text(json.dumps({"0": "SELECT 1"}))
    with pytest.raises(DatasetError, match="key 1 is missing"):
        load_predictions(pred, ds)


def test_nl2sql_bugs_labels(tmp_path):
    items = [{"id": 7, "question": "q", "evidence": "ev", "sql": "SELECT 1", "db_id": "d", "label": True,
              "error_types": []},
             {"id": 8, "question": "q2", "sql": "SELECT 2", "db_id": "d", "label": "incorrect",
              "error_types": [{"error_type": "Attribute-related Errors", "sub_error_type": "x"}]}]
    path = tmp_path / "bugs.json"
    path.write_text(json.dumps(items))
    tasks, labels = read_tasks(path)
    assert [t.question_id for t in tasks] == ["7", "8"] and tasks[1].sql == "SELECT 2"
    assert labels["7"].correct and labels["8"].error_types == ["Attribute-related Errors"]
    out = tmp_path / "bugs.jsonl"
    write_tasks(out, Dataset(name="b", tasks=tasks, labels=labels))
    tasks2, labels2 = read_tasks(out)
    assert tasks2 == tasks and labels2 == labels


def test_spider_lines_must_match_the_dataset(spider_dev, tmp_path):
    short = tmp_path / "short.sql"
    short.write_text("SELECT 1\n" * 1033)
    with pytest.raises(DatasetError, match="1033 lines.*line 1034, question_id 1033"):
        load_predictions(short, spider_dev)
    long = tmp_path / "long.sql"
    long.write_text("SELECT 1\n" * 1035)
    with pytest.raises(DatasetError, match=r"long.sql:1035: more predictions"):
        load_predictions(long, spider_dev)


def test_jsonl_predictions_name_the_bad_record(spider_dev, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"question_id": "0", "sql": "SELECT 1"}\n{"question_id": "5000", "sql": "x"}\n')
    with pytest.raises(DatasetError, match="record 2: question_id '5000'"):
        load_predictions(path, spider_dev)


def test_a_spider_gold_file_reads_as_predictions(spider_dev, spider_dir):
    # dev_gold.sql is "SQL<TAB>db_id" per line: the database name is dropped, not read as SQL
    preds = load_predictions(spider_dir / "dev_gold.sql", spider_dev)
    assert preds == {t.question_id: t.gold.strip() for t in spider_dev.tasks}
    assert not any("\t" in sql for sql in preds.values())


@pytest.mark.parametrize("fmt", ["spider", "bird", "jsonl"])
def test_prediction_formats_round_trip(spider_dev, pred_dir, tmp_path, fmt):
    original = load_predictions(pred_dir / "din-sql_gpt-4.sql", spider_dev)
    out = tmp_path / f"p.{ {'spider': 'sql', 'bird': 'json', 'jsonl': 'jsonl'}[fmt] }"
    assert write_predictions(out, original, spider_dev, fmt) == 1034
    assert load_predictions(out, spider_dev) == original


def test_spider_task_file_converts_to_jsonl_and_back(spider_dir, tmp_path):
    tasks, _ = read_tasks(spider_dir / "dev.json")
    ds = Dataset(name="dev", tasks=tasks)
    write_tasks(tmp_path / "dev.jsonl", ds)
    again, _ = read_tasks(tmp_path / "dev.jsonl")
    assert again == tasks
    write_tasks(tmp_path / "dev_spider.json", ds, "spider")
    assert read_tasks(tmp_path / "dev_spider.json")[0] == tasks


def test_a_malformed_jsonl_line_is_left_out_and_the_rest_is_read(tmp_path, spider_dir, capsys):
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(
        json.dumps({"question_id": "a", "db_id": "concert_singer", "question": "q", "sql": "SELECT 1"}) + "\n"
        + '{"question_id": "b", "db_id": \n'
        + json.dumps({"question_id": "c", "db_id": "concert_singer", "question": "q", "sql": "SELECT 2"}) + "\n")
    ds = load_dataset(str(tasks_file), db_root=spider_dir / "database")
    assert [t.question_id for t in ds.tasks] == ["a", "c"]
    assert "tasks.jsonl:2: not valid JSON" in capsys.readouterr().err
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"question_id": "a", "sql": "SELECT 1"}) + "\n[1, 2]\n")
    # the question whose line was unreadable gets no SQL: an error for that item alone
    assert load_predictions(preds, ds) == {"a": "SELECT 1", "c": ""}
    assert "preds.jsonl:2: expected a JSON object" in capsys.readouterr().err
    # the prediction of the task whose line was unreadable is left out with a warning, not the batch
    preds.write_text("".join(json.dumps({"question_id": q, "sql": "SELECT 1"}) + "\n" for q in "abc"))
    assert load_predictions(preds, ds) == {"a": "SELECT 1", "c": "SELECT 1"}
    assert "record 2: question_id 'b' is not in" in capsys.readouterr().err
