"""A system's history adapts the search (issue 28): fit it (``memory build``), measure it (``bench history``).

On MIRA's split (:mod:`sqlmend.data.split`, twins kept together) of one
prediction file, every question runs the static stage and then the search on
every query the adaptation may search (:func:`collect`: flagged, or the verifier's
score of the original below the highest ``suspect_below`` it may pick), once. From those searches:

* the adaptation (:mod:`sqlmend.search.adaptation`) is fitted on the history
  part's searches, a candidate right when it returns the gold's rows (the
  confirmed correction), every change of a correct history prediction wrong;
* the test part is decided four ways - static+search as shipped (the unflagged
  queries searched only below the shipped ``suspect_below``), + the memory items
  built from the same history, + the adapted decision, and all - each rewrite
  through the guard, and each paired with static alone (fixed / regressed / ΔEX,
  all and gold-clean);
* the oracle: test questions still wrong after static where some candidate returns
  the gold's rows (the headroom of any chooser);
* seconds to fit (the history's searches and the fit) and the adaptation's ms per
  searched test query;
* a learning curve: the adaptation fitted on histories of 10 / 25 / 50 %, measured
  on the test part of the 50 % split (which none of the histories touch).

Searching the file once lets the four ways and the curve share the
candidates; the search is deterministic (its budget counts work), so they are the
candidates the stage finds online.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from sqlmend.data.split import Split, gold_key, history_twins, split_tasks
from sqlmend.rules.stage import StaticStage
from sqlmend.search import adaptation as adapt
from sqlmend.search.history import Record, after_static_stage, collect, fit_records
from sqlmend.search.stage import SearchStage
from sqlmend.stage import RunSettings
from sqlmend.types import Task

#: History fractions of the learning curve.
CURVE = (0.1, 0.25, 0.5)


def decide(records: dict[str, Record], ids: list[str], a: adapt.Adaptation | None, shipped_below: float,
           base: dict[str, str] | None = None) -> tuple[dict[str, str], list[float]]:
    """The SQL of each test question as the stage decides it: with ``a``, the unflagged queries are searched
    below its ``suspect_below`` too; the shipped decision first and, where it keeps the original, the
    adaptation's choice through the guard (``a`` None: shipped only). ``base``: a question's SQL when
    nothing replaces it (default: after static). Also returns the adaptation's seconds per decision."""
    below = shipped_below if a is None else max(shipped_below, a.suspect_below)
    out, secs = {}, []
    for q in ids:
        rec = records[q]
        out[q] = sql = (base or {}).get(q, rec.after_static)
        o = rec.observation
        if sql != rec.after_static or o is None or not (rec.flags or o.original_score < below):
            continue  # a memory rewrite is kept (the search ran on the static output here), or not searched
        if rec.shipped_sql is not None:
            out[q] = rec.shipped_sql
            continue
        if a is None or o.shipped:
            continue
        start = time.perf_counter()
        pick, _ = a.choose(o)
        secs.append(time.perf_counter() - start)
        if pick is not None:
            verdict = rec.context().guard(rec.top[pick])
            if verdict.accepted:
                out[q] = verdict.sql
    return out, secs


def memory_rewrites(ds: Any, preds: dict[str, str], split: Split, records: dict[str, Record], folder: Path,
                    workers: int = 1) -> dict[str, str]:
    """The memory stage's accepted rewrites of the test part (memory built from the history, no model)."""
    from sqlmend.bench.memory import build_all, history_cases
    from sqlmend.memory.stage import MemoryStage

    build_all(ds, history_cases(ds, preds, split, workers, False), folder, None, fresh=True, progress=False)
    stage = MemoryStage(MemoryStage.Settings(store=str(folder)))
    out = {}
    for q in split.test:
        rec = records.get(q)
        if rec is None or rec.context() is None:
            continue
        trace = stage.run(rec.context())
        if trace.verdict is not None and trace.verdict.accepted:
            out[q] = trace.verdict.sql
    return out


