"""``sqlmend bench correct``: several strategies on the same tasks, and the paired report.

Every strategy corrects the same tasks of each prediction file; the original and
corrected SQL are both executed against the gold. Per strategy and file:
fixed / regressed / ΔEX, FR and CR (ErrorLLM §4.3, from
:func:`sqlmend.evaluation.metrics.refinement_metrics`), calls, tokens and seconds per
query, with the gold-suspect questions (:mod:`sqlmend.evaluation.suspects`) counted apart.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from sqlmend.types import Correction


@dataclass
class StrategyRow:
    """One line of the paired report: one strategy on one prediction file."""

    pred: str
    strategy: str
    n: int
    before_ex: float
    after_ex: float
    fixed: int
    regressed: int
    delta_ex: float
    flagged: int
    fr: float  # fixed rate: fixed / flagged-and-wrong (ErrorLLM §4.3)
    cr: float  # corruption rate: regressed / flagged-and-correct
    changed: int
    calls_per_query: float
    tokens_per_query: float
    seconds_per_query: float
    item_errors: int
    suspects: int = 0  # questions whose gold SQL itself has a static finding
    regressed_clean: int = 0  # regressions among the other questions
    delta_ex_clean: float = 0.0  # ΔEX without the gold-suspect questions


def flagged(c: Correction) -> bool:
    """Whether a strategy acted on a task: found an error or proposed a rewrite."""
    from sqlmend import taxonomy

    known = set(taxonomy.ids())
    return any(f.error_type in known for f in c.findings) or any(s.candidate for s in c.stages)


def paired_row(pred: str, strategy: str, results: list[Correction], before: Any, after: Any,
               suspects: list[str] = ()) -> StrategyRow:
    """Pair the evaluations before/after one strategy, with FR and CR.

    Args:
        pred: the prediction file's label.
        strategy: the strategy's name.
        results: its corrections.
        before: ``EvalReport`` of the original SQL (on the same tasks).
        after: ``EvalReport`` of the corrected SQL.
        suspects: gold-suspect question ids.
    """
    from sqlmend.evaluation.compare import compare
    from sqlmend.evaluation.metrics import refinement_metrics
    from sqlmend.pipeline import summarize

    report = compare(before, after, suspects)
    paired = report.all
    m = refinement_metrics(before, after, [c.question_id for c in results if flagged(c)])
    s = summarize(results)
    return StrategyRow(
        pred=pred, strategy=strategy, n=paired.n, before_ex=round(paired.before_ex, 2),
        after_ex=round(paired.after_ex, 2), fixed=len(paired.fixed), regressed=len(paired.regressed),
        delta_ex=round(paired.delta_ex, 2), flagged=m.tp + m.fp, fr=round(100 * m.fr, 2),
        cr=round(100 * m.cr, 2), changed=s.changed, calls_per_query=round(s.calls_per_query, 3),
        tokens_per_query=round(s.tokens_per_query, 1), seconds_per_query=round(s.seconds_per_query, 4),
        item_errors=s.errors, suspects=len(report.suspect_ids),
        regressed_clean=len(report.clean.regressed), delta_ex_clean=round(report.clean.delta_ex, 2))


def markdown(rows: list[StrategyRow]) -> str:
    """The paired report as a Markdown table."""
    head = ("| predictions | strategy | n | EX before | EX after | fixed | regressed | ΔEX | flagged "
            "| FR % | CR % | calls/q | tokens/q | s/q | gold-suspect | regressed w/o suspects "
            "| ΔEX w/o suspects |\n" + "|---" * 17 + "|\n")
    return head + "".join(
        f"| {r.pred} | {r.strategy} | {r.n} | {r.before_ex:.2f} | {r.after_ex:.2f} | {r.fixed} "
        f"| {r.regressed} | {r.delta_ex:+.2f} | {r.flagged} | {r.fr:.1f} | {r.cr:.1f} "
        f"| {r.calls_per_query:.2f} | {r.tokens_per_query:.0f} | {r.seconds_per_query:.3f} "
        f"| {r.suspects} | {r.regressed_clean} | {r.delta_ex_clean:+.2f} |\n"
        for r in rows)


def bench_correct(dataset: str, preds: list[Path], strategies: list[str], config_for: Callable[[str], Any],
                  out: Path, sample: int | None = None, seed: int = 0, timeout: float = 30.0,
                  data_root: str | None = None, progress: bool = True) -> list[StrategyRow]:
    """Run every strategy on the same tasks of each file; write ``report.json`` and ``report.md`` under ``out``.

    Args:
        dataset: dataset name or task file.
        preds: prediction files (:func:`sqlmend.data.predictions.shared_prediction_files` by default
            in the command).
        strategies: strategy names.
        config_for: the pipeline configuration of a strategy.
        out: the output folder (one resumable run folder per file and strategy).
        sample: a seeded sample of N tasks per file (:func:`sqlmend.data.sampling.seeded_sample`).
        seed: the sample's seed.
        timeout: seconds per SQL execution.
        data_root: the folder holding ``spider/``.
        progress: show progress bars.

    Returns:
        One row per file and strategy.
    """
    from sqlmend.batch import run_file
    from sqlmend.evaluation.evaluate import evaluate
    from sqlmend.evaluation.suspects import gold_suspects
    from sqlmend.data.datasets import Dataset, load_dataset
    from sqlmend.data.predictions import load_predictions, sniff_pred_format
    from sqlmend.data.sampling import choose

    rows: list[StrategyRow] = []
    for path in preds:
        ds = load_dataset(dataset, data_root=data_root)
        pred = load_predictions(path, ds)
        tasks = choose(ds.with_sql(pred), None, sample, seed)
        sub = Dataset(name=f"{ds.name}-{len(tasks)}-s{seed}" if sample else ds.name,
                      tasks=[ds.task(t.question_id) for t in tasks], db_root=ds.db_root, source=ds.source)
        before = evaluate(sub, {t.question_id: t.sql for t in tasks}, timeout=timeout,
                          label=path.stem, progress=progress)
        suspects = list(gold_suspects(ds, [t.question_id for t in tasks], timeout))
        for strategy in strategies:
            results, _ = run_file(ds, pred, tasks, config_for(strategy), out / path.stem / strategy,
                                  sniff_pred_format(path), progress=progress,
                                  manifest={"dataset": dataset, "pred": str(path.resolve()), "strategy": strategy})
            after = evaluate(sub, {c.question_id: c.sql for c in results}, timeout=timeout,
                             label=f"{path.stem}+{strategy}", progress=progress)
            rows.append(paired_row(path.stem, strategy, results, before, after, suspects))
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(rows), encoding="utf-8")
    return rows
