"""Benchmark data: named datasets and task files, prediction files, the seeded sample, Spider's hardness.

What the batch runner (:mod:`sqlmend.batch`), the review pages and the benchmarks read::

    from sqlmend.data import load_dataset, load_predictions
    ds = load_dataset("spider-dev")                    # or "spider-train", "bird-dev", a task file
    preds = load_predictions("before.sql", ds)         # {question_id: sql}; spider, bird or jsonl
    tasks = ds.with_sql(preds)                         # the tasks with the predictions as their SQL
"""

from sqlmend.data.datasets import NAMED, Dataset, Label, load_dataset, read_tasks, write_jsonl, write_tasks
from sqlmend.data.hardness import hardness
from sqlmend.data.predictions import load_predictions, write_predictions
from sqlmend.data.sampling import choose, seeded_sample

__all__ = [
    "NAMED", "Dataset", "Label", "choose", "hardness", "load_dataset", "load_predictions", "read_tasks",
    "seeded_sample", "write_jsonl", "write_predictions", "write_tasks",
]
