"""Benchmarks: datasets, prediction files, the execution-accuracy evaluator, paired reports, metrics.

The API other benchmarks call::

    from sqlmend.bench import load_dataset, load_predictions, evaluate, compare, paired_markdown
    ds = load_dataset("spider-dev")                    # or "spider-train", "bird-dev", a task file
    before = evaluate(ds, load_predictions("before.sql", ds), timeout=30, workers=2)
    after = evaluate(ds, corrected_sql_by_question_id)
    print(paired_markdown(compare(before, after, suspect_ids=suspects)))
    with QueryPool(workers=2, timeout=30) as pool:     # several files: one start-up of the workers
        before, after = (evaluate(ds, p, timeout=30, pool=pool) for p in (preds_a, preds_b))
"""

from sqlmend.bench.compare import PairedReport, PairedSlice, compare
from sqlmend.bench.datasets import NAMED, Dataset, Label, load_dataset, read_tasks, write_jsonl, write_tasks
from sqlmend.bench.evaluate import VERDICTS, EvalReport, EvalSummary, QuestionResult, evaluate
from sqlmend.bench.executor import QueryPool
from sqlmend.bench.hardness import hardness
from sqlmend.bench.metrics import (Confusion, DetectionMetrics, RefinementMetrics, detection_metrics,
                                   labels_from_report, refinement_metrics)
from sqlmend.bench.predictions import load_predictions, write_predictions
from sqlmend.bench.report import (detection_markdown, eval_markdown, paired_markdown, refinement_markdown,
                                  write_json, write_markdown)

__all__ = [
    "NAMED", "VERDICTS", "Confusion", "Dataset", "DetectionMetrics", "EvalReport", "EvalSummary", "Label", "PairedReport",
    "PairedSlice", "QueryPool", "QuestionResult", "RefinementMetrics", "compare", "detection_markdown",
    "detection_metrics", "eval_markdown", "evaluate", "hardness", "labels_from_report", "load_dataset",
    "load_predictions", "paired_markdown", "read_tasks", "refinement_markdown", "refinement_metrics",
    "write_json", "write_jsonl", "write_markdown", "write_predictions", "write_tasks",
]
