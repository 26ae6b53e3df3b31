"""The execution-accuracy evaluator of ``sqlmend eval`` and of every benchmark: EX under the set and
ordered rules, paired fixed/regressed reports, detection and refinement metrics, gold suspects.

Datasets and prediction files are read by :mod:`sqlmend.data`. The API ``sqlmend eval`` and the benchmarks call::

    from sqlmend.evaluation import evaluate, compare, paired_markdown
    from sqlmend.data import load_dataset, load_predictions
    ds = load_dataset("spider-dev")                    # or "spider-train", "bird-dev", a task file
    before = evaluate(ds, load_predictions("before.sql", ds), timeout=30, workers=2)
    after = evaluate(ds, corrected_sql_by_question_id)
    print(paired_markdown(compare(before, after, suspect_ids=suspects)))
    with QueryPool(workers=2, timeout=30) as pool:     # several files: one start-up of the workers
        before, after = (evaluate(ds, p, timeout=30, pool=pool) for p in (preds_a, preds_b))
"""

from sqlmend.evaluation.compare import PairedReport, PairedSlice, compare
from sqlmend.evaluation.evaluate import VERDICTS, EvalReport, EvalSummary, QuestionResult, evaluate
from sqlmend.evaluation.executor import QueryPool
from sqlmend.evaluation.metrics import (Confusion, DetectionMetrics, RefinementMetrics, detection_metrics,
                                   labels_from_report, refinement_metrics)
from sqlmend.evaluation.report import (detection_markdown, eval_markdown, paired_markdown, refinement_markdown,
                                  write_json, write_markdown)

__all__ = [
    "VERDICTS", "Confusion", "DetectionMetrics", "EvalReport", "EvalSummary", "PairedReport", "PairedSlice",
    "QueryPool", "QuestionResult", "RefinementMetrics", "compare", "detection_markdown", "detection_metrics",
    "eval_markdown", "evaluate", "labels_from_report", "paired_markdown", "refinement_markdown",
    "refinement_metrics", "write_json", "write_markdown",
]