def write_cache(path: Path, records: dict[str, Record], seconds: float) -> None:
    """Keep the searches of a file (without their contexts) for :func:`read_cache`."""
    import pickle

    path.parent.mkdir(parents=True, exist_ok=True)
    kept = {q: replace(r, ctx=None, rebuild=None) for q, r in records.items()}
    path.write_bytes(pickle.dumps({"records": kept, "search_history_seconds": seconds}))


def read_cache(path: Path, ds: Any, preds: dict[str, str], conn: Callable[[str], Any],
               timeout: float = 10.0) -> tuple[dict[str, Record], float]:
    """The searches :func:`write_cache` kept; each context is rebuilt (static again) when a decision needs it."""
    import pickle

    d = pickle.loads(path.read_bytes())
    static = StaticStage(run=RunSettings(timeout=timeout))
    for q, rec in d["records"].items():
        task = ds.task(q)
        if rec.observation is not None and not rec.observation.db_id:  # a cache of an older format
            rec.observation.db_id, rec.observation.group = task.db_id, f"{task.db_id}|{gold_key(task)}"
        rec.rebuild = (lambda t=task: after_static_stage(
            static, Task(**{**t.to_dict(), "sql": preds.get(t.question_id, "")}), conn(t.db_id)))
    return d["records"], d["search_history_seconds"]


