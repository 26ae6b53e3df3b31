"""``sqlmend bench static-train``: the static stage's value fixes on Spider TRAIN golds broken the way
the rules claim to repair (:mod:`sqlmend.synth.misplaced`: a literal moved to another text column of
its table, for VL07; its letter case changed, for VL01).

Only a broken query whose rows differ from the gold's counts. The static stage alone runs on each;
its accepted rewrite returns the gold's rows, or other rows (a rewrite that is wrong), or there is
none. The rules' own precision is measured on the five prediction files (``sqlmend bench static``);
this is the check on data those measurements never saw.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from sqlmend.errors import SqlmendError
from sqlmend.rules.stage import StaticStage
from sqlmend.search.engine import result_key
from sqlmend.stage import RunSettings, StageContext
from sqlmend.synth.misplaced import KINDS, variants
from sqlmend.types import Task


def bench_static_train(ds: Any, questions: int = 2500, seed: int = 0, timeout: float = 10.0,
                       progress: Callable[[], None] | None = None) -> dict[str, Any]:
    """Counts per kind of break: ``broken``, ``gold_rows``, ``other_rows``, ``kept`` and, per rule code
    whose strict fix was applied, ``by_rule`` (``{code: {"gold_rows": n, "other_rows": n}}``);
    ``other`` lists the first 20 wrong rewrites. ``questions`` of ``ds``'s tasks are drawn with ``seed``."""
    rng = random.Random(seed)
    run = RunSettings(timeout=timeout)
    static = StaticStage(run=run)
    report: dict[str, Any] = {k: {"broken": 0, "gold_rows": 0, "other_rows": 0, "kept": 0, "by_rule": {}}
                              for k in KINDS}
    report["other"] = []
    tasks = list(ds.tasks)
    rng.shuffle(tasks)
    with ds.databases() as conn:
        for task in tasks[:questions]:
            if progress:
                progress()
            db = conn(task.db_id)
            if db is None:
                continue
            breaks = variants(task.gold, db.schema(), rng)
            try:
                gold = result_key(db.execute(task.gold, timeout=timeout, max_rows=2000)) if breaks else None
            except SqlmendError:
                continue
            for kind, broken in breaks:
                try:
                    if result_key(db.execute(broken, timeout=timeout, max_rows=2000)) == gold:
                        continue
                except SqlmendError:
                    continue
                c = report[kind]
                c["broken"] += 1
                t = Task(**{**task.to_dict(), "sql": broken})
                trace = static.run(StageContext(task=t, db=db, sql=broken, run=run))
                if trace.verdict is None or not trace.verdict.accepted:
                    c["kept"] += 1
                    continue
                try:
                    same = result_key(db.execute(trace.verdict.sql, timeout=timeout, max_rows=2000)) == gold
                except SqlmendError:
                    same = False
                c["gold_rows" if same else "other_rows"] += 1
                if not same and len(report["other"]) < 20:
                    report["other"].append({"question_id": task.question_id, "kind": kind, "broken": broken,
                                            "rewrite": trace.verdict.sql})
                for f in trace.findings:
                    if f.severity == "strict" and f.fixes:
                        r = c["by_rule"].setdefault(f.code, {"gold_rows": 0, "other_rows": 0})
                        r["gold_rows" if same else "other_rows"] += 1
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table, a row per kind of break."""
    lines = ["| break | broken | rewrite returns the gold's rows | rewrite returns other rows | left as it was | "
             "by rule (gold's rows / other rows) |", "| --- | ---: | ---: | ---: | ---: | --- |"]
    for kind in KINDS:
        c = report[kind]
        rules = ", ".join(f"{code} {v['gold_rows']} / {v['other_rows']}" for code, v in sorted(c["by_rule"].items()))
        lines.append(f"| {kind} | {c['broken']} | {c['gold_rows']} | {c['other_rows']} | {c['kept']} | {rules} |")
    return "\n".join(lines)
