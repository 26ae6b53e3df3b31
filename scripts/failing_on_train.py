"""Train-side check of the search's rule for a query the engine refuses (docs/benchmarks.md).

Golds of Spider-TRAIN questions with a join, on the feature verifier's held-out databases, are made to
fail the way real systems' SQL fails (:mod:`sqlmend.synth.failing`: every column left unqualified, the
last join dropped as well, or one column's qualifier swapped). As in the pipeline, the static stage runs
first (a strict fix it makes is taken, and counted apart; its findings go on to the search); the search
stage then repairs each one that still fails, with ``failed_choice=ranker`` (the default: the failing-original ranker of the weights),
``=verifier`` and ``=minimal``; the script counts the replacements that return the gold's rows.

    python scripts/failing_on_train.py [QUESTIONS] [STAGE OPTIONS AS JSON]
    python scripts/failing_on_train.py 300                          # about 5 minutes on 2 cores
    python scripts/failing_on_train.py 300 '{"expand_failing": 0}'  # without second edits of failing candidates
"""
import json
import random
import sys

from sqlmend.bench import load_dataset
from sqlmend.bench.sampling import seeded_sample
from sqlmend.search import train as tr
from sqlmend.search.engine import result_key
from sqlmend.rules.stage import StaticStage
from sqlmend.search.stage import SearchStage
from sqlmend.sql import kept_share
from sqlmend.stage import RunSettings, StageContext, refused_by_engine
from sqlmend.synth.failing import KINDS, variants
from sqlmend.types import Task

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
options = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
ds = load_dataset("spider-train")
tasks = [t for t in ds.tasks if tr.held_out(t.db_id, 0.2) and t.gold and " join " in t.gold.lower()
         and ds.db_path(t.db_id) is not None]
tasks = seeded_sample(tasks, N, 7)
CHOICES = ("ranker", "verifier", "minimal")
stages = {how: SearchStage.from_config({**options, "failed_choice": how}, RunSettings(timeout=5)) for how in CHOICES}
stage = stages["verifier"]
static = StaticStage(run=RunSettings(timeout=5))


def fixes(trace, db, gk):
    if not (trace.verdict and trace.verdict.accepted):
        return False
    try:
        return result_key(db.execute(trace.verdict.sql, timeout=5, max_rows=2000)) == gk
    except Exception:
        return False


rows, static_fixed = [], []
with ds.databases() as conn:
    for task in tasks:
        db = conn(task.db_id)
        try:
            gk = result_key(db.execute(task.gold, timeout=10, max_rows=2000))
        except Exception:
            continue
        for kind, v in variants(task.gold, random.Random(task.question_id)):
            t = Task(**{**task.to_dict(), "sql": v})

            def context():  # the static stage first, as in the pipeline
                ctx = StageContext(task=t, db=db, sql=v, run=RunSettings(timeout=5))
                st = static.run(ctx)
                if st.verdict is not None and st.verdict.accepted:
                    ctx.accept(st.verdict.sql)
                else:
                    ctx.findings.extend(st.findings)
                return ctx

            ctx = context()
            if not refused_by_engine(StageContext(task=t, db=db, sql=v, run=RunSettings(timeout=5)).execute()[1]):
                continue  # runs (or times out): not a failing original
            if ctx.sql != v:
                static_fixed.append(kind)
                if not refused_by_engine(ctx.execute()[1]):
                    continue  # the static stage's strict fix runs: the search does not see it
            trace, found = stage.examine(ctx)
            cands = found.candidates if found else []
            top = max(cands, key=lambda c: c.score or 0.0) if cands else None
            minimal = max(cands, key=lambda c: (round(kept_share(v, c.sql), 3), c.score or 0.0)) if cands else None
            rows.append({"kind": kind, "n": len(cands), "reach": any(result_key(c.result) == gk for c in cands),
                         **{f"stage_{how}": fixes(trace if how == "verifier" else stages[how].run(context()), db, gk)
                            for how in CHOICES},
                         "top": bool(top) and result_key(top.result) == gk,
                         "minimal": bool(minimal) and result_key(minimal.result) == gk,
                         "accepted": bool(trace.verdict and trace.verdict.accepted)})
print("options", options or "defaults")
print("fixed by the static stage's strict fixes (not searched):", len(static_fixed))
for kind in (*KINDS, None):
    r = [x for x in rows if kind is None or x["kind"] == kind]
    if not r:
        continue
    print(kind or "all", "failing", len(r), "with candidates", sum(x["n"] > 0 for x in r), "reach", sum(x["reach"] for x in r),
          "fixed by verifier's first", sum(x["top"] for x in r), "by minimal repair", sum(x["minimal"] for x in r),
          "accepted", sum(x["accepted"] for x in r),
          "| stage fixes:", ", ".join(f"failed_choice={how} {sum(x['stage_' + how] for x in r)}" for how in CHOICES))
