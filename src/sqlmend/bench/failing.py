"""``sqlmend bench failing``: how the search repairs originals the engine refuses, on Spider TRAIN.

Golds of training questions with a join, on the feature verifier's held-out databases, are made to
fail the way real systems' SQL fails (:mod:`sqlmend.synth.failing`: every column left unqualified,
the last join dropped as well, or one column's qualifier swapped). As in the pipeline, the static
stage runs first (a strict fix it makes is counted apart: the search never sees that query; its
findings go on to the search); the search stage then repairs each original that still fails, once
per ``failed_choice`` (``ranker``, ``verifier``, ``minimal``). A repair counts when it returns the
gold's rows.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from sqlmend.search.history import after_static_stage
from sqlmend.data.sampling import seeded_sample
from sqlmend.rules.stage import StaticStage
from sqlmend.search.engine import result_key
from sqlmend.search.stage import SearchStage
from sqlmend.search.train import held_out
from sqlmend.stage import RunSettings, StageContext, refused_by_engine
from sqlmend.synth.failing import KINDS, variants
from sqlmend.types import Task

#: The choices compared, in the report's order.
CHOICES = ("ranker", "verifier", "minimal")


def bench_failing(ds: Any, questions: int = 300, seed: int = 7, options: dict[str, Any] | None = None,
                  holdout: float = 0.2, timeout: float = 5.0,
                  progress: Callable[[], None] | None = None) -> dict[str, Any]:
    """Counts per kind of break (see the module doc): failing originals, strict static fixes, those
    searched, with a candidate, with one returning the gold's rows, and the stage's fixes per choice.

    ``ds`` must be a training set; ``questions`` of its join questions on the held-out databases
    (``holdout``, as the verifier's calibration) are drawn with ``seed``.
    """
    run = RunSettings(timeout=timeout)
    tasks = [t for t in ds.tasks if held_out(t.db_id, holdout) and t.gold and " join " in t.gold.lower()
             and ds.db_path(t.db_id) is not None]
    tasks = seeded_sample(tasks, questions, seed)
    stages = {how: SearchStage.from_config({**(options or {}), "failed_choice": how}, run) for how in CHOICES}
    static = StaticStage(run=run)
    counts = {k: dict.fromkeys(("failing", "static_fixed", "searched", "with_candidate", "reachable",
                                *(f"fixed_{how}" for how in CHOICES)), 0) for k in KINDS}
    with ds.databases() as conn:
        for task in tasks:
            if progress:
                progress()
            db = conn(task.db_id)
            try:
                gold = result_key(db.execute(task.gold, timeout=timeout * 2, max_rows=2000))
            except Exception:  # a gold that fails to run says nothing about the search
                continue
            for kind, text in variants(task.gold, random.Random(task.question_id)):
                t = Task(**{**task.to_dict(), "sql": text})
                if not refused_by_engine(StageContext(task=t, db=db, sql=text, run=run).execute()[1]):
                    continue  # runs (or times out): not a failing original
                c = counts[kind]
                c["failing"] += 1

                ctx = after_static_stage(static, t, db)  # the static stage first, as in the pipeline
                if ctx.sql != text:
                    c["static_fixed"] += 1
                    continue
                c["searched"] += 1
                for how, stage in stages.items():
                    trace, found = stage.examine(ctx if how == CHOICES[0] else after_static_stage(static, t, db))
                    if how == CHOICES[0]:
                        cands = found.candidates if found else []
                        c["with_candidate"] += bool(cands)
                        c["reachable"] += any(result_key(x.result) == gold for x in cands)
                    if trace.verdict is not None and trace.verdict.accepted:
                        try:
                            c[f"fixed_{how}"] += result_key(db.execute(trace.verdict.sql, timeout=timeout,
                                                                       max_rows=2000)) == gold
                        except Exception:
                            pass
    total = {k: sum(c[k] for c in counts.values()) for k in next(iter(counts.values()))}
    return {"questions": len(tasks), "seed": seed, "holdout": holdout, "kinds": counts, "all": total}


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table, a row per kind of break and one for all."""
    head = ("| break | failing | static stage's strict fix | searched | with a candidate | a candidate has "
            "the gold's rows | " + " | ".join(f"fixed: {how}" for how in CHOICES) + " |")
    lines = [head, "| --- " + "| ---: " * (5 + len(CHOICES)) + "|"]
    for name, c in [*report["kinds"].items(), ("all", report["all"])]:
        cells = [c["failing"], c["static_fixed"], c["searched"], c["with_candidate"], c["reachable"],
                 *(c[f"fixed_{how}"] for how in CHOICES)]
        lines.append(f"| {name} | " + " | ".join(str(v) for v in cells) + " |")
    return "\n".join(lines)
