"""``sqlmend bench search``: the repair search over static alone, per prediction file.

For every question: the static stage runs (strict fixes through the guard), then
the search stage on its output (with the static findings it did not fix). Per
file it reports

* candidate recall — of the predictions still wrong after static, how many
  the search reached with a candidate returning the gold's rows (over the
  searched ones and over all of them);
* selection accuracy — of the searched wrong ones with such a candidate, how
  many have one as the verifier's top choice;
* the paired report static → static+search (fixed / regressed / ΔEX, all and
  gold-clean), and how many rewrites the decision proposed and the guard took;
* the predictions the engine refuses after static (an error, not a timeout): how
  many, how many the search reached with the gold's rows, how many it fixed;
* ms per searched query (median / p95) and model calls;
* the verifier's score gaps over the original (features verifier, originals that run): for the
  wrong predictions it reached, the best right candidate's gap; for the correct ones it searched,
  the best wrong candidate's gap — how many are above 0, 0.2 and 0.4, on gold-clean questions. A
  margin can fix the first only where they stand above the second.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from sqlmend.evaluation.compare import compare
from sqlmend.evaluation.evaluate import evaluate
from sqlmend.evaluation.executor import QueryPool
from sqlmend.bench.static import latency
from sqlmend.evaluation.suspects import gold_suspects
from sqlmend.data.datasets import Dataset
from sqlmend.data.predictions import load_predictions
from sqlmend.data.sampling import seeded_sample
from sqlmend.rules.stage import StaticStage
from sqlmend.search.engine import result_key
from sqlmend.search.history import after_static_stage
from sqlmend.search.stage import SearchStage
from sqlmend.stage import RunSettings, refused_by_engine
from sqlmend.types import Task


def subset(ds: Dataset, sample: int = 0, seed: int = 0, limit: int = 0) -> Dataset:
    """The dataset restricted to the first ``limit`` questions, or a seeded sample of ``sample``."""
    tasks = [t for t in ds.tasks if ds.db_path(t.db_id) is not None]
    if limit:
        tasks = tasks[:limit]
    if sample:
        tasks = seeded_sample(tasks, sample, seed)
    return replace(ds, tasks=tasks)


def run_file(ds: Dataset, preds: dict[str, str], conn: Callable[[str], Any], stage: SearchStage,
             static: StaticStage, progress: Callable[[], None] | None = None) -> dict[str, Any]:
    """Static then search on every question of ``ds``; returns the SQL after each and per-question facts."""
    after_static, after_search, facts = {}, {}, {}
    for task in ds.tasks:
        db = conn(task.db_id)
        sql_text = preds.get(task.question_id, "")
        after_static[task.question_id] = after_search[task.question_id] = sql_text
        if db is None or not sql_text.strip():
            continue
        ctx = after_static_stage(static, Task(**{**task.to_dict(), "sql": sql_text}), db)
        after_static[task.question_id] = ctx.sql
        failing = refused_by_engine(ctx.execute()[1])
        start = time.perf_counter()
        trace, found = stage.examine(ctx)
        seconds = time.perf_counter() - start
        if trace.verdict is not None and trace.verdict.accepted:
            after_search[task.question_id] = trace.verdict.sql
        else:
            after_search[task.question_id] = ctx.sql
        fact = {"searched": trace.status == "ran", "seconds": seconds, "calls": trace.calls,
                "proposed": trace.candidate is not None,
                "accepted": bool(trace.verdict and trace.verdict.accepted), "reach": False, "top_hit": False,
                "failing": failing}
        if found is not None and found.candidates:
            try:
                gold_key = result_key(db.execute(task.gold, timeout=30, max_rows=stage.settings.max_rows))
            except Exception:  # a gold that fails here is excluded by the evaluator anyway
                gold_key = None
            hits, misses = [], []  # candidates returning the gold's rows, and the others
            for c in found.candidates:
                (hits if result_key(c.result) == gold_key else misses).append(c)
            fact["reach"] = bool(hits)
            ranked = sorted(found.candidates, key=lambda c: -(c.score or 0.0))
            fact["top_hit"] = bool(hits) and result_key(ranked[0].result) == gold_key
            fact["distinct"] = len(found.candidates)
            if found.original.score is not None and not failing:  # a failing original needs no margin
                fact["right_gap"] = gap(hits, found.original.score)
                fact["wrong_gap"] = gap(misses, found.original.score)
        facts[task.question_id] = fact
        if progress:
            progress()
    return {"static": after_static, "search": after_search, "facts": facts}


def gap(candidates: list[Any], original: float) -> float | None:
    """The best candidate's verifier score minus the original's (None: no candidate)."""
    return max((c.score or 0.0) for c in candidates) - original if candidates else None


#: The score gaps :func:`summarize` counts candidates above.
GAP_STEPS = (0.0, 0.2, 0.4)


def gaps(values: list[float]) -> dict[str, int]:
    """How many of ``values`` there are, and how many stand above each of :data:`GAP_STEPS`."""
    return {"n": len(values), **{f"above_{t:g}": sum(v > t for v in values) for t in GAP_STEPS}}


def bench_search(ds: Dataset, pred_files: list[Path], stage: SearchStage, *, timeout: float = 10.0,
                 workers: int = 2, progress: Callable[[str], Callable[[], None]] | None = None,
                 full: Dataset | None = None) -> dict[str, Any]:
    """Measure the search on every file; returns ``{"files": {stem: report}, "suspects": ...}``.

    ``ds`` may be a subset (:func:`subset`) of ``full``, the dataset the files answer.
    """
    static = StaticStage(run=RunSettings(timeout=timeout))
    files: dict[str, Any] = {}
    with ds.databases() as conn, QueryPool(workers=workers, timeout=30) as pool:
        suspects = gold_suspects(ds, timeout=timeout, connect_db=conn)
        for path in pred_files:
            preds = load_predictions(path, full or ds)
            run = run_file(ds, preds, conn, stage, static, progress(path.stem) if progress else None)
            before = evaluate(ds, run["static"], suspect_ids=suspects, label=f"{path.stem}+static", pool=pool)
            after = evaluate(ds, run["search"], suspect_ids=suspects, label=f"{path.stem}+static+search",
                             pool=pool)
            paired = compare(before, after, suspect_ids=suspects)
            files[path.stem] = summarize(run["facts"], before, paired)
    return {"files": files, "suspects": suspects}


def summarize(facts: dict[str, dict], before: Any, paired: Any) -> dict[str, Any]:
    """The per-file figures of the module doc."""
    wrong = [q for q in facts if (r := before.result(q)).scored and not r.correct]
    searched = [q for q in facts if facts[q]["searched"]]
    wrong_searched = [q for q in wrong if facts[q]["searched"]]
    reach = [q for q in wrong_searched if facts[q]["reach"]]
    secs = [facts[q]["seconds"] for q in searched]
    failing = [q for q in facts if facts[q].get("failing")]
    pair = paired.to_dict()
    fixed = set(pair["all"]["fixed"])
    clean = set(facts) - set(pair["suspect_ids"])  # the gaps count gold-clean questions
    correct = [q for q in clean if (r := before.result(q)).scored and r.correct]
    return {
        "questions": len(facts), "searched": len(searched), "wrong_after_static": len(wrong),
        "wrong_searched": len(wrong_searched), "reachable": len(reach),
        "candidate_recall_searched": len(reach) / len(wrong_searched) if wrong_searched else 0.0,
        "candidate_recall_all": len(reach) / len(wrong) if wrong else 0.0,
        "selection_accuracy": sum(facts[q]["top_hit"] for q in reach) / len(reach) if reach else 0.0,
        "proposed": sum(f["proposed"] for f in facts.values()),
        "accepted": sum(f["accepted"] for f in facts.values()),
        "model_calls": sum(f["calls"] for f in facts.values()),
        "failing": len(failing), "failing_reached": sum(facts[q]["reach"] for q in failing),
        "failing_fixed": sum(q in fixed for q in failing),
        "latency_searched": latency(secs),
        "latency_all": latency([f["seconds"] for f in facts.values()]),
        "paired": pair,
        "gaps": {"right_of_wrong": gaps([facts[q]["right_gap"] for q in wrong
                                         if q in clean and facts[q].get("right_gap") is not None]),
                 "wrong_of_correct": gaps([facts[q]["wrong_gap"] for q in correct
                                           if facts[q].get("wrong_gap") is not None])},
    }


def markdown(report: dict[str, Any]) -> str:
    """One table row per file."""
    lines = ["| file | searched | wrong searched | recall % (searched / all wrong) | selection % | "
             "proposed / accepted | all: fixed / regressed / ΔEX pp | gold-clean: fixed / regressed / ΔEX pp | "
             "failing after static: n / reached / fixed | ms median / p95 (searched) | model calls |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | ---: |"]
    for name, r in report["files"].items():
        a, c = r["paired"]["all"], r["paired"]["without_suspects"]
        lat = r["latency_searched"]
        lines.append(
            f"| {name} | {r['searched']} | {r['wrong_searched']} | {100 * r['candidate_recall_searched']:.1f} / "
            f"{100 * r['candidate_recall_all']:.1f} | {100 * r['selection_accuracy']:.1f} | "
            f"{r['proposed']} / {r['accepted']} | {len(a['fixed'])} / {len(a['regressed'])} / "
            f"{a['delta_ex']:+.2f} | {len(c['fixed'])} / {len(c['regressed'])} / {c['delta_ex']:+.2f} | "
            f"{r.get('failing', 0)} / {r.get('failing_reached', 0)} / {r.get('failing_fixed', 0)} | "
            f"{lat['median_ms']:.0f} / {lat['p95_ms']:.0f} | {r['model_calls']} |")
    steps = " / ".join(f"> {t:g}" for t in GAP_STEPS)
    lines += ["", f"Verifier score gaps over the original ({steps}), gold-clean questions whose original runs:", "",
              "| file | wrong predictions reached: n | best right candidate's gap | "
              "correct predictions searched: n | best wrong candidate's gap |",
              "| --- | ---: | --- | ---: | --- |"]
    for name, r in report["files"].items():
        row = [r["gaps"]["right_of_wrong"], r["gaps"]["wrong_of_correct"]]
        cells = [f"{x['n']} | " + " / ".join(str(x[f'above_{t:g}']) for t in GAP_STEPS) for x in row]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)
