"""Train-side check of the search's rule for a query the engine refuses (docs/benchmarks.md).

Golds of Spider-TRAIN questions with a join, on the feature verifier's held-out databases, are made to
fail the way real systems' SQL fails: every column left unqualified (ambiguous), or the last join
dropped as well (no such column). The search stage then repairs each failing one, with
``failed_choice=verifier`` and ``=minimal``; the script counts the replacements that return the
gold's rows.

    python scripts/failing_on_train.py [QUESTIONS]     # 300: about 5 minutes on 2 cores
"""
import sys
from sqlmend.bench import load_dataset
from sqlmend.bench.sampling import seeded_sample
from sqlmend import sql as sqlmod
from sqlmend.sql import ast, kept_share
from sqlmend.search import train as tr
from sqlmend.search.engine import result_key
from sqlmend.search.stage import SearchStage
from sqlmend.stage import RunSettings, StageContext, refused_by_engine
from sqlmend.types import Task

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
ds = load_dataset("spider-train")
tasks = [t for t in ds.tasks if tr.held_out(t.db_id, 0.2) and t.gold and " join " in t.gold.lower()
         and ds.db_path(t.db_id) is not None]
tasks = seeded_sample(tasks, N, 7)
stage = SearchStage.from_config({"failed_choice": "verifier"}, RunSettings(timeout=5))
stage_min = SearchStage.from_config({"failed_choice": "minimal"}, RunSettings(timeout=5))

def variants(gold):
    out = []
    try:
        t = sqlmod.parse(gold)
    except Exception:
        return out
    u = t.copy()
    for c in u.find_all(ast.Column):
        if c.table:
            c.set("table", None)
    out.append(("unqualified", sqlmod.render(u)))
    d = t.copy()
    joins = list(d.find_all(ast.Join))
    if joins:
        joins[-1].pop()
        for c in d.find_all(ast.Column):
            if c.table:
                c.set("table", None)
        out.append(("join dropped", sqlmod.render(d)))
    return out

rows = []
with ds.databases() as conn:
    for task in tasks:
        db = conn(task.db_id)
        try:
            gk = result_key(db.execute(task.gold, timeout=10, max_rows=2000))
        except Exception:
            continue
        for kind, v in variants(task.gold):
            try:
                db.execute(v, timeout=5, max_rows=2000)
                continue  # runs: not a failing original
            except Exception as exc:
                pass
            t = Task(**{**task.to_dict(), "sql": v})
            ctx = StageContext(task=t, db=db, sql=v, run=RunSettings(timeout=5))
            if not refused_by_engine(ctx.execute()[1]):
                continue
            trace, found = stage.examine(ctx)
            cands = found.candidates if found else []
            hit = [c for c in cands if result_key(c.result) == gk]
            top = max(cands, key=lambda c: c.score or 0.0) if cands else None
            minimal = max(cands, key=lambda c: (round(kept_share(v, c.sql), 3), c.score or 0.0)) if cands else None
            ctx2 = StageContext(task=t, db=db, sql=v, run=RunSettings(timeout=5))
            tr2 = stage_min.run(ctx2)
            def ok(trace):
                if not (trace.verdict and trace.verdict.accepted):
                    return False
                try:
                    return result_key(db.execute(trace.verdict.sql, timeout=5, max_rows=2000)) == gk
                except Exception:
                    return False
            rows.append({"kind": kind, "n": len(cands), "reach": bool(hit), "stage_verifier": ok(trace),
                         "stage_minimal": ok(tr2),
                         "top": bool(top) and result_key(top.result) == gk,
                         "minimal": bool(minimal) and result_key(minimal.result) == gk,
                         "accepted": bool(trace.verdict and trace.verdict.accepted)})
for kind in ("unqualified", "join dropped", None):
    r = [x for x in rows if kind is None or x["kind"] == kind]
    if not r: continue
    print(kind or "all", "failing", len(r), "with candidates", sum(x["n"] > 0 for x in r), "reach", sum(x["reach"] for x in r),
          "fixed by verifier's first", sum(x["top"] for x in r), "by minimal repair", sum(x["minimal"] for x in r),
          "accepted", sum(x["accepted"] for x in r),
          "| stage fixes: failed_choice=verifier", sum(x["stage_verifier"] for x in r),
          "failed_choice=minimal", sum(x["stage_minimal"] for x in r))