def bench_file(ds: Any, pred: Path, *, fraction: float = 0.25, seed: int = 0, workers: int = 1,
               curve: tuple[float, ...] = CURVE, progress: Callable[[int], Callable[[], None]] | None = None,
               scratch: Path | None = None, cache: Path | None = None) -> dict[str, Any]:
    """``bench history`` on one prediction file (see the module doc). ``cache``: a file of the searches
    (written when absent, read when present: the decisions are then remade without searching again)."""
    from sqlmend.evaluation.compare import compare
    from sqlmend.evaluation.evaluate import evaluate
    from sqlmend.evaluation.executor import QueryPool
    from sqlmend.evaluation.suspects import gold_suspects
    from sqlmend.data.predictions import load_predictions

    preds = load_predictions(pred, ds)
    tasks = [t for t in ds.tasks if ds.db_path(t.db_id) is not None]
    shipped_below = SearchStage().verifier.suspect_below
    split = split_tasks(ds.tasks, fraction=fraction, seed=seed)
    with ds.databases() as conn, QueryPool(workers=workers, timeout=30) as pool:
        suspects = gold_suspects(ds, connect_db=conn)
        hist_ids = set(split.history)
        if cache is not None and cache.is_file():
            records, search_history = read_cache(cache, ds, preds, conn)
        else:
            t0 = time.perf_counter()
            records = collect([t for t in tasks if t.question_id in hist_ids], preds, conn, keep_ctx=True,
                              progress=progress(len(tasks)) if progress else None)
            search_history = time.perf_counter() - t0
            records.update(collect([t for t in tasks if t.question_id not in hist_ids], preds, conn,
                                   keep_ctx=True, progress=progress(len(tasks)) if progress else None))
            if cache is not None:
                write_cache(cache, records, search_history)
        a = fit_records(pred.stem, records, split.history, sum(q in records for q in split.history))
        fit_seconds = search_history + a.fit["seconds"]
        test = [q for q in split.test if q in records]
        static_sql = {q: records[q].after_static for q in test}
        shipped, _ = decide(records, test, None, shipped_below)
        adapted, secs = decide(records, test, a, shipped_below)
        folder = Path(scratch or "runs/bench-history") / f"memory-{pred.stem}"
        mem = memory_rewrites(ds, preds, split, records, folder, workers)
        with_mem = {**static_sql, **mem}
        shipped_mem, _ = decide(records, test, None, shipped_below, with_mem)
        all_, _ = decide(records, test, a, shipped_below, with_mem)

        test_ds = replace(ds, tasks=[ds.task(q) for q in test])

        def paired(after: dict[str, str], label: str) -> dict[str, Any]:
            return compare(before, evaluate(test_ds, after, suspect_ids=suspects, label=label, pool=pool),
                           suspect_ids=suspects).to_dict()

        before = evaluate(test_ds, static_sql, suspect_ids=suspects, label=f"{pred.stem}+static", pool=pool)
        ways = {"static+search": paired(shipped, "shipped"), "+memory": paired(shipped_mem, "memory"),
                "+adapted": paired(adapted, "adapted"), "all": paired(all_, "all")}
        wrong = [q for q in test if not records[q].original_right]
        lat = sorted(secs)
        curve_rows = []
        half = split_tasks(ds.tasks, fraction=max(curve), seed=seed) if curve else None
        for f in curve:
            sp = split_tasks(ds.tasks, fraction=f, seed=seed)
            hist = set(sp.history)
            held = [q for q in half.test if q in records and q not in hist]
            af = fit_records(pred.stem, records, sp.history, sum(q in records for q in sp.history))
            base, _ = decide(records, held, None, shipped_below)
            out, _ = decide(records, held, af, shipped_below)
            held_ds = replace(ds, tasks=[ds.task(q) for q in held])
            r = compare(evaluate(held_ds, base, suspect_ids=suspects, pool=pool),
                        evaluate(held_ds, out, suspect_ids=suspects, pool=pool), suspect_ids=suspects).to_dict()
            curve_rows.append({"fraction": f, "history": len(sp.history), "test": len(held),
                               "threshold": af.threshold, "suspect_below": af.suspect_below,
                               "fixed": len(r["all"]["fixed"]), "regressed": len(r["all"]["regressed"]),
                               "regressed_clean": len(r["without_suspects"]["regressed"]),
                               "delta_ex": r["all"]["delta_ex"]})
    return {"pred": pred.name, "history": len(split.history), "test": len(test),
            "twins": history_twins(tasks, split), "ways": ways,
            "oracle": {"wrong_after_static": len(wrong), "reachable": sum(records[q].reach for q in wrong)},
            "adaptation": {k: v for k, v in a.to_dict().items() if k != "observations"},
            "fit_seconds": round(fit_seconds, 1),
            "online_ms": {"n": len(lat), "median": round(1000 * lat[len(lat) // 2], 3) if lat else 0.0,
                          "p95": round(1000 * lat[int(0.95 * (len(lat) - 1))], 3) if lat else 0.0},
            "curve": curve_rows}


def markdown(rows: list[dict[str, Any]]) -> str:
    """The per-file table, then the learning curve."""
    lines = ["| file | test | way | all: fixed / regressed / ΔEX pp | gold-clean: fixed / regressed / ΔEX pp |",
             "| --- | ---: | --- | --- | --- |"]
    for r in rows:
        for way, p in r["ways"].items():
            a, c = p["all"], p["without_suspects"]
            lines.append(f"| {r['pred']} | {r['test']} | {way} | {len(a['fixed'])} / {len(a['regressed'])} / "
                         f"{a['delta_ex']:+.2f} | {len(c['fixed'])} / {len(c['regressed'])} / {c['delta_ex']:+.2f} |")
    lines += ["", "| file | oracle: wrong after static / a candidate has the gold's rows | adaptation: margin, "
              "threshold, suspect_below, history searched | fit s | online ms median / p95 |",
              "| --- | --- | --- | ---: | --- |"]
    for r in rows:
        a, o = r["adaptation"], r["oracle"]
        lines.append(f"| {r['pred']} | {o['wrong_after_static']} / {o['reachable']} | {a.get('margin')}, "
                     f"{a['threshold']}, {a['suspect_below']}, {a['history']['searched']} | {r['fit_seconds']} | "
                     f"{r['online_ms']['median']} / {r['online_ms']['p95']} |")
    lines += ["", "| file | history fraction | history | test (of the 50% split) | threshold | fixed / regressed "
              "(gold-clean) / ΔEX pp over static+search |", "| --- | ---: | ---: | ---: | --- | --- |"]
    for r in rows:
        for c in r["curve"]:
            lines.append(f"| {r['pred']} | {c['fraction']} | {c['history']} | {c['test']} | {c['threshold']} | "
                         f"{c['fixed']} / {c['regressed']} ({c['regressed_clean']}) / {c['delta_ex']:+.2f} |")
    return "\n".join(lines)
