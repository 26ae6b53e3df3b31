"""bench review's review effort: wrong predictions in the first items, dataset order vs P(error) order."""

from __future__ import annotations

from types import SimpleNamespace

from sqlmend.bench.review import review_effort
from sqlmend.db import connect
from sqlmend.types import Correction, Task

RIGHT = "SELECT count(*) FROM car_makers"
WRONG = "SELECT Maker FROM car_makers WHERE Id = 999"  # no rows, a doubtful answer to a count


def _item(qid: str, sql: str, before: str):
    task = Task(qid, "car_1", "How many car makers are there?", sql, gold=RIGHT)
    return SimpleNamespace(qid=qid, before=before, task=task, db_id="car_1",
                           correction=Correction(qid, "car_1", original_sql=sql, sql=sql))


def test_ordered_by_p_error_the_wrong_ones_come_first(spider_db):
    items = [_item(f"r{i}", RIGHT, "correct") for i in range(3)] + [_item("w", WRONG, "wrong")]
    with connect(str(spider_db("car_1"))) as db:
        effort = review_effort(SimpleNamespace(items=items), lambda db_id: db, first=1)
    assert effort["items"] == 4 and effort["wrong"] == 1
    assert effort["wrong_first_dataset_order"] == 0 and effort["wrong_first_p_error_order"] == 1
